"""A per-execution folder: read-only ``work/`` (solution, support files, tests) and a private,
writable ``scratch/`` (HOME and TMPDIR) owned by the slot's uid. Removed after the run."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from sdk.errors import SandboxError


def safe_relpath(path: str) -> PurePosixPath:
    """Validate a request path: relative, no ``..``, not empty.

    Raises:
        SandboxError: the path could escape the work folder.
    """
    p = PurePosixPath(path)
    if not path or p.is_absolute() or ".." in p.parts or str(p) in (".", ""):
        raise SandboxError(f"file path {path!r} in the request is not a plain relative path",
                           "use relative paths such as tests/test_x.py inside the task")
    return p


class Workspace:
    """Folders for one run; use as a context manager.

    Attributes:
        base: the run's root (0755, caller-owned); work: files (dirs 0755, files 0644);
        scratch: writable by ``uid`` only (0700); deps: host folder of the test-dependency
        environment the backend makes visible read-only (:mod:`sdk.sandbox.deps`), or None.
    """

    def __init__(self, files: dict[str, str], uid: int | None, deps: str | None = None) -> None:
        self.deps = deps
        self.base = Path(tempfile.mkdtemp(prefix="tl-run-"))
        self.base.chmod(0o755)
        self.work = self.base / "work"
        self.scratch = self.base / "scratch"
        try:
            self.work.mkdir(mode=0o755)
            self.scratch.mkdir(mode=0o700)
            if uid is not None:
                os.chown(self.scratch, uid, uid)
            for rel, text in files.items():
                dest = self.work / safe_relpath(rel)
                dest.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
                dest.write_text(text, encoding="utf-8")
                dest.chmod(0o644)
            for d in self.work.rglob("*"):
                if d.is_dir():
                    d.chmod(0o755)
            if uid is None:
                # without a uid drop the owner could chmod back: this only guards against accidents
                for f in self.work.rglob("*"):
                    f.chmod(0o555 if f.is_dir() else 0o444)
                self.work.chmod(0o555)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Release what this object holds (processes, files, models); safe to call twice."""
        for d in [self.base, *self.base.rglob("*")] if self.base.exists() else []:
            try:
                if d.is_dir() and not d.is_symlink():
                    d.chmod(0o755)
            except OSError:
                pass
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
