""":func:`make_sandbox`, the entry point: the sandbox a :class:`~sdk.sandbox.config.SandboxConfig` describes."""

from __future__ import annotations

from sdk.sandbox.config import SandboxConfig
from sdk.sandbox.contract import Sandbox
from sdk.sandbox.local import make_local_sandbox


def make_sandbox(config: SandboxConfig | None = None) -> Sandbox:
    """Build the sandbox described by ``config`` (default: ``SandboxConfig()``).

    ``backend``: ``process`` (needs ``allow_unisolated``), ``bubblewrap``, ``auto``
    (bubblewrap when it works here, else process if ``allow_unisolated``), or ``ray`` (the same
    isolation on Ray workers, :class:`~sdk.sandbox.ray_backend.RaySandbox`). ``concurrency``
    0 means the number of CPU cores.

    Raises:
        SandboxError: the requested backend cannot run here, or only an unisolated backend is
            available and ``allow_unisolated`` is false; Ray is missing or unreachable.
    """
    config = config or SandboxConfig()
    if config.backend == "ray":
        from sdk.sandbox.ray_backend import RaySandbox  # noqa: PLC0415 - the optional ray extra

        return RaySandbox(config)
    return make_local_sandbox(config)
