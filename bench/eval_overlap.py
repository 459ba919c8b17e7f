"""The eval path with and without scoring overlapped with generation, in one process.

:func:`sdk.eval.run.evaluate` scores batch i in a background thread while batch i+1 is generated
(``overlap=True``, the default) instead of one after the other. This bench runs the eval stage's
own single-turn path (:class:`sdk.generate.HFGenerator` greedy at ``eval.max_new_tokens``,
``eval.batch_size``, the tiered reward on the config's sandbox) over the same tasks both ways,
alternating (off, on, off, on with ``--rounds 2``), checks that the rows are identical (completions,
rewards, statuses, stop reasons) and prints wall and CPU (this process and its sandbox children)
per way and their ratios. Wall ratios on a shared machine say little (other jobs take the idle
cores); CPU shows whether overlap costs CPU (thread contention).
Tasks: the quickstart's OOD split (``basics.jsonl``, no task stage needed) or ``--tasks
RUN/tasks/tasks.jsonl --split heldout``. No result cache between ways (a fresh sandbox each).

    nice -n 10 .venv/bin/python bench/eval_overlap.py --limit 16
    nice -n 10 .venv/bin/python bench/eval_overlap.py --limit 8 --batch 4 --max-new-tokens 96   # a busy machine
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]


def load_tasks(args, cfg) -> list:
    """The tasks to evaluate, first ``--limit`` by id."""
    if args.tasks:
        from sdk.tasks.taskset import TaskSet

        tasks = [t for t in TaskSet.load(args.tasks).tasks if t.split.value == args.split]
    else:
        from sdk.run.stage_tasks import with_system
        from sdk.sources import resolve_source

        src = next(s for s in cfg.sources if s.domain == "basics")
        read = resolve_source(src.type)(src.options, cfg.base_dir, src.domain).read().tasks
        tasks = [t.with_(prompt=with_system(t.prompt, cfg.tasks.system_prompt)) for t in read]
    return sorted(tasks, key=lambda t: t.id)[: args.limit]


def cpu_now() -> float:
    """CPU seconds of this process and its waited-for children."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def one_way(cfg, tasks, gen, overlap: bool) -> tuple[list, float, float]:
    """Rows of one evaluation (fresh sandbox, no cache), wall and CPU seconds."""
    from sdk.eval.run import evaluate
    from sdk.rewards.tiered import score_batch
    from sdk.sandbox import make_sandbox

    wall, cpu = time.perf_counter(), cpu_now()
    sandbox = make_sandbox(cfg.sandbox.model_copy(update={"cache": False}))
    try:
        rows = evaluate(tasks, gen, lambda ts, cs: score_batch(ts, cs, sandbox, cfg.reward), "base",
                        cfg.eval.n_samples, progress=False, batch_size=cfg.eval.batch_size, overlap=overlap)
    finally:
        sandbox.close()  # its warm servers are reaped here: their CPU counts from now on
    return rows, time.perf_counter() - wall, cpu_now() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=str(_HERE.parent / "examples/quickstart/config.yaml"))
    ap.add_argument("--tasks", help="a task set's tasks.jsonl (default: the quickstart's basics.jsonl)")
    ap.add_argument("--split", default="heldout", help="with --tasks: the split to evaluate")
    ap.add_argument("--limit", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--batch", type=int, help="prompts per generate call (default: eval.batch_size)")
    ap.add_argument("--max-new-tokens", type=int, help="default: eval.max_new_tokens")
    args = ap.parse_args()

    from sdk.config import load_config
    from sdk.generate import HFGenerator
    from sdk.models import resolve_model

    sets = {"eval.batch_size": args.batch, "eval.max_new_tokens": args.max_new_tokens}
    cfg = load_config(args.config, {k: v for k, v in sets.items() if v is not None})
    tasks = load_tasks(args, cfg)
    ec = cfg.eval
    gen = HFGenerator(resolve_model(cfg.model.name, "~/.cache/tuneloop/models"), None, ec.batch_size,
                      ec.max_new_tokens, ec.temperature, cfg.seed, cfg.model.dtype)
    keep = ("completions", "rewards", "passed", "statuses", "stop_reasons", "flags")
    seen, totals = None, {False: [0.0, 0.0], True: [0.0, 0.0]}
    for rnd in range(args.rounds):
        for overlap in (False, True):
            rows, wall, cpu = one_way(cfg, tasks, gen, overlap)
            got = [tuple(getattr(r, k) for k in keep) for r in rows]
            if seen is not None and got != seen:
                raise SystemExit(f"round {rnd}, overlap={overlap}: rows differ from the first way's")
            seen = got
            totals[overlap][0] += wall
            totals[overlap][1] += cpu
            print(f"round {rnd} overlap={overlap}: {len(rows)} tasks, {sum(any(r.passed) for r in rows)} passed, "
                  f"wall {wall:.1f} s, CPU {cpu:.1f} s, load {os.getloadavg()[0]:.1f}", flush=True)
    (w0, c0), (w1, c1) = totals[False], totals[True]
    print(f"identical rows; overlap/sequential: wall {w1 / w0:.2f} ({w0:.1f} -> {w1:.1f} s), "
          f"CPU {c1 / c0:.2f} ({c0:.1f} -> {c1:.1f} s); load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
