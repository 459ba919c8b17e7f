"""Slots pinned to cores or floating, against the no-isolation floor (issue 14).

With ``sdk.sandbox.cores.PIN_SLOTS`` (off by default) the warm servers run each slot's processes on a
core of their own (:meth:`sdk.sandbox.warm.Zygote.pin`), so that a request's hand-offs between the harness, the
candidate, the server and the reset helper wake a process on the core they are on. This script
alternates, in rounds, ``floor, ours pinned, floor, ours floating, floor`` (the order of the two
swapped every other round; each run of ours against the mean of the floor runs around it, as
``bench/sandbox.py`` does) and prints the wall (exec/s) and CPU ratios ours / floor of both, as
median [min-max], with the load. Only a quiet machine gives the wall figure: under load other
processes fill the cores a hand-off leaves idle, and a pinned slot cannot move off a busy core.

    .venv/bin/python bench/sandbox_pin.py [--rounds 4] [--reps 2] [--limit N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sandbox as bench

from sdk.sandbox import cores


def main() -> None:
    """Rounds of floor / ours (pinned or floating) / floor / ours (the other) / floor; then the medians."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4, help="rounds (default 4)")
    ap.add_argument("--reps", type=int, default=2, help="times each run goes over the problems (default 2)")
    ap.add_argument("--limit", type=int, default=None, help="first N problems only")
    args = ap.parse_args()
    bench.METER = bench.CpuMeter()
    rows = bench.problems(args.limit) * max(1, args.reps)
    print(f"HumanEval canonical solutions: {len(rows)} executions per run; load before: {bench.load()}")
    got: dict[bool, list[tuple[float, float | None, float | None]]] = {True: [], False: []}
    floors = [bench.bench_floor(rows)]
    for r in range(args.rounds):
        for pinned in ((True, False) if r % 2 == 0 else (False, True)):
            cores.PIN_SLOTS = pinned
            rate, cpu = bench.bench_ours(rows, "bubblewrap")
            floors.append(bench.bench_floor(rows))
            (r0, c0), (r1, c1) = floors[-2], floors[-1]
            floor_cpu = None if c0 is None or c1 is None else (c0 + c1) / 2
            got[pinned].append((rate / ((r0 + r1) / 2), None if floor_cpu is None or not cpu else floor_cpu / cpu, cpu))
        print(f"-- round {r + 1}/{args.rounds} done, load {bench.load()}", flush=True)
    cores.PIN_SLOTS = False   # the default
    print(f"\nours / floor, median [min-max] of {args.rounds} rounds; load after: {bench.load()}")
    for pinned in (True, False):
        v = got[pinned]
        print(f"  {'pinned' if pinned else 'floating':<9} wall {bench._spread([x[0] for x in v])}   CPU {bench._spread([x[1] for x in v])}"
              f"   (ours {bench._spread([x[2] for x in v])} ms CPU/exec)")


if __name__ == "__main__":
    main()
