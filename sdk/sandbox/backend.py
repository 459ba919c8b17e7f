"""The :class:`Backend` protocol: how one command is isolated on this machine.

:class:`~sdk.sandbox.pool.LocalSandbox` drives a backend (slots, cache, language dispatch); a
backend only runs one command in a workspace under limits. Implemented by
:class:`~sdk.sandbox.process.ProcessBackend` and :class:`~sdk.sandbox.bwrap.BubblewrapBackend`;
the Ray sandbox (:mod:`sdk.sandbox.ray_backend`) is a whole :class:`~sdk.sandbox.contract.Sandbox`
whose workers each drive one of these.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from sdk.sandbox.contract import ExecRequest, Limits
from sdk.sandbox.launch import RawRun
from sdk.sandbox.workspace import Workspace


class WarmRunner(Protocol):
    """Pre-forked interpreters for ``script`` requests (:class:`sdk.sandbox.warm.WarmServers`)."""

    def run(self, req: ExecRequest, code: str, uid: int | None, nonce: str) -> RawRun:
        """Run ``req`` with ``code`` on ``uid``'s warm server. Raises ``ServerGone`` when it broke."""

    def server_pids(self) -> set[int]:
        """Pids of every live warm server (they are not stray processes)."""

    def close(self) -> None:
        """Stop every warm server."""


@runtime_checkable
class Backend(Protocol):
    """How a command is isolated.

    Attributes:
        name: ``process`` or ``bubblewrap``.
        isolated: True when the command runs in its own namespaces.
        warm: the backend's warm servers for ``script`` requests, or None when it has none
            (the pool then starts a fresh interpreter per request).
    """

    name: str
    isolated: bool
    warm: WarmRunner | None

    def python(self, uid: int | None) -> str | None:
        """Interpreter path usable in this backend, or None when there is none."""

    def runtime(self) -> str:
        """Where the runtime folder (runner + pytest) is seen by the sandboxed process."""

    def deps_path(self, host: str) -> str:
        """Where the sandboxed process sees the test-dependency environment at ``host``
        (the backend makes ``ws.deps`` visible there, read-only)."""

    def run(self, argv: list[str], ws: Workspace, limits: Limits, uid: int | None, stdin: bytes,
            timeout_s: float | None = None) -> RawRun:
        """Run ``argv`` in ``ws`` (cwd = ``ws.work``) with a report pipe (``{report_fd}``)."""

    def close(self) -> None:
        """Release what the backend holds (warm servers); safe to call twice."""
