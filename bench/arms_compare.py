"""Two arms of ``bench/arms.py`` built on different task-set variants, paired task by task.

``bench/arms.py --tasks-set`` gives each prompt variant (e.g. repository context on) its own work
folder: its own task set, base rows and arms. Task ids hash the prompt, so the same function has a
different id in each folder and ``arms.py --table --against`` cannot pair across them. This pairs
rows by what stays fixed: the task's ``domain`` and ``source.locator`` (``path::function`` for a
test-suite task; the id where a source gives no locator, e.g. JSONL tasks whose prompts no variant
changes). For each split it prints pass@1 of each folder's base model and of each adapter, the
paired 95 % bootstrap interval against its own base, and B − A on the tasks both hold:

    .venv/bin/python bench/arms_compare.py /tmp/arms_def/defaults /tmp/arms_ctx/ctx \\
        --labels sft tuned --splits heldout ood validation

``validation`` rows (``arms.py --splits validation``, the split carved from train) are the ones to
choose a variant on; held-out and OOD only measure it (issue 15's honesty rule).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]


def task_keys(work: Path) -> dict[str, str]:
    """``{task id: "domain::locator"}`` for the task set of ``work`` (``work/_tasks/tasks/tasks.jsonl``).

    Raises:
        SystemExit: ``work`` has no built task set.
    """
    from sdk.tasks.taskset import TaskSet

    path = work / "_tasks" / "tasks" / "tasks.jsonl"
    if not path.is_file():
        raise SystemExit(f"{work}: no task set at {path}: run bench/arms.py with --work {work} first")
    return {t.id: f"{t.domain}::{t.source.locator or t.id}" for t in TaskSet.load(path)}


def passes(path: Path, keys: dict[str, str]) -> dict[str, float]:
    """``{task key: 1.0 if the first sample passed else 0.0}`` from one eval rows file ({} if absent)."""
    from sdk.eval.records import load_rows

    if not path.is_file():
        return {}
    return {keys.get(r.task_id, r.task_id): float(bool(r.passed and r.passed[0])) for r in load_rows(path)}


def paired(a: dict[str, float], b: dict[str, float]) -> str:
    """``b − a`` in pp over the keys both hold, with its paired 95 % bootstrap interval and n."""
    from sdk.eval.metrics import paired_over_common

    est = paired_over_common(a, b)
    return "–" if est is None else f"{est.value * 100:+.1f} ({est.low * 100:+.1f} … {est.high * 100:+.1f}, n={est.n})"


def frac(rows: dict[str, float]) -> str:
    """``passed/total`` of one rows map."""
    return f"{int(sum(rows.values()))}/{len(rows)}" if rows else "–"


def compare(arm_a: Path, arm_b: Path, labels: list[str], splits: list[str]) -> list[str]:
    """The markdown table's lines: per split, each folder's base and adapters, Δ vs own base, B − A."""
    keys = {arm_a: task_keys(arm_a.parent), arm_b: task_keys(arm_b.parent)}
    head = (f"| split | model | {arm_a.name} | {arm_b.name} | Δ {arm_a.name} vs base | Δ {arm_b.name} vs base "
            f"| {arm_b.name} − {arm_a.name} |")
    lines = [head, "|---|---|---|---|---|---|---|"]
    for split in splits:
        base = {arm: passes(arm.parent / f"base_{split}.jsonl", keys[arm]) for arm in (arm_a, arm_b)}
        lines.append(f"| {split} | base | {frac(base[arm_a])} | {frac(base[arm_b])} | | | "
                     f"{paired(base[arm_a], base[arm_b])} |")
        for label in labels:
            got = {arm: passes(arm / f"eval_{label}_{split}.jsonl", keys[arm]) for arm in (arm_a, arm_b)}
            if not any(got.values()):
                continue
            lines.append(f"| {split} | {label} | {frac(got[arm_a])} | {frac(got[arm_b])} | "
                         f"{paired(base[arm_a], got[arm_a])} | {paired(base[arm_b], got[arm_b])} | "
                         f"{paired(got[arm_a], got[arm_b])} |")
    return lines


def main() -> None:
    """Parse the command line and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("arm_a", type=Path, help="WORK/ARM of the first variant (the reference)")
    ap.add_argument("arm_b", type=Path, help="WORK/ARM of the second variant")
    ap.add_argument("--labels", nargs="+", default=["sft", "tuned"], help="adapters to compare")
    ap.add_argument("--splits", nargs="+", default=["heldout", "ood", "validation"])
    args = ap.parse_args()
    print("\n".join(compare(args.arm_a.resolve(), args.arm_b.resolve(), args.labels, args.splits)))


if __name__ == "__main__":
    main()
