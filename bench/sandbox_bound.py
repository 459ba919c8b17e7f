"""How close to the no-isolation floor two fresh processes per execution can get (issue 14).

tuneloop's warm path keeps the verdict out of the candidate's reach with two freshly forked
processes per execution: the harness (trusted: runs the test, computes the verdict) and the
candidate (runs the solution). ``bench/sandbox.py``'s floor forks one. This script measures, in
interleaved rounds on the same machine, the CPU per execution (the bench's cpuacct cgroup, which
counts every process started here) of:

  (d)   the floor: a pre-warmed parent forks one child that runs prompt + solution + test;
  (d2)  the floor plus one more fresh process per execution that does nothing: the child forks a
        grandchild that exits at once (what the second process costs by itself);
  (d2s) as (d2), the grandchild compiling and running prompt + solution first (a second
        process doing the candidate's share, nothing sent between the two: the child still
        runs everything, so this over-counts by the solution's own module code);
  (a)   ours (``bench/sandbox.py``'s run: bubblewrap, every defence on, concurrency 2);

and prints, per round and as median [min-max], (d)/(d2), (d)/(d2s) and (d)/(a). (d)/(d2) is an
upper bound of ours / floor for any design with two fresh processes per execution, before any
host, harness, wire, bubblewrap or defence cost; the gap from it to 0.7 is what all of those may
cost together.

    .venv/bin/python bench/sandbox_bound.py [--rounds 3] [--limit N] [--no-ours]
"""

from __future__ import annotations

import argparse
import json
import queue
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sandbox as bench

# One server per slot, as bench/sandbox.py's floor; argv[1] = second process per execution:
# 0 none (the floor itself), 1 a grandchild that exits at once, 2 one that runs the solution first.
SERVER = r"""
import json, os, sys
MODE = int(sys.argv[1])
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    sol, prog = json.loads(line)
    pid = os.fork()
    if pid == 0:
        try:
            if MODE:
                g = os.fork()
                if g == 0:
                    try:
                        if MODE == 2:
                            exec(compile(sol, "<sol>", "exec"), {"__name__": "__sol__"})
                        os._exit(0)
                    except BaseException:
                        os._exit(1)
            exec(compile(prog, "<he>", "exec"), {"__name__": "__he__"})
            if MODE and os.waitstatus_to_exitcode(os.waitpid(g, 0)[1]) != 0:
                os._exit(1)
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    out.write(b"%d\n" % os.waitstatus_to_exitcode(status))
    out.flush()
"""
MODES = {0: "(d)   floor: one fresh process per exec", 1: "(d2)  floor + a second fresh process (exits at once)",
         2: "(d2s) floor + a second process running the solution"}


def run_floor(rows: list[dict], mode: int) -> float | None:
    """The floor variant ``mode`` (see :data:`SERVER`) on ``rows`` with 2 slots at concurrency 2;
    prints its line and returns its CPU ms per execution (None without a CPU meter).

    Raises:
        SystemExit: a canonical solution failed (the variant is broken, not the solution)."""
    servers: queue.Queue = queue.Queue()
    procs = [subprocess.Popen([sys.executable, "-I", "-S", "-c", SERVER, str(mode)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE) for _ in range(2)]
    for p in procs:
        servers.put(p)

    def one(r: dict) -> bool:
        sol = r["prompt"] + r["canonical_solution"]
        prog = sol + "\n" + r["test"] + f"\ncheck({r['entry_point']})\n"
        p = servers.get()
        p.stdin.write((json.dumps([sol, prog]) + "\n").encode())
        p.stdin.flush()
        ok = p.stdout.readline().strip() == b"0"
        servers.put(p)
        return ok

    for r in rows[:4]:
        one(r)
    c0, t = bench._cpu(), time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        ok = sum(pool.map(one, rows))
    wall, cpu_ms = time.monotonic() - t, bench._per_exec_ms(c0, bench._cpu(), len(rows))
    for p in procs:
        p.stdin.close()
        p.wait()
    if ok != len(rows):
        raise SystemExit(f"{MODES[mode]}: {len(rows) - ok} of {len(rows)} canonical solutions failed")
    print(f"{MODES[mode]:<52} {len(rows) / wall:7.1f} exec/s   CPU "
          + ("n/a" if cpu_ms is None else f"{cpu_ms:5.2f} ms/exec"), flush=True)
    return cpu_ms


def main() -> None:
    """Rounds of d, d2, d2s, (a), d; each ratio against the mean of the two floor runs around it."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--limit", type=int, default=None, help="first N problems only")
    ap.add_argument("--no-ours", action="store_true", help="leave out (a), tuneloop's sandbox")
    args = ap.parse_args()
    bench.METER = bench.CpuMeter()
    if bench.METER.group is None:
        raise SystemExit("no cpuacct cgroup could be made (run as root on cgroup v1): this bound is a CPU figure")
    rows = bench.problems(args.limit)
    print(f"HumanEval canonical solutions: {len(rows)}; load before: {bench.load()}")
    got: dict[str, list[float]] = {"d2": [], "d2s": [], "a": []}
    for r in range(args.rounds):
        before = run_floor(rows, 0)
        d2, d2s = run_floor(rows, 1), run_floor(rows, 2)
        ours = None if args.no_ours else bench.bench_ours(rows, "bubblewrap")[1]
        floor = (before + run_floor(rows, 0)) / 2
        got["d2"].append(floor / d2)
        got["d2s"].append(floor / d2s)
        if ours:
            got["a"].append(floor / ours)
        print(f"-- round {r + 1}/{args.rounds}: floor {floor:.2f} ms; (d)/(d2) {got['d2'][-1]:.2f}   (d)/(d2s) "
              f"{got['d2s'][-1]:.2f}" + (f"   (d)/(a) {got['a'][-1]:.2f}" if ours else "") + f"   load {bench.load()}")
    spread = {k: bench._spread(v) for k, v in got.items()}
    print(f"\nCPU ratios over {args.rounds} rounds, median [min-max]; load after: {bench.load()}")
    print(f"  bound, second fresh process alone    (d)/(d2)  {spread['d2']}")
    print(f"  bound, second process runs solution  (d)/(d2s) {spread['d2s']}")
    if got["a"]:
        print(f"  ours, every defence on               (d)/(a)   {spread['a']}")
    print(f"  two fresh processes per execution cap ours / floor near (d)/(d2) = {statistics.median(got['d2']):.2f} "
          f"before any other cost; target 0.70")


if __name__ == "__main__":
    main()
