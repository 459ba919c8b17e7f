"""A pre-forked ("warm") Python for the ``script`` framework, one per sandbox slot.

Runs inside one long-lived bubblewrap (same namespaces, seccomp and uid as a cold run). This
server never reads a request, a test, a nonce or an answer. It forks one long-lived supervisor
(the trusted harness, :mod:`tl_supervisor`) and, before each request, a fresh candidate process
(:mod:`tl_candidate`) from its own clean image, whose pipe ends it passes to the supervisor over
a Unix socket; the supervisor reads the request from stdin, runs the tests against that candidate
and writes its answer (``R <json>``) straight to the host channel. So no candidate ever held an
earlier request in memory (``/proc/self/mem`` of a candidate shows only this server's state),
and the supervisor, which never forks, does not copy its pages again for every request (issue
14: its fork, exit and ~500 copied pages were about a fifth of a request's CPU). A request that
changed the supervisor (its environment, builtins, a module, a class, a signal disposition...:
:mod:`tl_state`) ends it after its answer, and the next request gets a fresh one. Before its
first supervisor the server runs a synthetic request of its own (constant code and test, no
task's data) through the harness code against a forked candidate, and the candidate's side of
its calls in-process (:func:`tl_warmup.warm_up`), so that the code every supervisor and candidate runs is
already quickened and fewer pages are copied per fork.

The server is the candidate's parent: it reaps it and relays its wait status and CPU time to the
supervisor on a status pipe; the candidate's kill-guard protects the server's chain and the
supervisor beside it (:data:`tl_guard.SIBLING`). When the supervisor reports the end of a request
(``d``), or it ends, or its wall clock runs out (it reports the request's time limit on a private
pipe; the supervisor is then killed), the server kills every other process it can see but the
live supervisor (``kill(-1)`` when there is none), reaps them as a subreaper, checks that no
process is left, then asks the host's root helper (``r N`` and its answer, on the two pipes of
``--reset-fds``, which no host thread relays) to remake ``/tmp`` and ``/dev/shm`` as fresh mounts
(checked empty but ``/tmp/run``) and, when the request forked, set the slot's pid counter back to
its candidate's pid (``sdk/sandbox/slotreset.py``); without a helper it empties both itself (making
unreadable folders readable first) and checks that no file is left (:func:`_clean_up`). It
then answers ``D <json>`` with ``clean``; a slot that is not clean is
replaced by the host before the next request, never handed to another task. System V IPC and
POSIX message queues are denied by seccomp, so none can outlive a request. The server is not
dumpable and seccomp denies ptrace.
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
import tl_candidate  # noqa: E402  (preloaded: each forked candidate starts without reading a module file)
import tl_guard  # noqa: E402
import tl_state  # noqa: E402
import tl_supervisor  # noqa: E402
from tl_warmup import warm_up  # noqa: E402  (re-exported: tests call tl_zygote.warm_up)

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


def _spawn(sup):
    """Fork the next request's candidate from this clean image, pass its pipes, output files and
    a status pipe to the supervisor, and wait until the supervisor has them (so the host never
    sees a server without its pair). Returns (candidate pid, its pidfd, the status pipe's end)."""
    try:
        _outputs(None)
    except OSError:   # no /tmp/run: the slot is reported not clean and replaced before any request
        pass
    a_r, a_w = os.pipe()      # harness -> candidate
    b_r, b_w = os.pipe()      # candidate -> harness
    c_r, c_w = os.pipe()      # candidate audit hook -> harness
    pid = tl_supervisor.fork()
    if pid == 0:
        tl_candidate.start(a_r, b_w, c_w)
    s_r, s_w = os.pipe()
    try:
        tl_supervisor.send(sup.sock, pid, [a_w, b_r, c_r, s_r, 1, 2])
    except OSError:
        pass   # the supervisor is gone: seen by the watch
    for fd in (a_r, b_w, c_w, a_w, b_r, c_r, s_r):
        os.close(fd)
    _outputs(NULL[0])
    sup.line(10.0)   # "r"
    return pid, os.pidfd_open(pid), s_w


def _relay(pid, status_w):
    """Reap the candidate and write its wait status and CPU seconds to the supervisor."""
    try:
        _, st, ru = os.wait4(pid, 0)
        _write(status_w, b"%d %f\n" % (st, ru.ru_utime + ru.ru_stime))
    except OSError:
        pass
    os.close(status_w)


def _watch(sup, cand):
    """Serve one request: relay the candidate's end, wait for the supervisor's ``d``. Returns
    (the supervisor's wait status, or None while it lives on; timed_out; started). The deadline
    starts when the supervisor reports the request's time limit (``started``)."""
    pid, pidfd, status_w = cand
    deadline, started, ctl_open = None, False, True
    try:
        while True:
            while b"\n" in sup.buf:
                line, sup.buf = sup.buf.split(b"\n", 1)
                if line == b"d":
                    return None, False, started
                if not started:   # the time limit
                    deadline, started = time.monotonic() + float(line) + GRACE_S, True
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            fds = [sup.pidfd] + ([sup.ctl] if ctl_open else []) + ([pidfd] if status_w is not None else [])
            ready = select.select(fds, [], [], left)[0]
            if not ready:
                os.kill(sup.pid, signal.SIGKILL)
                return os.waitpid(sup.pid, 0)[1], True, True
            if pidfd in ready and status_w is not None:
                _relay(pid, status_w)
                status_w = None
            if sup.ctl in ready:
                chunk = os.read(sup.ctl, 64)
                sup.buf += chunk
                ctl_open = bool(chunk)
            elif sup.pidfd in ready:
                return os.waitpid(sup.pid, 0)[1], False, started
    finally:
        os.close(pidfd)
        if status_w is not None:
            os.close(status_w)


def _kill_everything(keep=0):
    """SIGKILL every other process of the namespace (but ``keep``: the live supervisor) and reap
    each one (this server is their subreaper), so none is still exiting when the answer goes out."""
    while not keep:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    deadline = time.monotonic() + 2.0
    while True:
        others = _others(keep)
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        if not others or time.monotonic() > deadline:
            return
        time.sleep(0.001)


def _others(keep=0):
    """The processes of the namespace other than its init, this server and ``keep`` that are not
    zombies."""
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in (1, me, keep):
            try:
                with open("/proc/%s/stat" % name, "rb") as fh:
                    if fh.read().rsplit(b")", 1)[1].split()[0] != b"Z":
                        found.append(int(name))
            except (OSError, IndexError):
                continue
    return found


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


def _fresh(keep=0):
    """Empty /tmp and /dev/shm, recreate /tmp/run; True when the slot is clean again (no process
    left but ``keep``, the live supervisor)."""
    deadline = time.monotonic() + WIPE_S
    ok = all([_empty("/tmp", deadline), _empty("/dev/shm", deadline)])
    try:
        os.chmod("/tmp", 0o1777)
        os.makedirs(RUN, mode=0o700)
    except OSError:
        return False
    return ok and os.listdir("/tmp") == ["run"] and not os.listdir("/dev/shm") and not _others(keep)


CHAN = [-1]
NULL = [-1]
RESET = [-1, -1]   # --reset-fds W,R: to the host's root helper (slotreset.py), and its answers on their own pipes


def _helper_line(wait_s):
    """The helper's next answer line (without its newline), or b"" (none in time, or it is gone)."""
    buf = b""
    while not buf.endswith(b"\n"):
        if not select.select([RESET[1]], [], [], wait_s)[0]:
            return b""
        chunk = os.read(RESET[1], 64)
        if not chunk:
            return b""
        buf += chunk
    return buf.strip()


def _reset(cand_pid):
    """Ask the host's root helper to remake /tmp and /dev/shm (``r N``; :mod:`sdk.sandbox.slotreset`) and,
    when any process was forked after the candidate ``cand_pid``, to set the pid counter back to it (so the
    next candidate's pid never counts an earlier task's forks); wait for its answer. The helper reads and
    answers here directly, no host thread relays (issue 14). True when done; True also when the host has
    no helper (its ``-``: the wipe is the reset, and no more are asked); False when it failed or is gone."""
    try:   # descriptor calls: ``open()`` made 9 system calls of these 3 (issue 14)
        fd = os.open("/proc/sys/kernel/ns_last_pid", os.O_RDONLY)
        try:
            moved = int(os.read(fd, 32)) != cand_pid
        finally:
            os.close(fd)
    except (OSError, ValueError):
        moved = True
    try:
        _write(RESET[0], b"r %d\n" % (cand_pid if moved else 0))
    except OSError:
        pass   # no helper reads: the host's "-" is waiting
    answer = _helper_line(15.0)
    if answer == b"-":
        for fd in RESET:
            os.close(fd)
        RESET[:] = [-1, -1]
        return True
    return answer == b"ok"


def _clean_up(keep, cand_pid, started):
    """After a request (its processes killed and reaped): True when the slot is clean again. With the
    host's root helper, once nothing of the slot runs but the idle supervisor ``keep``, the helper remakes
    ``/tmp`` and ``/dev/shm`` as fresh mounts (:func:`_reset`) and the new roots are checked empty but
    ``/tmp/run``: what the task left in the old ones is dropped with them, so they are not emptied
    first (that wipe cost the server ~30 system calls a request; issue 14). Without a helper (or before
    a request started) the wipe and its check (:func:`_fresh`) are the reset, as before."""
    if started and RESET[0] >= 0 and not _others(keep):
        done = _reset(cand_pid)
        if RESET[0] >= 0:   # the helper answered (its "-" closes RESET: no helper, so wipe below)
            try:
                return done and os.listdir("/tmp") == ["run"] and not os.listdir("/dev/shm")
            except OSError:
                return False
    return _fresh(keep)


def main():
    """Entry point of the pre-forked interpreter: one candidate per request, served by a
    long-lived supervisor (replaced when a request changed it), until stdin closes."""
    _libc()
    if "--io-fds" in sys.argv:   # the host's request and channel pipes, passed beside bwrap's stdio (warm.py)
        for target, fd in enumerate(int(x) for x in sys.argv[sys.argv.index("--io-fds") + 1].split(",")):
            os.dup2(fd, target)
            os.close(fd)
    if "--reset-fds" in sys.argv:
        RESET[:] = [int(x) for x in sys.argv[sys.argv.index("--reset-fds") + 1].split(",")]
    tl_guard.remember_server()
    CHAN[0] = chan = os.dup(1)
    NULL[0] = null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    sys.stdout = open(1, "w", closefd=False)   # what the supervisor and each candidate write through
    sys.stderr = open(2, "w", closefd=False)   # (this server never writes to them)
    warm_up()
    tl_state.prepare()   # after the warm-up: the classes every supervisor starts with
    tl_candidate.prebuild()   # after the warm-up too: the Candidate object every candidate takes
    _kill_everything()   # nothing is left of the warm-up (its candidates are reaped): a no-op check
    message = {"ready": True, "clean": _fresh()}
    sup = None
    while True:
        # the answer is encoded before the next candidate is forked: after the fork every page this
        # server writes is copied (json.dumps there cost ~78 pages and 0.2 ms a request; issue 14)
        done = None if message is None else (("\nD " if "exit" in message else "") + json.dumps(message) + "\n").encode()
        if sup is None:
            sup = tl_supervisor.Supervisor(CHAN[0], NULL[0], private=[fd for fd in RESET if fd >= 0])
        cand = _spawn(sup)
        if done is not None:
            _write(chan, done)
        start = time.monotonic()
        status, timed_out, started = _watch(sup, cand)
        if status is not None:   # the supervisor ended: shut down, timed out, or a request changed it
            sup.close()
            sup = None
            if os.WIFEXITED(status) and os.WEXITSTATUS(status) == SHUTDOWN:
                break
        keep = sup.pid if sup is not None else 0
        _kill_everything(keep)
        clean = _clean_up(keep, cand[0], started)
        message = {"exit": 0 if status is None else os.waitstatus_to_exitcode(status), "timed_out": timed_out,
                   "clean": clean, "wall_s": time.monotonic() - start} if started else None

if __name__ == "__main__":
    main()
