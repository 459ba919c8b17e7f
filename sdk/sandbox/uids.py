"""Leasing sandbox uids across every tuneloop process on this machine.

Each concurrent slot runs as its own uid, and the clean-up sweep kills *every* process of that
uid, so two sandboxes (in one process or in two) must never share a uid. A uid is leased by
holding an exclusive ``flock`` on ``/run/tuneloop/uid-<n>.lock`` (``/run`` is writable by root
only, so sandboxed code cannot tamper with the locks); the kernel drops the lock when the
holder exits, so a crashed trainer leaks nothing. Only used when the caller is root.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from sdk.errors import SandboxError
from sdk.sandbox.launch import sweep_uid

UID_BASE = 61100    # leased uids: UID_BASE .. UID_BASE + UID_COUNT - 1 (no passwd entries needed)
UID_COUNT = 512
LOCK_DIR = Path("/run/tuneloop")


class UidLease:
    """An exclusively held uid; release with :meth:`release` (or process exit)."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid, self._fd = uid, fd

    def release(self) -> None:
        """Give the leased uid back to the machine-wide pool."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def lease_uids(count: int) -> list[UidLease]:
    """Lease ``count`` free uids; any process left over from an earlier holder is killed.

    Raises:
        SandboxError: not root, or fewer than ``count`` uids are free.
    """
    if os.geteuid() != 0:
        raise SandboxError("only root can run sandboxes as other uids", "run as root or without uid separation")
    LOCK_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
    leases: list[UidLease] = []
    for uid in range(UID_BASE, UID_BASE + UID_COUNT):
        if len(leases) == count:
            break
        fd = os.open(LOCK_DIR / f"uid-{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        sweep_uid(uid)
        leases.append(UidLease(uid, fd))
    if len(leases) < count:
        for lease in leases:
            lease.release()
        raise SandboxError(f"only {len(leases)} of {count} sandbox uids are free",
                           "lower sandbox.concurrency or close other sandboxes")
    return leases
