"""Run untrusted, model-written code against tests: :func:`make_sandbox` is the entry point.

This package only re-exports; the modules: :mod:`~sdk.sandbox.contract` (request, result,
limits), :mod:`~sdk.sandbox.config` (the ``sandbox:`` section), :mod:`~sdk.sandbox.factory`
(:func:`make_sandbox`), :mod:`~sdk.sandbox.local` (backend choice), :mod:`~sdk.sandbox.backend`
(the :class:`Backend` protocol), :mod:`~sdk.sandbox.pool` (slots, cache, dispatch), the backends
:mod:`~sdk.sandbox.bwrap`, :mod:`~sdk.sandbox.process` and :mod:`~sdk.sandbox.ray_backend`.

    sandbox = make_sandbox(SandboxConfig(...))            # backend auto = bubblewrap here
    results = sandbox.run([ExecRequest(...), ...])        # aligned with the requests
    toolchain_status(Language.GO)                          # None, or why Go cannot run

What is isolated, by the default **bubblewrap** backend (:mod:`sdk.sandbox.bwrap`), and proven
by ``tests/sandbox/test_hostile.py``:

- never the caller's process; never root: each concurrent slot runs as its own leased,
  unprivileged uid (:mod:`sdk.sandbox.uids`), inside new user, pid, net, ipc, uts and cgroup
  namespaces, with no capabilities and nested user namespaces disabled;
- file system: read-only ``/usr`` and a few harmless ``/etc`` files; the task's files
  read-only at ``/work``; ``/tmp`` a tmpfs of ``scratch_mb``; ``/dev/shm`` 16 MiB; ``/dev``
  read-only; ``/proc`` of the sandbox only. The host's ``/root``, ``/home``, ``/work``,
  ``/etc/shadow``, the caller's folder and environment are not visible;
- network: an empty network namespace, and seccomp denies every socket family but
  ``AF_UNIX``; seccomp also denies ptrace, process_vm_*, mount, unshare/setns, keyctl, bpf,
  io_uring, perf events and module loading;
- rlimits: CPU seconds, address space (``memory_mb``), file size, open files, processes (per
  slot uid); wall-clock timeout; on exit or timeout the process group and every process of
  the slot uid are killed (reaches ``setsid()`` grandchildren and fork bombs);
- output capped (``output_bytes``) and flagged truncated; a flood is killed (OUTPUT_LIMIT);
- the verdict comes from a nonce-tagged pipe written by our runner after the tests ran,
  never from exit codes or stdout (``sys.exit(0)``/``os._exit(0)`` cannot pass).

What is NOT isolated or not covered:

- memory is bounded by address space (RLIMIT_AS), not by a cgroup: resident memory of a
  process that maps but does not touch memory is not limited separately, and tmpfs pages
  (``/tmp``, ``/dev/shm``) count against the host, bounded by their sizes;
- CPU *time* is limited per process (RLIMIT_CPU); a process tree can use up to ``processes``
  times that before the wall-clock timeout ends it; there is no CPU share (cgroup) limit;
- the kernel is shared (a kernel exploit escapes any namespace sandbox);
- code in the same execution as the tests (Python: same interpreter; compiled languages:
  same process) can inspect the runner's memory to find the nonce, or print the runner's
  result format; the nonce defends against exit-code games, not against code written
  against tuneloop's runner. Equality-operator tricks are the rewards module's concern.

The **process** backend (opt-in: ``allow_unisolated: true``; :mod:`sdk.sandbox.process`)
keeps the separate process, uid drop (when root), cleared environment, own folder, rlimits,
process-group + uid kill, output cap and nonce verdicts, but has no namespaces: network
works, world-readable files are readable, ``/tmp`` is shared, other processes are visible.
Without root there is no uid drop at all (tests are only chmod-ed read-only).

Python interpreter: see :mod:`sdk.sandbox.pyruntime` (bare ``-I -S -B`` interpreter plus a
read-only copy of pytest; the system python3 when the caller's is unreachable by the uid).
Other languages: :mod:`sdk.sandbox.languages`.
"""

from sdk.sandbox.backend import Backend
from sdk.sandbox.config import RaySandboxConfig, SandboxConfig
from sdk.sandbox.contract import ExecRequest, ExecResult, ExecStatus, Limits, Sandbox, TestOutcome
from sdk.sandbox.factory import make_sandbox
from sdk.sandbox.languages import toolchain_status
from sdk.sandbox.local import UNISOLATED_WARNING
from sdk.sandbox.pool import LocalSandbox
from sdk.sandbox.timing import calibrate, derive_limits

__all__ = ["Backend", "ExecRequest", "ExecResult", "ExecStatus", "Limits", "LocalSandbox", "RaySandboxConfig",
           "Sandbox", "SandboxConfig", "TestOutcome", "UNISOLATED_WARNING", "calibrate", "derive_limits",
           "make_sandbox", "toolchain_status"]
