"""A memory + pids cgroup per warm slot, where the caller may create one (v1 or v2).

RLIMIT_AS bounds each process separately; a cgroup bounds the whole tree, counting forked
children and tmpfs pages too. Attaching costs 2-12 ms per execution (DESIGN.md), so it is done
once per slot: the warm server (:mod:`sdk.sandbox.warm`) is attached when it starts, and its
children inherit the group. Limits are written before a request whose bounds differ from the
last ones set on the group (two small writes).
When no cgroup is writable, :meth:`SlotCgroup.create` returns None and only rlimits apply.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)
ROOT = Path("/sys/fs/cgroup")


def _own_path(controller: str) -> str | None:
    """This process's cgroup path for ``controller`` (v1), or the unified path (``""`` key)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            return path
    return None


class SlotCgroup:
    """Folders of one slot's cgroup(s). Use :meth:`create`."""

    def __init__(self, memory: Path, pids: Path, v2: bool) -> None:
        self.memory, self.pids, self.v2 = memory, pids, v2

    @classmethod
    def create(cls, name: str) -> "SlotCgroup | None":
        """Create (or reuse) the slot's groups; None when the hierarchy is not writable."""
        try:
            if (ROOT / "cgroup.controllers").exists():
                base = ROOT / (_own_path("") or "/").lstrip("/")
                group = base / name
                group.mkdir(exist_ok=True)
                return cls(group, group, v2=True)
            mem_path, pid_path = _own_path("memory"), _own_path("pids")
            if mem_path is None or pid_path is None:
                return None
            mem = ROOT / "memory" / mem_path.lstrip("/") / name
            pids = ROOT / "pids" / pid_path.lstrip("/") / name
            mem.mkdir(exist_ok=True)
            pids.mkdir(exist_ok=True)
            return cls(mem, pids, v2=False)
        except OSError as exc:
            log.debug("no writable cgroup for %s: %s", name, exc)
            return None

    def attach(self, pids: set[int]) -> None:
        """Move ``pids`` into the group(s); a pid that already exited is skipped."""
        folders = {self.memory, self.pids}
        for pid in sorted(pids):
            for folder in folders:
                try:
                    (folder / "cgroup.procs").write_text(str(pid))
                except ProcessLookupError:
                    break
                except OSError as exc:
                    if exc.errno == 3:  # ESRCH
                        break
                    raise

    def set_limits(self, memory_mb: int, processes: int) -> None:
        """Memory (MiB, incl. tmpfs pages written by the group) and tasks of the whole slot."""
        mem = str(memory_mb << 20)
        if self.v2:
            (self.memory / "memory.max").write_text(mem)
            (self.memory / "memory.swap.max").write_text("0") if (self.memory / "memory.swap.max").exists() else None
            (self.pids / "pids.max").write_text(str(processes))
        else:
            (self.memory / "memory.limit_in_bytes").write_text(mem)
            (self.pids / "pids.max").write_text(str(processes))

    def oom_kills(self) -> int:
        """How many processes the kernel killed for this group's memory limit so far."""
        name = "memory.events" if self.v2 else "memory.oom_control"
        try:
            for line in (self.memory / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def remove(self) -> None:
        """Remove the (now empty) groups; ignored while processes remain."""
        for folder in {self.memory, self.pids}:
            try:
                os.rmdir(folder)
            except OSError:
                pass
