"""What a finished run's models get wrong, read from its eval rows alone (no generation, seconds).

For each evaluated model (``RUN/eval/<label>.jsonl``: base, sft, rl_midway, rl, tuned) and split:

* pass@1 (first sample), stop reasons and generated tokens; ``--cut N`` counts the completions
  longer than ``N`` tokens and how many of them passed. Greedy decoding stopped at the closing fence
  gives the same first ``N`` tokens under ``eval.max_new_tokens: N``, so only those rows can change:
  the passes among them are the most a cut to ``N`` can lose (the speed lever of issue 15);
* failure kinds: ``house_style`` (a NameError on the library's names, e.g. ``ok``/``err``/``Result``
  used where they are not defined: the house style leaking into plain-Python prompts),
  ``wrong_result`` (the code ran, a test's assertion failed), ``exception`` (the code raised),
  ``no_code``, ``compile_error``, ``timeout``, ``flagged`` (an integrity flag), ``other``;
* flips against ``--against`` (default ``base``): every task whose first sample passed on one side
  and not on the other, by function and file, with the failing side's kind and the first line of
  its scorer detail — e.g. why the OOD split fell after training.

    .venv/bin/python bench/eval_rows.py examples/quickstart/runs/quickstart --cut 128
    .venv/bin/python bench/eval_rows.py RUN --labels sft tuned --against base --splits ood
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]

ORDER = ("base", "sft", "rl_midway", "rl", "tuned")  # rl: the RL end under its own label (eval.select)
HOUSE_NAMES = ("ok", "err", "Result", "ErrorCode", "Money", "Account", "Line")
_NAME_ERROR = re.compile(r"NameError: name '(\w+)' is not defined")


def failure_kind(row, i: int = 0) -> str:
    """The kind of sample ``i``'s failure (``pass`` when it passed); see the module docstring."""
    if row.passed[i]:
        return "pass"
    if row.flags[i]:
        return "flagged"
    status = row.statuses[i]
    detail = row.details[i] if i < len(row.details) else ""
    names = _NAME_ERROR.findall(detail)
    if names and any(n in HOUSE_NAMES for n in names):
        return "house_style"
    if status in ("no_code", "compile_error", "timeout"):
        return status
    if status == "runtime_error" or (status == "failed" and "Error" in detail and "AssertionError" not in detail):
        return "exception"
    if status == "failed":
        return "wrong_result"
    return "other"


def load(run: Path, labels: list[str]) -> dict[str, list]:
    """``{label: rows}`` for the labels whose ``eval/<label>.jsonl`` exists, in curve order."""
    from sdk.eval.records import load_rows

    found = {p.stem: p for p in (run / "eval").glob("*.jsonl") if p.stem != "reference"}
    order = [x for x in ORDER if x in found] + sorted(set(found) - set(ORDER))
    return {label: load_rows(found[label]) for label in order if not labels or label in labels}


def summary(rows_by_label: dict[str, list], splits: list[str], cut: int) -> list[str]:
    """Markdown lines: per model and split, pass@1, stop reasons, tokens, the rows over ``cut`` and
    the failure kinds."""
    out = [f"| model | split | pass@1 | stop reasons | max tokens | > {cut} tokens (passed) | failure kinds |",
           "|---|---|---|---|---|---|---|"]
    for label, rows in rows_by_label.items():
        for split in splits:
            part = [r for r in rows if r.split.value == split]
            if not part:
                continue
            stops = collections.Counter(s for r in part for s in r.stop_reasons[:1])
            over = [r for r in part if r.gen_tokens > cut]
            kinds = collections.Counter(failure_kind(r) for r in part if not r.passed[0])
            out.append(f"| {label} | {split} | {sum(r.passed[0] for r in part)}/{len(part)} | "
                       f"{_counts(stops)} | {max(r.gen_tokens for r in part)} | "
                       f"{len(over)} ({sum(r.passed[0] for r in over)}) | {_counts(kinds)} |")
    return out


def flips(rows_by_label: dict[str, list], against: str, splits: list[str], names: dict) -> list[str]:
    """One line per task whose first sample passed on exactly one side of ``against`` → label."""
    ref = {r.task_id: r for r in rows_by_label.get(against, ())}
    out = []
    for label, rows in rows_by_label.items():
        if label == against:
            continue
        for r in sorted((r for r in rows if r.split.value in splits), key=lambda r: (r.split.value, r.task_id)):
            other = ref.get(r.task_id)
            if other is None or other.passed[0] == r.passed[0]:
                continue
            lost = other.passed[0]
            failing = r if lost else other
            name = names.get(r.task_id, {})
            detail = (failing.details[0] if failing.details else "").strip().splitlines()
            where = f"{name.get('name', r.task_id)}" + (f" ({name['file']})" if name.get("file") else "")
            out.append(f"- {r.split.value} {against}→{label} {'LOST' if lost else 'gained'}: {where}: "
                       f"{failure_kind(failing)}" + (f" — {detail[-1][:160]}" if detail else ""))
    return out


def _counts(counter: collections.Counter) -> str:
    return ", ".join(f"{k} {v}" for k, v in counter.most_common()) or "–"


def main() -> None:
    """Print the summary table and the flips of one run folder."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a finished run folder (holds eval/<label>.jsonl and tasks/tasks.jsonl)")
    ap.add_argument("--labels", nargs="+", default=[], help="models to read (default: every eval rows file)")
    ap.add_argument("--splits", nargs="+", default=["heldout", "ood"])
    ap.add_argument("--against", default="base", help="the model flips are counted against")
    ap.add_argument("--cut", type=int, default=128, help="a candidate eval.max_new_tokens")
    args = ap.parse_args()
    from sdk.run.finished import task_names
    from sdk.run.layout import RunLayout

    run = Path(args.run)
    labels = sorted(set(args.labels) | {args.against}) if args.labels else []
    rows = load(run, labels)
    if not rows:
        raise SystemExit(f"{run}: no eval/<label>.jsonl: run the eval stage first")
    print("\n".join(summary(rows, args.splits, args.cut)))
    print(f"\nFlips against {args.against} (first sample):")
    print("\n".join(flips(rows, args.against, args.splits, task_names(RunLayout(run)))) or "none")


if __name__ == "__main__":
    main()
