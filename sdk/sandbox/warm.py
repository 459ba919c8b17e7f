"""Pre-forked ("warm") Python interpreters for the ``script`` framework, one per slot.

Starting bubblewrap and Python costs tens of milliseconds per execution; a HumanEval check
costs about one. So each slot keeps one bubblewrap running ``_runner/tl_zygote.py`` (same uid,
namespaces, seccomp and read-only view as a cold run) that forks a child per request; see that
file for what separates one request from the next. Only requests that need no files on disk
take this path (``framework == "script"``, no support files): the test source travels in the
request, so the solution can never edit it.

Where a cgroup is writable the whole slot (server and request tree) is also bounded in
memory (``memory_mb`` + :data:`SERVER_OVERHEAD_MB`, tmpfs pages included) and tasks
(:mod:`sdk.sandbox.cgroup`), attached once when the server starts.

A request whose child breaks the server (``kill(-1)`` reaches it, ``SIGSTOP``, ...) gets no
answer: the server is killed with everything of the slot's uid, the task fails
(``failed``, with the reason), and the next request starts a fresh server (DESIGN.md pitfall).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import threading
import time

from sdk.errors import SandboxError
from sdk.sandbox import cores
from sdk.sandbox.cgroup import SlotCgroup
from sdk.sandbox.contract import ExecRequest, Limits
from sdk.sandbox.env import RUNTIME_MOUNT, sandbox_env
from sdk.sandbox.launch import FLOOD_FACTOR, RawRun, prlimit_args, sweep_uid
from sdk.sandbox.seccomp import seccomp_bpf_path
from sdk.sandbox.slotreset import SlotReset

START_TIMEOUT_S = 30.0
PIPE_READ = 1 << 16
SERVER_OVERHEAD_MB = 64   # the server's own memory, added to the request's limit in the slot cgroup
SERVER_LIMITS = Limits(cpu_s=10 ** 7, memory_mb=1 << 20, file_size_mb=1 << 12, open_files=1024)


class ServerGone(Exception):
    """The warm server died or stopped answering (the request's own code is the suspect)."""


class SlotFault(SandboxError):
    """The slot itself is broken (a server that does not start clean): an infrastructure
    fault, reported as ``sandbox_error`` (reward None, retried), never as the task's failure."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "retry; if it persists, check that bubblewrap still starts here")


class Zygote:
    """One warm server for one uid: one request at a time (one slot); its pipes are read under a lock,
    so :meth:`pids` from another thread waits for a running request."""

    def __init__(self, backend, uid: int | None, processes: int, scratch_mb: int) -> None:
        self.uid, self.processes, self.scratch_mb = uid, processes, scratch_mb
        lim = SERVER_LIMITS.model_copy(update={"processes": processes, "scratch_mb": scratch_mb})
        fd = os.open(seccomp_bpf_path(), os.O_RDONLY)
        # requests and the channel go on pipes passed beside stdio, not as bwrap's stdin/stdout: bwrap's init
        # (pid 1 in the slot, dumpable, the task's uid) closes extra fds but keeps 0-2, and a pipe it held
        # was openable through /proc/1/fd by the task wherever the host's uid is the task's (round 7)
        req_r, req_w = os.pipe()
        chan_r, chan_w = os.pipe()
        theirs = [fd, req_r, chan_w]
        argv = (prlimit_args(lim, uid is not None) + backend.bwrap_argv(None, lim, seccomp_fd=fd)
                + [backend.python(uid), "-I", "-S", "-B", RUNTIME_MOUNT + "/tl_zygote.py", "--io-fds", f"{req_r},{chan_w}"])
        self._helper: tuple[int, int] | None = None
        if os.geteuid() == 0:   # the slot reset's root helper (slotreset.py) reads the server's "r N" and answers it
            ask_r, ask_w = os.pipe()   # directly on pipes of their own: no host thread relays a reset (issue 14)
            ans_r, ans_w = os.pipe()
            self._helper = (ask_r, ans_w)
            theirs += [ask_w, ans_r]
            argv += ["--reset-fds", f"{ask_w},{ans_r}"]
        ids = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
        self.reset: SlotReset | None = None
        self._pending, self._dirty, self._io = False, False, threading.Lock()
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         env=sandbox_env("/tmp"), cwd="/", pass_fds=tuple(theirs),
                                         start_new_session=True, **ids)
        except BaseException:
            for end in (req_w, chan_r) + (self._helper or ()):
                os.close(end)
            raise
        finally:
            for end in theirs:
                os.close(end)
        self._req, self._chan = os.fdopen(req_w, "wb"), os.fdopen(chan_r, "rb", buffering=0)
        self._buf = b""
        self.cgroup: SlotCgroup | None = None
        self._limits: tuple[int, int] | None = None
        ready = self._line(time.monotonic() + START_TIMEOUT_S)
        if not ready or not json.loads(ready).get("clean"):
            self.kill()
            raise ServerGone("the warm server did not start clean")
        self._init = {p for p, pp in _parents().items() if pp == self.proc.pid}   # bwrap's init: pid 1 in the slot
        self._marks = _init_marks(self._init)
        if self._helper is not None:
            fds, self._helper = self._helper, None
            self.reset = SlotReset(min(self.server_process(), default=-1), uid, fds)
        self.cgroup = SlotCgroup.create(f"tuneloop-{uid if uid is not None else os.getpid()}")
        if self.cgroup is not None:
            try:
                self.cgroup.attach(self.server_process())
            except OSError:
                self.cgroup = None

    def limit(self, memory_mb: int, processes: int) -> None:
        """Bound the whole slot (server + request tree) through its cgroup, if it has one. The
        files are written only when the bounds differ from the last ones set on this server's
        group (only the host can write them; two writes cost ~40 us CPU and ~170 us of wall
        clock per request, issue 14)."""
        if self.cgroup is not None and self._limits != (memory_mb, processes):
            try:
                self.cgroup.set_limits(memory_mb, processes)
                self._limits = (memory_mb, processes)
            except OSError:
                self._limits = None

    def _line(self, deadline: float) -> bytes | None:
        fd = self._chan.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            # a pipe holds 64 KiB, so one read never returns more; asking for 1 MiB made each read
            # allocate (mmap) and free a 1 MiB buffer: 15 us against 1 us per read (issue 14)
            chunk = os.read(fd, PIPE_READ)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def request(self, payload: dict, timeout_s: float) -> tuple[dict | None, dict]:
        """Send one request; returns (the supervisor's ``R`` answer or None, the server's ``D``
        frame). With an answer, ``D`` (the slot's clean-up: kill, wipe, reset, the next candidate) is
        not waited for: the request's verdict is complete, so the caller goes on while the slot
        cleans up, and :meth:`settle` reads ``D`` before the slot serves anyone again (issue 14: the
        clean-up was about a fifth of a request's wall clock, with the host's thread idle). The
        frame returned then says exit 0, not timed out. Raises ServerGone (server then killed)
        when the server itself stops answering."""
        data = json.dumps(payload).encode()
        with self._io:
            if self._pending:
                raise ServerGone("the slot was not settled before its next request")
            try:
                self._req.write(b"%d\n" % len(data) + data)
                self._req.flush()
            except OSError as exc:
                self.kill()
                raise ServerGone(f"the warm server is gone ({exc})") from exc
            deadline = time.monotonic() + timeout_s + 10
            while True:
                line = self._line(deadline)
                if line is None:
                    self.kill()
                    raise ServerGone("the warm server stopped answering (killed or stopped by the code it ran)")
                kind, _, body = line.partition(b" ")
                try:
                    frame = json.loads(body) if kind in (b"R", b"D") else None
                except ValueError:
                    continue
                if kind == b"R" and isinstance(frame, dict) and frame.get("nonce") == payload["nonce"]:
                    self._pending = True
                    return frame, {"exit": 0, "timed_out": False, "clean": True}
                if kind == b"D" and isinstance(frame, dict):
                    return None, frame

    def settle(self) -> bool:
        """Read the ``D`` frame the last request still owes, if any (waiting for the slot's clean-up);
        True when the slot is clean and may serve the next task. A slot that said it is not clean, or
        did not say it in time, stays False: the caller replaces it, and never hands it to a task."""
        with self._io:
            deadline = time.monotonic() + START_TIMEOUT_S
            while self._pending:
                line = self._line(deadline)
                if line is None:
                    self._pending, self._dirty = False, True
                    break
                kind, _, body = line.partition(b" ")
                if kind == b"D":
                    try:
                        frame = json.loads(body)
                    except ValueError:
                        frame = None
                    self._pending, self._dirty = False, not (isinstance(frame, dict) and frame.get("clean") is True)
            if not self._dirty and _init_marks(self._init) != self._marks:   # round 10: a task wrote pid 1's knobs
                self._dirty = True
            return not self._dirty

    def pids(self) -> set[int]:
        """The server's own processes: bwrap, bwrap's init in the namespace, the server, and the
        supervisor + candidate pair it pre-forks for the next request (depth 4). Nothing of a
        finished request is left: the server kills it all before it answers ``D``, which is read
        first (:meth:`settle`)."""
        self.settle()
        own, frontier = {self.proc.pid}, {self.proc.pid}
        for _ in range(4):
            frontier = {pid for pid, ppid in _parents().items() if ppid in frontier}
            own |= frontier
        return own

    def pin(self, core: int | None) -> None:
        """Run the whole slot (its processes and reset helper) on ``core``, inherited by all that the
        server forks later (:mod:`sdk.sandbox.cores`); None leaves it to the scheduler."""
        if core is not None:
            helper = self.reset.proc if self.reset is not None else None
            cores.pin(self.pids() | ({helper.pid} if helper is not None else set()), core)

    def server_process(self) -> set[int]:
        """The Python server itself (depth 2 under bwrap): the only process put in the slot's
        cgroup, so bwrap can never be the memory killer's victim; requests inherit the group."""
        parents = _parents()
        init = {p for p, pp in parents.items() if pp == self.proc.pid}
        return {p for p, pp in parents.items() if pp in init}

    def alive(self) -> bool:
        """True while the pre-forked server process is running."""
        return self.proc.poll() is None

    def kill(self) -> None:
        """Kill the pre-forked server and everything of its uid."""
        try:
            os.killpg(self.proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
        if self.uid is not None:
            sweep_uid(self.uid)
        self.proc.wait()
        if self.reset is not None:
            self.reset.close()
        if self._helper is not None:   # the server never started clean: no helper was given them
            for fd in self._helper:
                os.close(fd)
            self._helper = None
        if self.cgroup is not None:
            self.cgroup.remove()
        for f in (self._req, self._chan):
            try:
                f.close()
            except OSError:
                pass


class WarmServers:
    """The warm servers of one backend, by uid; with ``cores.PIN_SLOTS`` (off by default) each slot
    on a core of its own while cores go round (:mod:`sdk.sandbox.cores`)."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self._servers: dict[int | None, Zygote] = {}
        self._lock = threading.Lock()
        self._uids: set[int] = set()   # the leased uids this object's slots ran as (their cores: cores.py)

    def run(self, req: ExecRequest, code: str, uid: int | None, nonce: str) -> RawRun:
        """Run a ``script`` request on the slot's warm server (started on first use).

        Raises:
            SlotFault: no clean server could be started (an infrastructure status, never the
                task's failure).
        """
        lim = req.limits
        server = self._server(uid, lim)
        test_path = sorted(req.tests)[0]
        payload = {"nonce": nonce, "mode": "script", "target": req.target_path, "code": code, "test_path": test_path,
                   "tests": {test_path: req.tests[test_path]}, "entry": req.entry_point, "limits": lim.model_dump(),
                   "nproc_extra": 4}
        start = time.monotonic()
        for attempt in range(2):
            server.limit(lim.memory_mb + SERVER_OVERHEAD_MB, lim.processes + 8)
            try:
                ans, done = server.request(payload, lim.timeout_s)
                break
            except ServerGone:   # the code killed the whole server (kill(-1), SIGSTOP), or the slot broke:
                self._drop(uid)  # once more on a fresh server, so only a repeat counts against the code
                if attempt == 0:
                    server = self._server(uid, lim)
        else:
            return RawRun(exit_code=-signal.SIGKILL, timed_out=False, output_exceeded=False, stdout=b"",
                          stderr=b"the warm server stopped answering twice", stdout_truncated=False, stderr_truncated=False, report=b"",
                          wall_s=time.monotonic() - start, cpu_s=0.0, harness_lost=True)
        if not done.get("clean", False):   # poisoned: never handed to another task
            self._drop(uid)
        if ans is None:
            return RawRun(exit_code=done.get("exit"), timed_out=bool(done.get("timed_out")), output_exceeded=False,
                          stdout=b"", stderr=b"", stdout_truncated=False, stderr_truncated=False, report=b"",
                          wall_s=time.monotonic() - start, cpu_s=0.0, harness_lost=not done.get("timed_out"))
        cap, biggest = lim.output_bytes, max(ans["stdout_size"], ans["stderr_size"])
        report = ans["report"]
        flooded = biggest > FLOOD_FACTOR * cap or ('"candidate_exit": -%d' % signal.SIGXFSZ in report
                                                  and biggest >= lim.file_size_mb << 20)
        return RawRun(exit_code=done.get("exit"), timed_out=bool(done.get("timed_out")), output_exceeded=flooded,
                      stdout=ans["stdout"].encode(), stderr=ans["stderr"].encode(),
                      stdout_truncated=ans["stdout_size"] > cap, stderr_truncated=ans["stderr_size"] > cap,
                      report=report.encode(), wall_s=ans["wall_s"], cpu_s=0.0)

    def _server(self, uid: int | None, lim: Limits) -> Zygote:
        """The slot's live, fitting server; a fresh one when there is none (SlotFault if it
        cannot be started twice in a row)."""
        with self._lock:
            server = self._servers.get(uid)
        fits = server is not None and server.scratch_mb == lim.scratch_mb and server.processes >= lim.processes + 8
        if server is not None and fits and server.alive() and server.settle():
            return server
        if server is not None:
            self._drop(uid)   # a different /tmp size or process budget needs a new server
        error: ServerGone | None = None
        for _ in range(2):
            try:
                server = Zygote(self.backend, uid, processes=max(lim.processes + 8, 64), scratch_mb=lim.scratch_mb)
            except ServerGone as exc:
                error = exc
                continue
            if uid is not None:
                self._uids.add(uid)
            server.pin(cores.take(uid))
            with self._lock:
                self._servers[uid] = server
            return server
        raise SlotFault(f"no clean warm sandbox slot could be started: {error}")

    def _drop(self, uid: int | None) -> None:
        with self._lock:
            server = self._servers.pop(uid, None)
        if server is not None:
            server.kill()

    def pids_of(self, uid: int | None) -> frozenset[int]:
        """The live warm server's processes for ``uid`` (empty if none)."""
        with self._lock:
            server = self._servers.get(uid)
        return frozenset(server.pids()) if server is not None and server.alive() else frozenset()

    def server_pids(self) -> set[int]:
        """Pids of every live warm server (see :meth:`Zygote.pids`)."""
        with self._lock:
            servers = list(self._servers.values())
        return set().union(*(z.pids() for z in servers if z.alive()))

    def close(self) -> None:
        """Release what this object holds (processes, files, models); safe to call twice."""
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for s in servers:
            s.kill()
        cores.give_back(self._uids)


def _parents() -> dict[int, int]:
    """pid -> parent pid for every process in /proc."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    out[int(name)] = int(fh.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return out


INIT_KNOBS = ("oom_score_adj", "coredump_filter", "autogroup")   # writable by the task's uid: bwrap's init is dumpable


def _init_marks(pids: set[int]) -> tuple:
    """What a task can write into bwrap's init (pid 1 in the slot, its host ``pids``) and the next task read back:
    the :data:`INIT_KNOBS` of ``/proc/<pid>`` (round 10: one task's ``oom_score_adj`` 777, ``coredump_filter``
    0x1ab and autogroup nice 13 were read by the next on a warm slot). A change makes :meth:`Zygote.settle`
    call the slot dirty (replaced before its next task). Three small reads per request (14 us of CPU, load 12)."""
    out = []
    for pid in sorted(pids):
        for knob in INIT_KNOBS:
            try:
                with open(f"/proc/{pid}/{knob}", "rb") as fh:
                    out.append(fh.read())
            except OSError:
                out.append(None)
    return tuple(out)
