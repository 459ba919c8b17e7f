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
slot's pid namespace (only that short-lived child does, while the server waits). The server asks
(``r N``) and reads the answer on pipes straight to and from the helper: the host's thread relayed
both until 3 December (an ``S`` line on the channel, a wake-up of the request's thread for each),
and that relay kept the host's thread on the slot until the reset was over. Measured: a reset
without the pid step costs ~0.07 ms of CPU (mounts and one pipe trip each way).

Without root (or where ``setns`` is refused) there is no helper: the server's wipe stays the only
reset, as before (``available`` is False).
"""

from __future__ import annotations

import os
import select
import subprocess
import sys

HELPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_slot_helper.py")
TIMEOUT_S = 10.0


class SlotReset:
    """The helper for one warm server (``pid``: the server, inside the slot's namespaces). ``fds``: the
    host's ends of two pipes whose other ends the server holds (``--reset-fds``): the helper reads the
    server's ``r N`` lines on the first and answers on the second, so a reset costs no host thread a
    wake-up (issue 14). Both are closed here; where no helper could start, ``-`` is written on the
    second first, which tells the server that its own wipe is the only reset (as without root)."""

    def __init__(self, pid: int, uid: int | None, fds: tuple[int, int]) -> None:
        self.proc: subprocess.Popen | None = None
        try:
            if os.geteuid() == 0:
                self._start(pid, uid, fds)
            if not self.available:
                os.write(fds[1], b"-\n")
        except OSError:
            pass   # the server's end is gone too: its slot is replaced
        finally:
            for fd in fds:
                os.close(fd)

    def _start(self, pid: int, uid: int | None, fds: tuple[int, int]) -> None:
        try:
            self.proc = subprocess.Popen([sys.executable, "-I", "-S", HELPER, str(pid), str(-1 if uid is None else uid),
                                          str(fds[0]), str(fds[1])], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, cwd="/", pass_fds=fds)
        except OSError:
            return
        if self._answer() != b"ok":
            self.close()

    @property
    def available(self) -> bool:
        """True while the helper runs (the server's resets can be made)."""
        return self.proc is not None and self.proc.poll() is None

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
        try:
            proc.stdout.close()
        except OSError:
            pass
