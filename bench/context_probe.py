"""What repository context would show in a built task set's prompts, per token budget (no sandbox, seconds).

For the pytest-source tasks of a finished tasks stage (``RUN/tasks/tasks.jsonl``) it renders the
``repo_context`` block (:class:`connectors.suites.context.RepoContext`, examples off) at each budget
and prints, per split: tasks whose prompt would show every package definition the reference uses, those
still missing one that is not a house convention (``--conventions``: names SFT teaches anyway, e.g.
``ok``/``Result``), which names, and prompt + reference tokens against ``--max-length`` (SFT drops rows over it).
Issue 15's question: held-out prompts name record types (``Money``, ``Line``) but not their fields.

    .venv/bin/python bench/context_probe.py examples/quickstart examples/quickstart/runs/quickstart \\
        --package acme_ledger --budgets 0 100 150 300
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]


def probe(tasks, files: dict[str, str], package: str, budget: int, conventions: set[str], tokens) -> dict:
    """Counts for one budget over ``tasks`` (``tokens``: text -> token count)."""
    from connectors.suites.context import RepoContext, RepoContextOptions

    rc = RepoContext(RepoContextOptions(token_budget=budget, examples=False), files, package)
    out = [rc.add(t) for t in tasks]
    ctx = [t.metadata.get("context", {}) for t in out]
    missing = [[n for n in c.get("missing", []) if n.split(".")[0] not in conventions] for c in ctx]
    lens = [tokens("\n".join(m.content for m in t.prompt)) + tokens(t.reference or "") for t in out]
    return {"tasks": len(out), "fully_shown": sum(c.get("coverage") == 1.0 for c in ctx),
            "missing_non_convention": sum(bool(m) for m in missing),
            "names": sorted({n for m in missing for n in m}), "tokens_median": statistics.median(lens),
            "tokens_max": max(lens), "lens": lens}


def main() -> None:
    """Print one line per split and budget."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", help="the source's path (the folder holding the package)")
    ap.add_argument("run", help="a run folder with a finished tasks stage")
    ap.add_argument("--package", required=True)
    ap.add_argument("--budgets", nargs="+", type=int, default=[0, 100, 150, 300])
    ap.add_argument("--splits", nargs="+", default=["train", "heldout"])
    ap.add_argument("--conventions", nargs="+", default=["ok", "err", "Result", "ErrorCode"])
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--model", default=str(Path.home() / ".cache/tuneloop/models/smollm2-135m-instruct"))
    args = ap.parse_args()
    from transformers import AutoTokenizer

    from sdk.tasks.taskset import TaskSet

    root, tok = Path(args.root), AutoTokenizer.from_pretrained(args.model)
    files = {str(p.relative_to(root)): p.read_text() for p in (root / args.package).rglob("*.py")}
    taskset = TaskSet.load(Path(args.run) / "tasks" / "tasks.jsonl")
    for split in args.splits:
        tasks = [t for t in taskset.split(split) if t.source.connector == "pytest"]
        for budget in args.budgets:
            r = probe(tasks, files, args.package, budget, set(args.conventions), lambda s: len(tok(s)["input_ids"]))
            print(f"{split} budget {budget}: {r['tasks']} tasks, every definition shown {r['fully_shown']}, "
                  f"missing a non-convention one {r['missing_non_convention']} {r['names']}, prompt+reference "
                  f"tokens median {r['tokens_median']:.0f} max {r['tokens_max']}, "
                  f"over {args.max_length}: {sum(n > args.max_length for n in r['lens'])}")


if __name__ == "__main__":
    main()
