"""A pre-forked ("warm") Python for the ``script`` framework, one per sandbox slot.

Runs inside one long-lived bubblewrap (same namespaces, seccomp and uid as a cold run). This
server never reads a request, a test, a nonce or an answer: before each request it forks a
fresh supervisor (the trusted harness, :mod:`tl_harness`), which forks the candidate process
(:mod:`tl_candidate`) and only *then* reads the request from stdin and later writes its answer
(``R <json>``) straight to the host channel. So neither process ever holds an earlier
request in memory (``/proc/self/mem`` of a candidate shows only this server's state). Before
its first supervisor the server runs a synthetic request of its own (constant code and test,
no task's data) through the harness code against a forked candidate, and the candidate's side
of its calls in-process (:func:`warm_up`), so that the code every supervisor and candidate
runs is already quickened and fewer pages are copied per fork.

When the supervisor ends (or its wall clock runs out: it reports the request's time limit on
a private pipe) the server kills every other process it can see (``kill(-1)``), reaps them as a
subreaper, empties ``/tmp`` and ``/dev/shm`` (making unreadable folders readable first), and
checks that nothing is left: no process, no file. It then answers ``D <json>`` with
``clean``; a slot that is not clean is replaced by the host before the next request, never
handed to another task. System V IPC and POSIX message queues are denied by seccomp, so none
can outlive a request. The server is not dumpable and seccomp denies ptrace.
"""

import ctypes
import json
import math  # noqa: F401  (preloaded for candidates: solutions import it often, and it has no at-fork hook)
import os
import select
import signal
import stat
import sys
import time
import typing  # noqa: F401  (likewise: ``from typing import List`` opens many prompts)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tl_candidate  # noqa: E402,F401  (preloaded: each forked candidate starts without reading a module file)
import tl_guard  # noqa: E402
import tl_harness  # noqa: E402
import tl_remote  # noqa: E402
import tl_wire  # noqa: E402

PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36
RUN = "/tmp/run"
GRACE_S = 1.0
WIPE_S = 2.0
SHUTDOWN = 3


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _write(fd, data):
    while data:
        data = data[os.write(fd, data):]


def _read_capped(path, cap):
    """(the first ``cap`` bytes of the file as text, its size); ("", 0) when it cannot be read.
    Plain descriptor calls: ``open(path, "rb").read(cap)`` built the io objects and a
    ``cap``-byte buffer in every supervisor (the two reads in a bare fork: 87 -> 54 pages
    copied, 0.25 -> 0.15 ms; issue 14)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return "", 0
    try:
        size, chunks, left = os.fstat(fd).st_size, [], cap
        want = min(left, size) or min(left, 1 << 16)   # the whole file in one read, usually
        while left > 0:
            chunk = os.read(fd, want)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
            want = min(left, 1 << 16)
        return b"".join(chunks).decode("utf-8", "replace"), size
    except OSError:
        return "", 0
    finally:
        os.close(fd)


def _supervisor(chan, ctl):
    """The per-request harness process (never returns)."""
    code = 70
    try:   # fds 1 and 2 are this request's output files already (_spawn), and sys.stdout/stderr wrap them
        remote = tl_remote.Remote()
        _write(ctl, b"r\n")
        try:
            payload = tl_wire.Reader(0).recv()
        except EOFError:
            remote.kill()
            os._exit(SHUTDOWN)
        started = time.monotonic()
        lim = payload["limits"]
        _write(ctl, b"%f\n" % float(lim["timeout_s"]))
        chan_buf = tl_harness.Channel(chan, payload["nonce"], buffer=True)
        payload.update(cwd=RUN, warm=True)
        try:
            tl_harness.run(chan_buf, payload, remote, started)
        except BaseException as exc:  # noqa: BLE001 - reported as a harness failure
            chan_buf.emit(event="harness_error", message="%s: %s" % (type(exc).__name__, exc))
        sys.stdout.flush()
        sys.stderr.flush()
        cap = lim["output_bytes"]
        out, out_size = _read_capped(os.path.join(RUN, ".stdout"), cap)
        err, err_size = _read_capped(os.path.join(RUN, ".stderr"), cap)
        frame = {"nonce": payload["nonce"], "report": "".join(chan_buf.lines), "stdout": out, "stderr": err,
                 "stdout_size": out_size, "stderr_size": err_size, "wall_s": time.monotonic() - started}
        _write(chan, b"R " + json.dumps(frame).encode("utf-8", "replace") + b"\n")
        code = 0
    finally:
        os._exit(code)


def _outputs(fds):
    """Point fds 1 and 2 at the next request's output files (``fds``: None) or back at ``fds``.
    Done here rather than in the supervisor, so the supervisor forks its candidate before it has
    written to any page the candidate shares (each such page faults twice; issue 14)."""
    for fd, name in ((1, ".stdout"), (2, ".stderr")):
        if fds is None:
            f = os.open(os.path.join(RUN, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(f, fd)
            os.close(f)
        else:
            os.dup2(fds, fd)


def _spawn():
    """Fork the next supervisor (which forks its candidate) and wait until both exist, so the
    host never sees a server without its pair. Returns (pid, control pipe)."""
    try:
        _outputs(None)
    except OSError:   # no /tmp/run: the slot is reported not clean and replaced before any request
        pass
    ctl_r, ctl_w = os.pipe()
    for _ in range(400):   # a process limit still counting the last request's dying processes
        try:
            pid = os.fork()
            break
        except BlockingIOError:
            time.sleep(0.005)
    else:
        raise SystemExit("cannot fork a supervisor")
    if pid == 0:
        os.close(ctl_r)
        _supervisor(CHAN[0], ctl_w)
    _outputs(NULL[0])
    os.close(ctl_w)
    select.select([ctl_r], [], [], 10.0)
    return pid, ctl_r


def _watch(pid, ctl):
    """Wait for the supervisor; returns (wait status, timed_out, started). The deadline starts
    when the supervisor reports the request's time limit (``started``)."""
    pidfd = os.pidfd_open(pid)
    fds, deadline, buf = [pidfd, ctl], None, b""
    try:
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = select.select(fds, [], [], left)[0]
            if not ready:
                os.kill(pid, signal.SIGKILL)
                return os.waitpid(pid, 0)[1], True, True
            if pidfd in ready:
                return os.waitpid(pid, 0)[1], False, deadline is not None
            chunk = os.read(ctl, 64)
            if not chunk:
                fds.remove(ctl)
                continue
            buf += chunk
            lines = buf.split(b"\n")
            if deadline is None and len(lines) > 2:   # "r", then the time limit
                deadline = time.monotonic() + float(lines[1]) + GRACE_S
    finally:
        os.close(pidfd)


def _kill_everything():
    """SIGKILL every other process of the namespace and reap each one (this server is their
    subreaper), so none is still exiting when the answer goes out."""
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    deadline = time.monotonic() + 2.0
    while _others_alive() and time.monotonic() < deadline:
        time.sleep(0.005)


def _others_alive():
    me = os.getpid()
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in (1, me):
            try:
                with open("/proc/%s/stat" % name, "rb") as fh:
                    if fh.read().rsplit(b")", 1)[1].split()[0] != b"Z":
                        return True
            except (OSError, IndexError):
                continue
    return False


def _empty(folder, deadline):
    """Remove everything under ``folder`` (folders made 0700 first, so mode 000 cannot hide
    anything). False when something could not be removed in time."""
    try:
        os.chmod(folder, stat.S_IRWXU)
        names = os.listdir(folder)
    except OSError:
        return False
    ok = True
    for name in names:
        if time.monotonic() > deadline:
            return False
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(st.st_mode):
            ok = _empty(path, deadline) and ok
            try:
                os.rmdir(path)
            except OSError:
                ok = False
        else:
            try:
                os.unlink(path)
            except OSError:
                ok = False
    return ok


def _fresh():
    """Empty /tmp and /dev/shm, recreate /tmp/run; True when the slot is clean again."""
    deadline = time.monotonic() + WIPE_S
    ok = all([_empty("/tmp", deadline), _empty("/dev/shm", deadline)])
    try:
        os.chmod("/tmp", 0o1777)
        os.makedirs(RUN, mode=0o700)
    except OSError:
        return False
    return ok and os.listdir("/tmp") == ["run"] and not os.listdir("/dev/shm") and not _others_alive()


CHAN = [-1]
NULL = [-1]
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


def main():
    """Entry point of the pre-forked interpreter: one supervisor per request until stdin closes."""
    _libc()
    tl_guard.remember_server()
    CHAN[0] = chan = os.dup(1)
    NULL[0] = null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    sys.stdout = open(1, "w", closefd=False)   # what each supervisor and candidate write through
    sys.stderr = open(2, "w", closefd=False)   # (this server never writes to them)
    warm_up()
    _kill_everything()   # nothing is left of the warm-up (its candidates are reaped): a no-op check
    message = {"ready": True, "clean": _fresh()}
    while True:
        # the answer is encoded before the next pair is forked: after the fork every page this
        # server writes is copied (json.dumps there cost ~78 pages and 0.2 ms a request; issue 14)
        done = None if message is None else (("\nD " if "exit" in message else "") + json.dumps(message) + "\n").encode()
        pid, ctl = _spawn()
        if done is not None:
            _write(chan, done)
        start = time.monotonic()
        status, timed_out, started = _watch(pid, ctl)
        os.close(ctl)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == SHUTDOWN:
            break
        _kill_everything()
        clean = _fresh()
        message = {"exit": os.waitstatus_to_exitcode(status), "timed_out": timed_out, "clean": clean,
                   "wall_s": time.monotonic() - start} if started else None


if __name__ == "__main__":
    main()
