"""The warm server's warm-up (issue 14), split out of :mod:`tl_zygote`.

Before its first supervisor the server runs a synthetic request (constant code and test, no task's
data) through the real harness code against a forked candidate, and the candidate's side of its
calls in-process (:func:`warm_up`): Python 3.11 quickens each code object on its first executions
and builds some state lazily, so every forked supervisor and candidate inherits quickened code and
copies fewer pages.
"""

import os
import sys
import time

import tl_candidate
import tl_harness
import tl_remote
import tl_wire

RUN = "/tmp/run"

WARM_ROUNDS = 2   # measured: 2, 3 and 10 rounds saved the same faults (the per-call code runs 48 times a round)
WARM_SOURCE = "def tl_warm(a, b=0):\n    return [a, b, str(a) * 2, {'k': (a, b)}, a * 0.5, a > 3]\n"
WARM_TEST = """
def check(candidate):
    for i in range(12):
        assert candidate(i, 1.5) == [i, 1.5, str(i) * 2, {'k': (i, 1.5)}, i * 0.5, i > 3]
        assert candidate(i, b='x')[1] == 'x'
        assert abs(candidate(i)[4] - i * 0.5) < 1e-6
        assert candidate(i, [i, (i,), {i}])[3] == {'k': (i, [i, (i,), {i}])}
"""
WARM_LIMITS = {"timeout_s": 10, "cpu_s": 10, "memory_mb": 1024, "file_size_mb": 1, "open_files": 64,
               "processes": 16, "output_bytes": 1 << 16, "scratch_mb": 1}


def _warm_candidate(calls):
    """The candidate's side of ``calls`` calls of :data:`WARM_SOURCE`'s function, answered here by
    a :class:`tl_candidate.Candidate` over pipes of this process (never loaded: no limits, no
    audit hook, no guard, ``sys.modules`` untouched; the module is built directly). Returns how
    many calls were answered with a value."""
    fds = os.pipe() + os.pipe() + os.pipe()
    answered = 0
    try:
        cand = tl_candidate.Candidate(fds[0], fds[3], fds[5])
        module = type(sys)("tl_warm_up")
        exec(compile(WARM_SOURCE, "tl_warm_up.py", "exec"), module.__dict__)  # noqa: S102 - our constant source
        cand.module, handle, reader = module, cand.handle(module.tl_warm), tl_wire.Reader(fds[2])
        for i in range(calls):
            tl_wire.send(fds[1], {"op": "call", "h": handle, "args": [i, [1.5, (i,)]], "kwargs": {"d": []}})
            tl_wire.send(fds[3], cand.answer(cand.reader.recv()))
            answered += "v" in reader.recv()
    finally:
        for fd in fds:
            os.close(fd)
    return answered


def warm_up(run_dir=RUN, rounds=WARM_ROUNDS):
    """Run a synthetic ``script`` request (the constant :data:`WARM_SOURCE` and :data:`WARM_TEST`,
    no task's data) ``rounds`` times through the real harness code, here, against a forked
    candidate, before the first supervisor is forked; then the candidate's side of 48 calls a
    round, here too (:func:`_warm_candidate`). Python 3.11 writes warm-up counters and inline
    caches into each code object on its first executions, and some state is built lazily; done
    once here, every forked supervisor and candidate inherits quickened code and writes (so
    copies) fewer pages: issue 14. Leaves no process, descriptor, working folder or module
    state behind. Returns (rounds that passed their check, candidate calls answered); a
    failure costs speed only."""
    path, cwd, fds, passed = list(sys.path), os.getcwd(), set(os.listdir("/proc/self/fd")), 0
    for _ in range(rounds):
        chan = tl_harness.Channel(-1, "warm-up", buffer=True)
        payload = {"nonce": "warm-up", "mode": "script", "target": "tl_warm_up.py", "code": WARM_SOURCE,
                   "test_path": "test_warm_up.py", "tests": {"test_warm_up.py": WARM_TEST}, "entry": "tl_warm",
                   "limits": WARM_LIMITS, "nproc_extra": 4, "cwd": run_dir, "warm": True}
        try:
            os.makedirs(run_dir, exist_ok=True)
            remote = tl_remote.Remote()
            try:
                tl_harness.run(chan, payload, remote, time.monotonic())
            finally:
                remote.kill()
                os.close(remote.afd)
        except Exception:  # noqa: BLE001, S110 - a warm-up that fails costs speed only
            pass
        finally:
            sys.path[:], tl_remote.CURRENT[:] = path, []
            os.chdir(cwd)
        passed += any('"outcome": "passed"' in line for line in chan.lines)
    answered = 0
    try:
        answered = _warm_candidate(48 * rounds)
    except Exception:  # noqa: BLE001, S110 - likewise
        pass
    for fd in set(os.listdir("/proc/self/fd")) - fds:   # none expected: belt and braces
        try:
            os.close(int(fd))
        except (OSError, ValueError):
            pass
    return passed, answered
