"""The process backend: a separate process as an unprivileged uid, with rlimits, a cleared
environment and its own folder, but **no namespaces** (it shares the host's network, /proc,
/tmp and file system view). Only used when bubblewrap cannot run and the user opted in with
``sandbox.allow_unisolated: true``; see the package docstring for what that leaves open."""

from __future__ import annotations

from sdk.sandbox.contract import Limits
from sdk.sandbox.env import sandbox_env
from sdk.sandbox.launch import RawRun, launch
from sdk.sandbox.pyruntime import process_interpreter, runtime_dir
from sdk.sandbox.workspace import Workspace


class ProcessBackend:
    """See the module docstring. Stateless apart from the interpreter choice."""

    name = "process"
    isolated = False
    warm = None  # no warm servers: every request starts a fresh interpreter

    def python(self, uid: int | None) -> str | None:
        """The interpreter path this backend runs Python with for ``uid``, or None."""
        return process_interpreter(unprivileged=uid is not None)

    def runtime(self) -> str:
        """The read-only Python runtime (interpreter + pytest copy) this backend uses."""
        return str(runtime_dir())

    def deps_path(self, host: str) -> str:
        """Where the test-dependency environment at ``host`` is seen: the host path itself."""
        return host

    def close(self) -> None:
        """Nothing to release (the backend holds no process between requests)."""

    def run(self, argv: list[str], ws: Workspace, limits: Limits, uid: int | None, stdin: bytes,
            timeout_s: float | None = None) -> RawRun:
        """Run the command or requests under this backend's isolation and limits."""
        return launch(argv, cwd=str(ws.work), env=sandbox_env(str(ws.scratch)), limits=limits, uid=uid,
                      stdin=stdin, report=True, timeout_s=timeout_s)
