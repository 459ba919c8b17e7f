"""What every sandboxed process sees of its surroundings: the environment it starts with and the
fixed mount points inside the bubblewrap namespace. Shared by the backends, the warm servers and
the pool, so none of them imports another for it."""

from __future__ import annotations

RUNTIME_MOUNT = "/opt/tuneloop/rt"  # the read-only runtime (runners, pytest copy) inside bubblewrap
WORK_MOUNT = "/work"                # the task's files, read-only, inside bubblewrap


def sandbox_env(home: str) -> dict[str, str]:
    """The complete environment of a sandboxed process (nothing inherited from the caller)."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "USER": "sandbox",
            "LOGNAME": "sandbox", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "MALLOC_ARENA_MAX": "2",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
