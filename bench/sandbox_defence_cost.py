"""What each per-request defence of the warm Python path costs, measured directly (issue 14).

``bench/sandbox.py --defences N`` switches each defence off in a whole run; on a loaded 2-core
machine its run-to-run spread (10-15 %) hides costs of a few per cent. This script measures the
defences that run in every candidate process instead, one forked child at a time, as the warm
server's children are forked: a parent running the sandbox's own interpreter
(``python3.11 -I -S -B``) that has imported the warm server's modules and recorded its chain
(``tl_guard.remember_server``) forks, for every HumanEval problem and round, one child per
variant in a rotating order, and reads each child's CPU (user + system) and minor faults from
``wait4``:

  base         fork, then exit at once
  guard        + the seccomp kill-guard (``tl_guard.protect``, the warm path)
  nodump       + ``prctl(PR_SET_DUMPABLE, 0)``
  work         compile and run prompt + solution + test + ``check(entry)`` (the floor's child)
  work+audit   + the candidate's PEP 578 audit hook (``tl_candidate.Candidate.audit``) first
  seccomp      + installing bubblewrap's seccomp program (``sdk.sandbox.seccomp``), then exit
  work+seccomp + that program installed first

Each cost is the median over problems and rounds of the paired difference (guard - base,
nodump - base, work+audit - work; bubblewrap's program is installed once per warm server, so its
per-request cost is (work+seccomp - work) - (seccomp - base): the filter run on each system call),
in microseconds of CPU and in faults. Costs overlap: the first ``ctypes`` call in a fresh process
pays for pages that a second one finds copied already (the guard and the prctl both use it).
The warm server's own per-request steps (kill and reap, the ``/tmp`` wipe and clean check) run
inside the sandbox only and are not measured here.

    .venv/bin/python bench/sandbox_defence_cost.py [--rounds 2] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sandbox as bench

from sdk.sandbox import pyruntime
from sdk.sandbox.seccomp import seccomp_bpf_path

CHILD = r"""
import ctypes, json, os, sys
sys.path.insert(0, sys.argv[1])
import math, typing, tl_candidate, tl_guard, tl_harness, tl_remote, tl_wire  # the warm server's imports
tl_guard.remember_server()
tl_guard.arm(os.getpid())   # as the warm server arms it for its supervisor: each child installs it unpatched
with open(sys.argv[2], "rb") as fh:
    SECCOMP = fh.read()
rows, rounds = json.loads(sys.stdin.read()), int(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)
VARIANTS = ("base", "guard", "nodump", "seccomp", "work", "work+audit", "work+seccomp")
r, w = os.pipe()
CAND = tl_candidate.Candidate(r, w, w)   # made in every candidate with or without the hook: made here
CAND.module = type(sys)("solution")

def seccomp():
    buf = ctypes.create_string_buffer(SECCOMP, len(SECCOMP))
    prog = tl_guard._Prog(len(SECCOMP) // 8, ctypes.addressof(buf))
    if not tl_guard._install(prog):
        os._exit(3)

def child(variant, prog):
    if variant == "guard" and not tl_guard.protect():
        os._exit(3)
    if variant == "nodump":
        libc.prctl(4, 0, 0, 0, 0)
    if variant == "work+audit":
        sys.addaudithook(CAND.audit)
    if variant in ("seccomp", "work+seccomp"):
        seccomp()
    if variant.startswith("work"):
        exec(compile(prog, "<he>", "exec"), {"__name__": "__he__"})
    os._exit(0)

out = {v: [] for v in VARIANTS}
for k in range(rounds):
    for i, prog in enumerate(rows):
        s = (i + k) % len(VARIANTS)
        for variant in VARIANTS[s:] + VARIANTS[:s]:
            pid = os.fork()
            if pid == 0:
                try:
                    child(variant, prog)
                finally:
                    os._exit(2)
            _, status, ru = os.wait4(pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit("variant %s failed on problem %d (exit %d)" % (variant, i, os.waitstatus_to_exitcode(status)))
            out[variant].append((1e6 * (ru.ru_utime + ru.ru_stime), ru.ru_minflt))
print(json.dumps(out))
"""
PAIRS = (("kill-guard (tl_guard.protect)", "guard", "base"), ("non-dumpable prctl", "nodump", "base"),
         ("audit hook (candidate)", "work+audit", "work"), ("bubblewrap seccomp program, install", "seccomp", "base"))


def _median(vals: list[float]) -> float:
    vals = sorted(vals)
    return vals[len(vals) // 2]


def main() -> None:
    """Run the child script once (all rounds), then print each defence's paired median cost."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2, help="rounds over the problems (default 2)")
    ap.add_argument("--limit", type=int, default=None, help="first N problems only")
    args = ap.parse_args()
    rows = bench.problems(args.limit)
    progs = [r["prompt"] + r["canonical_solution"] + "\n" + r["test"] + f"\ncheck({r['entry_point']})\n" for r in rows]
    python = pyruntime.process_interpreter(unprivileged=os.geteuid() == 0) or sys.executable   # as the bubblewrap backend
    print(f"{len(rows)} HumanEval problems x {args.rounds} rounds, interpreter {python}; load before: {bench.load()}")
    done = subprocess.run([python, "-I", "-S", "-B", "-c", CHILD, str(pyruntime.RUNNER_DIR), seccomp_bpf_path(),
                           str(args.rounds)], input=json.dumps(progs), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the measuring process failed: {done.stderr[-2000:]}")
    got = json.loads(done.stdout)
    for name in ("base", "work"):
        print(f"  {name:<12} median {_median([c for c, _ in got[name]]):7.0f} us CPU   {_median([f for _, f in got[name]]):5.0f} faults")
    for label, on, off in PAIRS:
        cpu = _median([a[0] - b[0] for a, b in zip(got[on], got[off])])
        flt = _median([a[1] - b[1] for a, b in zip(got[on], got[off])])
        print(f"  {label:<32} costs {cpu:+7.0f} us CPU   {flt:+5.0f} faults per request (median of paired differences)")
    per_call = _median([(a[0] - b[0]) - (c[0] - d[0]) for a, b, c, d in
                        zip(got["work+seccomp"], got["work"], got["seccomp"], got["base"])])
    print(f"  {'bubblewrap seccomp, per request':<32} costs {per_call:+7.0f} us CPU   (its system calls through the filter)")
    print(f"load after: {bench.load()}")


if __name__ == "__main__":
    main()
