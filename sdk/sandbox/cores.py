"""One core per warm sandbox slot (issue 14's throughput), while the cores go round.

A warm request hands work back and forth about 30 times between the slot's processes: the harness
and the candidate once each way per call, the server, its root reset helper (:mod:`sdk.sandbox.warm`).
Left to the scheduler, two busy slots on two cores spread those processes over both, and each hand-off
across cores wakes the other core: a pipe round trip between two Python processes cost ~20 us of CPU
a side there against ~5 us on one core (this 2-core VM, ``/tmp`` ping-pong, 5,000 trips), and a core
woken from idle leaves both processes waiting. With :data:`PIN_SLOTS` each slot's processes run on a
core of their own: :func:`take` gives a leased uid (one slot) a core that no other slot of this process
holds, from this process's CPU set, until :func:`give_back`; a slot for which none is left (more slots
than cores), or without a leased uid, gets None and floats.

Off by default: not measured on a quiet machine yet, and under load (3 December, load 15-16, other jobs
on both cores) it was a coin toss, ``bench/sandbox_pin.py --rounds 4 --reps 1`` twice: CPU ratio ours /
floor pinned 0.62 vs floating 0.59, then 0.58 vs 0.65 (a pinned slot cannot leave a core that another job
keeps busy; beside a trainer that uses every core, pinning may cost). That script gives the quiet figure.

Not a defence: a task may still change its own CPU mask (never another process's: seccomp), which
only moves itself and what it forks, all killed with the request.
"""

from __future__ import annotations

import os
import threading

PIN_SLOTS = False   # see the module: bench/sandbox_pin.py decides
_CORES: dict[int, int] = {}   # uid -> core, across every sandbox of this process
_LOCK = threading.Lock()


def take(uid: int | None) -> int | None:
    """The core of ``uid``'s slot (the same one on every call until :func:`give_back`), or None: off,
    no leased uid, or every core of this process's CPU set held by another slot already."""
    if not PIN_SLOTS or uid is None:
        return None
    with _LOCK:
        if uid not in _CORES:
            free = sorted(os.sched_getaffinity(0) - set(_CORES.values()))
            if not free:
                return None
            _CORES[uid] = free[0]
        return _CORES[uid]


def give_back(uids) -> None:
    """Free the cores of ``uids`` (their slots are closed); unknown uids are ignored."""
    with _LOCK:
        for uid in uids:
            _CORES.pop(uid, None)


def pin(pids, core: int | None) -> None:
    """Run each of ``pids`` on ``core`` (None: leave them as they are). Best effort: a process that is
    gone or refuses is left as it is."""
    if core is None:
        return
    for pid in pids:
        try:
            os.sched_setaffinity(pid, {core})
        except OSError:
            pass
