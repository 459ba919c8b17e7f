"""Start one untrusted command, watch it, kill everything it started, and report raw facts.

This is the lowest layer of the sandbox: it knows argv, limits and a uid, nothing of languages
or tests. Backends (process, bubblewrap) only differ in the argv they hand to :func:`launch`.

How a command is contained:

- It is started through ``prlimit`` (util-linux) so rlimits are set after ``fork`` without a
  ``preexec_fn`` (which is unsafe in a threaded trainer process): CPU seconds, address space,
  file size, open files and, when a uid is given, processes.
- When the caller is root the command runs as ``uid`` (one uid per concurrent slot, so the
  process limit and the clean-up sweep cover exactly one execution), in its own session.
- The wait uses a pidfd with ``select`` (``Popen.wait(timeout=...)`` polls with sleeps of up to
  50 ms, measured here), while stdout, stderr and a report pipe are read as they fill.
- Output beyond ``limits.output_bytes`` is dropped and flagged truncated; beyond
  :data:`FLOOD_FACTOR` times that the run is killed (``output_exceeded``).
- On exit or timeout the process group is killed and, when a uid was used, every process of
  that uid (``kill -9 -1`` run as that uid, repeated until ``/proc`` shows none): this reaches a
  grandchild that called ``setsid()``, which ``killpg`` alone does not (DESIGN.md).
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field

from sdk.errors import SandboxError
from sdk.sandbox.contract import Limits

FLOOD_FACTOR = 64          # kill the run once a stream passes this many times output_bytes
DRAIN_AFTER_EXIT_S = 0.5   # how long pipes may stay open after the main process exited
REPORT_CAP = 8 << 20       # bytes of the report channel kept


@dataclass(frozen=True)
class RawRun:
    """Facts about one finished command (no verdict yet).

    Attributes:
        exit_code: exit status, negative for a signal (``-9`` = SIGKILL); None if never reaped.
        timed_out: the wall-clock limit ran out and the run was killed.
        output_exceeded: a stream passed ``FLOOD_FACTOR * output_bytes`` and the run was killed.
        stdout, stderr: at most ``output_bytes`` each; ``*_truncated`` when more was written.
        report: everything written to the report pipe (trusted runner channel), raw bytes.
        wall_s: seconds from start to reap; cpu_s: user+system seconds of the process tree reaped.
        leftovers: processes that had to be killed after the main process ended.
        harness_lost: the trusted harness was killed before it reported (warm slots: only the
            code under test can do that, so it fails the task and is flagged).
    """

    exit_code: int | None
    timed_out: bool
    output_exceeded: bool
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    report: bytes
    wall_s: float
    cpu_s: float
    leftovers: int = 0
    harness_lost: bool = False


@dataclass
class _Stream:
    """One output pipe as read so far: the first ``cap`` bytes kept in ``data``, every byte counted
    in ``total`` (``total > cap``: truncated; far beyond it: a flood)."""

    cap: int
    data: bytearray = field(default_factory=bytearray)
    total: int = 0

    def feed(self, chunk: bytes) -> None:
        """Keep as much of ``chunk`` as still fits under ``cap`` (the rest is dropped) and add
        its full length to ``total``."""
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.total += len(chunk)


def prlimit_args(limits: Limits, with_nproc: bool) -> list[str]:
    """``prlimit`` options for ``limits`` (soft = hard, CPU hard one second later).

    Raises:
        SandboxError: ``prlimit`` (util-linux) is not installed.
    """
    exe = shutil.which("prlimit", path="/usr/bin:/bin:/usr/sbin:/sbin")
    if exe is None:
        raise SandboxError("`prlimit` (util-linux) is not installed, so rlimits cannot be applied",
                           "install util-linux (Debian: apt-get install util-linux)")
    mib = 1 << 20
    args = [exe, f"--cpu={limits.cpu_s}:{limits.cpu_s + 1}", f"--as={limits.memory_mb * mib}",
            f"--fsize={limits.file_size_mb * mib}", f"--nofile={limits.open_files}", "--core=0"]
    if with_nproc:
        args.append(f"--nproc={limits.processes}")
    return args + ["--"]


def launch(argv: list[str], *, cwd: str, env: dict[str, str], limits: Limits, uid: int | None,
           stdin: bytes = b"", report: bool = False, timeout_s: float | None = None,
           pass_fds: tuple[int, ...] = (), keep: frozenset[int] = frozenset(), stdio_beside: bool = False) -> RawRun:
    """Run ``argv`` under ``limits`` and return what happened.

    Args:
        argv: the command; the literal ``{report_fd}`` in any argument is replaced by the number
            of the report pipe's write end (when ``report``).
        cwd, env: working folder and the complete environment (nothing is inherited).
        limits: see :class:`~sdk.sandbox.contract.Limits`; ``timeout_s`` overrides its timeout.
        uid: run as this uid/gid (caller must be root), or None to keep the caller's.
        stdin: bytes written to the command's stdin, which is then closed.
        pass_fds: extra descriptors the command inherits (e.g. bwrap's seccomp program).
        keep: pids of ``uid`` that must survive the clean-up (the slot's warm server); the
            process limit is raised by their number.
        stdio_beside: the command's stdin/stdout/stderr pipes are passed as extra descriptors, named in
            ``argv`` by ``{stdin_fd}``, ``{stdout_fd}``, ``{stderr_fd}``, and its own stdio is /dev/null
            (bwrap's init, pid 1 in the slot, then holds no host pipe a task could open through /proc/1/fd).
    Raises:
        SandboxError: the command could not be started at all.
    """
    timeout = limits.timeout_s if timeout_s is None else timeout_s
    rfd, wfd = os.pipe() if report else (-1, -1)
    argv = [a.replace("{report_fd}", str(wfd)) for a in argv]
    ids = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
    pipes = [os.pipe() for _ in range(3)] if stdio_beside else []
    child = (pipes[0][0], pipes[1][1], pipes[2][1]) if pipes else ()
    for name, fd in zip(("{stdin_fd}", "{stdout_fd}", "{stderr_fd}"), child):
        argv = [a.replace(name, str(fd)) for a in argv]
    stdio = subprocess.DEVNULL if pipes else subprocess.PIPE
    start = time.monotonic()
    try:
        nproc = limits.model_copy(update={"processes": limits.processes + len(keep)})
        proc = subprocess.Popen(prlimit_args(nproc, uid is not None) + argv, cwd=cwd, env=env,
                                stdin=stdio, stdout=stdio, stderr=stdio,
                                pass_fds=((wfd,) if report else ()) + tuple(pass_fds) + child, start_new_session=True,
                                close_fds=True, **ids)
    except OSError as exc:
        for fd in (rfd, wfd) + tuple(fd for pair in pipes for fd in pair):
            if fd >= 0:
                os.close(fd)
        raise SandboxError(f"cannot start {argv[0]}: {exc}", "check that the toolchain is installed") from exc
    if report:
        os.close(wfd)
    if pipes:
        for fd in child:
            os.close(fd)
        proc.stdin = os.fdopen(pipes[0][1], "wb")
        proc.stdout, proc.stderr = os.fdopen(pipes[1][0], "rb"), os.fdopen(pipes[2][0], "rb")
    try:
        return _watch(proc, start, timeout, limits, uid, stdin, rfd, keep)
    finally:
        if rfd >= 0:
            os.close(rfd)


def _watch(proc: subprocess.Popen, start: float, timeout: float, limits: Limits, uid: int | None,
           stdin: bytes, rfd: int, keep: frozenset[int]) -> RawRun:
    """Feed stdin, read the pipes, wait on a pidfd; kill and sweep at the end."""
    out, err, rep = _Stream(limits.output_bytes), _Stream(limits.output_bytes), _Stream(REPORT_CAP)
    try:
        proc.stdin.write(stdin)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass
    sel = selectors.DefaultSelector()
    streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    if rfd >= 0:
        streams[rfd] = rep
    for fd in streams:
        sel.register(fd, selectors.EVENT_READ)
    pidfd = os.pidfd_open(proc.pid)
    sel.register(pidfd, selectors.EVENT_READ)
    deadline, exited, timed_out, flooded = start + timeout, False, False, False
    status, rusage, drain_until = None, None, None
    try:
        while streams or not exited:
            now = time.monotonic()
            limit = drain_until if exited else deadline
            if now >= limit:
                if not exited:
                    timed_out = True
                break
            for key, _ in sel.select(limit - now):
                if key.fd == pidfd:
                    sel.unregister(pidfd)
                    _, status, rusage = os.wait4(proc.pid, 0)
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    exited, drain_until = True, time.monotonic() + DRAIN_AFTER_EXIT_S
                    continue
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fd)
                    streams.pop(key.fd)
                    continue
                streams[key.fd].feed(chunk)
                if streams[key.fd] is not rep and streams[key.fd].total > FLOOD_FACTOR * limits.output_bytes:
                    flooded = True
            if flooded:
                break
    finally:
        leftovers = _kill_all(proc, uid, keep)
        if not exited:
            _, status, rusage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        _drain(sel, streams, pidfd)
        sel.close()
        os.close(pidfd)
        proc.stdout.close()
        proc.stderr.close()
    cpu = (rusage.ru_utime + rusage.ru_stime) if rusage else 0.0
    return RawRun(exit_code=proc.returncode, timed_out=timed_out, output_exceeded=flooded,
                  stdout=bytes(out.data), stderr=bytes(err.data),
                  stdout_truncated=out.total > len(out.data), stderr_truncated=err.total > len(err.data),
                  report=bytes(rep.data), wall_s=time.monotonic() - start, cpu_s=cpu, leftovers=leftovers)


def _drain(sel: selectors.BaseSelector, streams: dict, pidfd: int) -> None:
    """Read what is still buffered in the pipes after every writer was killed."""
    for fd, stream in list(streams.items()):
        os.set_blocking(fd, False)
        try:
            while (chunk := os.read(fd, 65536)):
                stream.feed(chunk)
        except (BlockingIOError, OSError):
            pass


def _kill_all(proc: subprocess.Popen, uid: int | None, keep: frozenset[int] = frozenset()) -> int:
    """Kill the process group, then (with a uid) every process of that uid but ``keep``.
    Returns how many processes other than the main one were still alive."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if uid is None:
        return 0
    return sweep_uid(uid, exclude=proc.pid, keep=keep)


def sweep_uid(uid: int, exclude: int = -1, rounds: int = 50, keep: frozenset[int] = frozenset()) -> int:
    """SIGKILL every process owned by ``uid`` (must not be the caller's uid) except ``keep``;
    returns how many were found on the first look. Repeats until ``/proc`` shows none (a fork
    bomb re-forks). Without ``keep`` it runs ``kill -9 -1`` as the uid, else kills by pid."""
    if uid == os.geteuid():
        raise SandboxError("refusing to sweep the caller's own uid", "run sandboxes under a dedicated uid")
    first = None
    for _ in range(rounds):
        alive = [p for p in processes_of(uid) if p != exclude and p not in keep]
        if first is None:
            first = len(alive)
        if not alive:
            break
        if keep:
            for pid in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.001)
            continue
        subprocess.run(["/usr/bin/kill" if os.path.exists("/usr/bin/kill") else "/bin/kill", "-9", "-1"],
                       user=uid, group=uid, extra_groups=[], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env={}, check=False)
        time.sleep(0.001)
    return first or 0


def processes_of(uid: int) -> list[int]:
    """Live pids whose ``/proc`` entry is owned by ``uid``. Zombies (exited, not yet reaped by
    their parent) are left out, as are entries whose ``stat`` cannot be read: a zombie holds no
    memory or CPU and cannot be killed again, so the sweep and the stray check skip it."""
    pids = []
    with os.scandir("/proc") as it:
        for entry in it:
            if entry.name.isdigit():
                try:
                    if entry.stat(follow_symlinks=False).st_uid == uid and not _is_zombie(entry.name):
                        pids.append(int(entry.name))
                except FileNotFoundError:
                    continue
    return pids


def _is_zombie(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return True
