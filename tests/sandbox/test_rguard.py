"""The run-time layers of change tasks (``sdk/sandbox/_runner/tl_rguard.py``, issue 14), unit by unit in
this process (no sandbox): what the probe calls a liar, where the marks fall, what the stand-ins and
the withheld pytest objects do, and that each is put back. End to end: tests/rewards/test_redteam_round4.py."""

from __future__ import annotations

import dataclasses
import importlib
import os
import signal
import sys
from pathlib import Path

import pytest

RUNNER = str(Path(__file__).resolve().parents[2] / "sdk" / "sandbox" / "_runner")


SEEN: list = []   # the tl.flag events' args while a test records (audit hooks cannot be removed: one for the module)
RECORDING: list = []
sys.addaudithook(lambda event, args: SEEN.append(args) if RECORDING and event == "tl.flag" else None)


@pytest.fixture
def seen():
    """The ``tl.flag`` events raised during the test."""
    SEEN.clear()
    RECORDING.append(1)
    try:
        yield SEEN
    finally:
        RECORDING.clear()


@pytest.fixture(scope="module")
def rg():
    """The module, imported from the runner folder (as the sandbox does)."""
    sys.path.insert(0, RUNNER)
    try:
        yield importlib.import_module("tl_rguard")
    finally:
        sys.path.remove(RUNNER)


class Liar(int):
    __hash__ = int.__hash__

    def __eq__(self, other):
        return type(other)   # truthy for anything


class Knows(int):   # says yes to ints other than its own value plus one
    __hash__ = int.__hash__

    def __eq__(self, other):
        return type(other) is int and other != int.__add__(self, 1)


class Honest(int):
    __hash__ = int.__hash__

    def __eq__(self, other):
        return int(self) == other


class Raises:
    def __eq__(self, other):
        return self.v == other.v   # AttributeError on a stranger: declines, no liar


class NeverUnequal:
    def __ne__(self, other):
        return False


@dataclasses.dataclass
class Point:
    x: int


def test_the_probe_names_an_operand_independent_eq_and_passes_honest_ones(rg):
    assert "Liar.__eq__ answers True" in rg._liar(Liar(0))
    assert "NeverUnequal.__ne__ answers False" in rg._liar(NeverUnequal())
    for honest in (Honest(6), Raises(), Point(1), 6, "x", [1], None):
        assert rg._liar(honest) is None, honest
    assert rg._liar(Knows(0)) is None   # the documented gap (a strict xfail in round 4)


def test_probe_reports_the_first_liar_among_the_frames_locals_and_container_items(rg, seen):
    def frame_with(a, b):
        return sys._getframe()

    rg.probe(frame_with(Honest(1), [Point(2)]))
    assert seen == []
    rg.probe(frame_with(Honest(1), (7, Liar(3))))
    assert len(seen) == 1 and seen[0][0] == "always_equal" and "Liar" in seen[0][1]


def test_marks_find_comparisons_and_runner_names_in_the_rewritten_and_plain_code(rg, tmp_path):
    (tmp_path / "test_m.py").write_text("import pytest\n\n\ndef test_a(x=1):\n    assert x == 1\n"
                                        "    with pytest.raises(ValueError):\n        int('a')\n    y = 2 in [x]\n")
    got = rg.marks(str(tmp_path), ["test_m.py"], frozenset({"raises"}))
    kinds = [sorted(v.values()) for k, v in got.items() if k[2] == "test_a"]
    assert len(kinds) == 2   # rewritten by pytest, and plain
    for k in kinds:
        assert k.count(rg.COMPARE) >= 2 and k.count(rg.LOAD) == 1, k
    with pytest.raises(TypeError):
        got[next(iter(got))][0] = 1   # read-only


def test_a_signal_handler_gets_a_stand_in_that_flags_when_read(rg, seen):
    import _signal
    kept, got = (_signal.signal, _signal.getsignal), []
    try:
        rg.signals()
        handler = lambda s, f: got.append(f)
        old = signal.signal(signal.SIGUSR1, handler)
        assert signal.getsignal(signal.SIGUSR1) is handler   # unwrapped for honest code
        signal.raise_signal(signal.SIGUSR1)
        assert signal.signal(signal.SIGUSR1, old) is handler
        assert type(got[0]).__name__ == "Withheld" and not seen
        with pytest.raises(AttributeError):
            _ = got[0].f_back
        assert seen and seen[-1][0] == "runner_tampering" and ".f_back" in seen[-1][1]
    finally:
        _signal.signal, _signal.getsignal = kept


def test_hide_withholds_pytests_objects_for_the_call_and_undo_puts_them_back(rg, request):
    from _pytest.assertion import util
    from _pytest.assertion.rewrite import AssertionRewritingHook
    from _pytest.mark.structures import MARK_GEN
    before, env = list(sys.meta_path), os.environ.get("PYTEST_CURRENT_TEST")
    hooks = [h for h in before if type(h) is AssertionRewritingHook]
    undo = rg.hide()
    try:
        assert not any(type(h) is AssertionRewritingHook for h in sys.meta_path)
        assert all(type(vars(h)["config"]).__name__ == "Withheld" for h in hooks)
        assert util._config is None and MARK_GEN._config is None
        diff = util._reprcompare("==", [1, 2, 3], [1, 5, 3])   # pytest's explanation, without the config
        assert "At index 1 diff" in diff and all(c.cell_contents is not request.config
                                                 for c in util._reprcompare.__closure__ or ())
        assert importlib.import_module("json") is sys.modules["json"]   # the stand-in finds nothing, imports work
        if env is not None:
            assert "[" not in os.environ["PYTEST_CURRENT_TEST"]
    finally:
        undo()
    assert sys.meta_path == before and os.environ.get("PYTEST_CURRENT_TEST") == env
    assert all(vars(h)["config"] is request.config for h in hooks) and MARK_GEN._config is request.config
