"""A warm slot's clean-up runs beside the caller, never before a task sees the slot (issue 14).

The supervisor's answer (``R``) ends a warm request for the caller; the server's ``D`` (everything of
the request killed and reaped, ``/tmp`` and ``/dev/shm`` wiped and remade by the root helper, which
the server asks directly, the next candidate forked) is read before the slot's next request
(:meth:`sdk.sandbox.warm.Zygote.settle`). These tests check both halves: the caller is not held
for the clean-up, and the next task still finds a clean slot, or a fresh one.
"""

from __future__ import annotations

import os
import time

import pytest

from sdk.sandbox import ExecStatus, warm
from tests.sandbox.conftest import bubblewrap_or_skip
from tests.sandbox.test_hostile import probe


@pytest.fixture
def one_slot():
    """A bubblewrap sandbox with one slot (so every request lands on the same warm server)."""
    sb = bubblewrap_or_skip(1)
    yield sb
    assert sb.stray_processes() == []
    sb.close()


def _frames(monkeypatch) -> list:
    """The first byte of every line the host reads from a warm server from now on (None: none came)."""
    seen: list = []
    line = warm.Zygote._line

    def spy(self, deadline):
        got = line(self, deadline)
        seen.append(None if got is None else got[:1])
        return got

    monkeypatch.setattr(warm.Zygote, "_line", spy)
    return seen


def test_the_answer_returns_before_the_clean_up_and_the_next_task_finds_it_done(one_slot, monkeypatch):
    assert one_slot.run_one(probe("return 1", "assert r == 1")).status == ExecStatus.OK   # the server is up
    seen = _frames(monkeypatch)
    writer = probe("import os\nopen('/tmp/left.txt', 'w').write('x')\nos.mkdir('/dev/shm/d')\nreturn 2", "assert r == 2")
    assert one_slot.run_one(writer).status == ExecStatus.OK
    seen[:] = [f for f in seen if f]   # (a D line starts on a fresh line: the empty one before it)
    assert seen == [b"D", b"R"]   # the first request's D, then this one's R: no D waited for after it
    reader = probe("import os\nreturn sorted(os.listdir('/tmp')), os.listdir('/dev/shm')", "assert r == (['run'], []), r")
    res = one_slot.run_one(reader)
    assert res.status == ExecStatus.OK, (res.detail[:300], res.stdout[-300:])
    assert [f for f in seen if f] == [b"D", b"R", b"D", b"R"]   # D read before the next request; no S: no host relay


def test_a_slot_that_breaks_after_its_answer_is_replaced_and_the_next_task_not_blamed(one_slot):
    assert one_slot.run_one(probe("return 1", "assert r == 1")).status == ExecStatus.OK
    servers = one_slot.backend.warm._servers
    [server] = servers.values()
    killed, deadline = set(), time.monotonic() + 5
    while not killed and time.monotonic() < deadline:   # a /proc scan can miss it while the slot is cleaning up
        killed = server.server_process()
    assert killed, "the warm server's Python process was not found under bwrap"
    for pid in killed:   # the Python server itself: the slot breaks after the answer
        os.kill(pid, 9)
    res = one_slot.run_one(probe("return 2", "assert r == 2"))
    assert res.status == ExecStatus.OK, res.detail[:300]
    assert list(servers.values()) != [server]


def test_a_slot_whose_clean_up_failed_serves_no_one(one_slot, monkeypatch):
    """A ``D`` saying the slot is not clean (here: a forged one in the host's buffer, as if the wipe had
    failed) drops the server before the next task; the next task runs on a fresh one."""
    assert one_slot.run_one(probe("return 1", "assert r == 1")).status == ExecStatus.OK
    servers = one_slot.backend.warm._servers
    [server] = servers.values()
    assert server.settle()   # the real D (clean) is read here ...
    server._pending = True   # ... and a failed clean-up's D stands in for it
    server._buf = b'D {"exit": 0, "timed_out": false, "clean": false}\n' + server._buf
    res = one_slot.run_one(probe("return 2", "assert r == 2"))
    assert res.status == ExecStatus.OK, res.detail[:300]
    assert list(servers.values()) != [server] and not server.alive()
