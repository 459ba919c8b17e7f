"""One core per warm slot (sdk/sandbox/cores.py, issue 14's throughput): which core a slot gets, and
that a warm task really runs there, while a task can still move only itself."""

from __future__ import annotations

import os

import pytest

from sdk.sandbox import cores
from tests.sandbox.conftest import bubblewrap_or_skip
from tests.sandbox.test_hostile import probe

CPUS = sorted(os.sched_getaffinity(0))


@pytest.fixture
def fresh(monkeypatch):
    """An empty core table with pinning on (the module's table is process-wide)."""
    monkeypatch.setattr(cores, "_CORES", {})
    monkeypatch.setattr(cores, "PIN_SLOTS", True)


def test_each_slot_gets_its_own_core_while_they_go_round(fresh):
    got = [cores.take(uid) for uid in range(50000, 50000 + len(CPUS))]
    assert got == CPUS
    assert cores.take(50000) == CPUS[0]   # the same slot keeps its core
    assert cores.take(60000) is None   # more slots than cores: that one floats


def test_a_core_given_back_goes_to_the_next_slot(fresh):
    first = cores.take(50000)
    assert first == CPUS[0]
    cores.give_back([50000, 12345])   # an unknown uid is ignored
    assert cores.take(50001) == first


def test_no_leased_uid_or_pinning_off_floats(fresh, monkeypatch):
    assert cores.take(None) is None
    monkeypatch.setattr(cores, "PIN_SLOTS", False)
    assert cores.take(50000) is None
    cores.pin([os.getpid()], None)   # None leaves the process alone
    assert sorted(os.sched_getaffinity(0)) == CPUS


def test_a_warm_task_runs_on_its_slot_s_core_and_moves_only_itself(fresh):
    if os.geteuid() != 0:
        pytest.skip("slots have leased uids (and cores) only when the caller is root")
    sb = bubblewrap_or_skip(1)
    try:
        core = cores.take(sb.uids[0])   # what the slot's server is pinned to when it starts
        assert core == CPUS[0]
        first = sb.run_one(probe("import os\nreturn sorted(os.sched_getaffinity(0))", f"assert r == [{core}], r"))
        assert first.status.value == "ok", (first.detail[:300], first.stdout[-300:])
        others = [c for c in CPUS if c != core]
        if others:   # a task moving itself elsewhere leaves the next task on the slot's core
            moved = sb.run_one(probe(f"import os\nos.sched_setaffinity(0, {{{others[0]}}})\nreturn sorted(os.sched_getaffinity(0))",
                                     f"assert r == [{others[0]}], r"))
            assert moved.status.value == "ok", (moved.detail[:300], moved.stdout[-300:])
        again = sb.run_one(probe("import os\nreturn sorted(os.sched_getaffinity(0))", f"assert r == [{core}], r"))
        assert again.status.value == "ok", (again.detail[:300], again.stdout[-300:])
    finally:
        sb.close()
