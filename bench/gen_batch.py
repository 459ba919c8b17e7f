"""Generation at several batch sizes, pruned or not, in one process: CPU, wall and identical rows.

The eval stage generates greedy completions in batches of ``eval.batch_size`` prompts (sorted by
prompt length), each batch dropping its finished rows (:meth:`sdk.generate.HFGenerator._pruned`).
A larger batch shares each decoding step's fixed cost (30 layers of small matmuls, Python) among more
rows. This bench generates the same prompts each ``--ways`` way (a batch size; ``g8``: batch 8 through
``generate``, finished rows kept), alternating over ``--rounds``, checks every way gives the first way's
rows (text, tokens, stop reason) and prints CPU seconds (this process, all threads) and wall per way
and their ratios against the first way. ``--temperature 0.7 --n 2`` samples as self-distillation does
(seeded: pruned sampling draws ``generate``'s samples).
Prompts: a quickstart jsonl source (``--domain basics``, ``general``) or ``--tasks RUN/tasks/tasks.jsonl --split
heldout``. No sandbox: generation only.

    nice -n 5 .venv/bin/python bench/gen_batch.py --ways 8 16 32 --limit 30
    nice -n 5 .venv/bin/python bench/gen_batch.py --ways g8 8 --temperature 0.7 --n 2 --max-new-tokens 128
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]

from bench.eval_overlap import cpu_now  # noqa: E402


def load_tasks(args, cfg) -> list:
    """The tasks to generate for, first ``--limit`` by id: ``--tasks``' ``--split``, else the
    quickstart source of ``--domain`` (read, system prompt added as the task stage does)."""
    if args.tasks:
        from sdk.tasks.taskset import TaskSet

        tasks = [t for t in TaskSet.load(args.tasks).tasks if t.split.value == args.split]
    else:
        from sdk.run.stage_tasks import with_system
        from sdk.sources import resolve_source

        src = next(s for s in cfg.sources if s.domain == args.domain)
        read = resolve_source(src.type)(src.options, cfg.base_dir, src.domain).read().tasks
        tasks = [t.with_(prompt=with_system(t.prompt, cfg.tasks.system_prompt)) for t in read]
    return sorted(tasks, key=lambda t: t.id)[: args.limit]


def one_way(gen, prompts, way: str, n: int) -> tuple[list, float, float]:
    """Rows of one way (``16``: batch 16 pruned; ``g8``: batch 8 through ``generate``), wall and CPU s."""
    gen.batch_size, gen.prune_done = int(way.lstrip("g")), not way.startswith("g")
    wall, cpu = time.perf_counter(), cpu_now()
    rows = gen(prompts, n)
    return rows, time.perf_counter() - wall, cpu_now() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=str(_HERE.parent / "examples/quickstart/config.yaml"))
    ap.add_argument("--tasks", help="a task set's tasks.jsonl (default: the quickstart's basics.jsonl)")
    ap.add_argument("--split", default="heldout", help="with --tasks: the split to generate for")
    ap.add_argument("--domain", default="basics", help="without --tasks: the quickstart source (basics, general)")
    ap.add_argument("--limit", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--ways", nargs="+", default=["8", "16"], help="batch sizes; g8: batch 8 via generate")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--n", type=int, default=1, help="samples per prompt")
    ap.add_argument("--max-new-tokens", type=int, help="default: eval.max_new_tokens")
    ap.add_argument("--save", help="write the first way's rows here (JSONL: task id, text, tokens, stop reason)")
    args = ap.parse_args()

    from sdk.config import load_config
    from sdk.generate import HFGenerator
    from sdk.models import resolve_model

    cfg = load_config(args.config)
    tasks = load_tasks(args, cfg)
    prompts = [t.prompt for t in tasks]
    gen = HFGenerator(resolve_model(cfg.model.name, cfg.model.cache_dir), None, 8,
                      args.max_new_tokens or cfg.eval.max_new_tokens, args.temperature, cfg.seed, cfg.model.dtype)
    totals = {w: [0.0, 0.0] for w in args.ways}
    first = None
    for r in range(args.rounds):
        for w in args.ways if r % 2 == 0 else list(reversed(args.ways)):
            rows, wall, cpu = one_way(gen, prompts, w, args.n)
            first = rows if first is None else first
            same = sum(x == y for x, y in zip(rows, first))
            totals[w][0] += wall
            totals[w][1] += cpu
            print(f"round {r} way {w}: wall {wall:.1f} s, CPU {cpu:.1f} s, rows as {args.ways[0]}: "
                  f"{same}/{len(rows)} prompts", flush=True)
    if args.save:
        Path(args.save).write_text("".join(json.dumps({"task_id": t.id, "text": x, "tokens": n, "stop": why}) + "\n"
                                           for t, row in zip(tasks, first) for x, n, why in row))
    tokens = sum(n for row in first for _, n, _ in row)
    base_wall, base_cpu = totals[args.ways[0]]
    print(f"{len(prompts)} prompts x {args.n}, {tokens} tokens per way")
    for w, (wall, cpu) in totals.items():
        print(f"way {w}: wall {wall:.1f} s ({wall / base_wall:.2f}), CPU {cpu:.1f} s ({cpu / base_cpu:.2f})")


if __name__ == "__main__":
    main()
