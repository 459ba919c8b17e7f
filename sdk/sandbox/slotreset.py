"""A fresh ``/tmp``, ``/dev/shm`` and pid counter for each request of a warm slot (issue 14).

The warm server cannot remount anything (seccomp denies ``mount``/``unshare``; it has no
capabilities), so emptying ``/tmp`` between requests left the roots themselves (their inode, owner,
device and any state a wipe does not reset) to the next task, and the slot's pid namespace counted
the processes every earlier task forked. :class:`SlotReset` is a small root helper on the host
(:data:`HELPER`, stdlib only) that joins the slot's mount namespace once and, between two requests,
while the server waits for it: detaches the old ``/tmp`` and ``/dev/shm`` and mounts fresh tmpfs
roots with the original options, owner and mode (new device, new inodes; ``/tmp/run`` remade for
the server); and when the request forked (the slot's ``ns_last_pid`` moved past its candidate), it
forks a child into the slot's pid namespace that sets the counter back to the candidate's pid, so
the next candidate's pid is the last one's plus one whatever the last task did (a fork costs the
helper ~0.4 ms of CPU, so requests that fork nothing skip it). The helper never appears in the
slot's pid namespace (only that short-lived child does, while the server waits). Measured: a reset
without the pid step costs ~0.07 ms of CPU and ~0.2 ms of wall clock (mounts and two pipe trips).

Without root (or where ``setns`` is refused) there is no helper: the server's wipe stays the only
reset, as before (``available`` is False).
"""

from __future__ import annotations

import os
import select
import subprocess
import sys

HELPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_slot_helper.py")
MAX_PID = 1 << 22   # the kernel's largest pid_max
TIMEOUT_S = 10.0


class SlotReset:
    """The helper for one warm server (``pid``: the server, inside the slot's namespaces)."""

    def __init__(self, pid: int, uid: int | None) -> None:
        self.proc: subprocess.Popen | None = None
        if os.geteuid() != 0:
            return
        try:
            self.proc = subprocess.Popen([sys.executable, "-I", "-S", HELPER, str(pid), str(-1 if uid is None else uid)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, cwd="/")
        except OSError:
            return
        if self._answer() != b"ok":
            self.close()

    @property
    def available(self) -> bool:
        """True while the helper runs (resets can be made)."""
        return self.proc is not None and self.proc.poll() is None

    def reset(self, last_pid: int = 0) -> bool:
        """Remake ``/tmp`` and ``/dev/shm``, and set the slot's pid counter to ``last_pid`` when it is
        positive (the next process gets ``last_pid + 1``); False when it failed (the helper is then
        gone and the slot must be replaced)."""
        if not self.available:
            return False
        try:
            self.proc.stdin.write(b"r %d\n" % max(0, min(int(last_pid), MAX_PID)))
            self.proc.stdin.flush()
        except OSError:
            self.close()
            return False
        if self._answer() == b"ok":
            return True
        self.close()
        return False

    def _answer(self) -> bytes | None:
        fd = self.proc.stdout.fileno()
        if not select.select([fd], [], [], TIMEOUT_S)[0]:
            return None
        return self.proc.stdout.readline().strip() or None

    def close(self) -> None:
        """End the helper (safe to call twice)."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        proc.kill()
        proc.wait()
        for f in (proc.stdin, proc.stdout):
            try:
                f.close()
            except OSError:
                pass
