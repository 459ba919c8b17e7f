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
MODS: list = []   # the tl.mod events' args (a guarded test module asked about), likewise
sys.addaudithook(lambda event, args: MODS.append(args) if RECORDING and event == "tl.mod" else None)


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
    import _imp
    import _signal
    kept, got, maker = (_signal.signal, _signal.getsignal), [], _imp.create_builtin
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
        _imp.create_builtin = maker


@pytest.mark.parametrize("route", ["import_module", "module_from_spec", "create_builtin", "fresh_imp"])
def test_a_signal_module_made_afresh_is_the_wrapped_one(rg, route):
    """Every way to make ``_signal`` afresh (all go through ``_imp.create_builtin``) hands back the loaded
    module, whose ``signal`` is the wrapper; other builtin modules are still made."""
    import _imp
    import _signal
    from importlib.machinery import BuiltinImporter
    from importlib.util import module_from_spec
    kept, maker = (_signal.signal, _signal.getsignal), _imp.create_builtin
    try:
        rg.signals()
        wrapped = _signal.signal
        if route == "import_module":
            sys.modules.pop("_signal")
            try:
                fresh = importlib.import_module("_signal")
            finally:
                sys.modules["_signal"] = _signal
        elif route == "module_from_spec":
            fresh = module_from_spec(BuiltinImporter.find_spec("_signal"))
        elif route == "create_builtin":
            fresh = _imp.create_builtin(type("Spec", (), {"name": "_signal"})())
        else:
            sys.modules.pop("_imp")
            try:
                fresh = importlib.import_module("_imp").create_builtin(BuiltinImporter.find_spec("_signal"))
            finally:
                sys.modules["_imp"] = _imp
        assert fresh is _signal and fresh.signal is wrapped
        other = next(n for n in sys.builtin_module_names if n not in sys.modules and n not in ("_signal", "_imp"))
        assert module_from_spec(BuiltinImporter.find_spec(other)).__name__ == other
    finally:
        _signal.signal, _signal.getsignal = kept
        _imp.create_builtin = maker


def test_withhold_guards_the_test_modules_for_the_call_and_undo_puts_them_back(seen, tmp_path):
    """A module whose file lies in the tests folder: during the call its class asks (``tl.mod``) before
    any attribute outside the open dunders, however the module was reached; no hook says yes here, so
    every read is refused. ``undo`` restores its class; a module outside the folder is left alone."""
    MODS.clear()
    sys.path.insert(0, RUNNER)
    try:
        rmods = importlib.import_module("tl_rmods")
        importlib.import_module("tl_rhide")   # tl_rmods.asker imports it at call time (run alone: not loaded yet)
    finally:
        sys.path.remove(RUNNER)
    import types
    pkg, mod, other = types.ModuleType("tlpkg"), types.ModuleType("tlpkg.test_a"), types.ModuleType("tlother")
    mod.__file__, mod.EXPECTED, other.__file__, other.X = str(tmp_path / "tests" / "test_a.py"), 6, "/elsewhere.py", 1
    pkg.test_a = mod
    sys.modules.update({"tlpkg": pkg, "tlpkg.test_a": mod, "tlother": other})
    try:
        undo = rmods.withhold(str(tmp_path) + os.sep)
        kept = sys.modules["tlpkg.test_a"]
        assert kept is mod and kept.__file__ == mod.__file__ and other.X == 1 and type(other) is types.ModuleType
        for read in (lambda: kept.EXPECTED, lambda: pkg.test_a.EXPECTED, lambda: vars(kept)["EXPECTED"],
                     lambda: importlib.import_module("tlpkg.test_a").EXPECTED):
            with pytest.raises((AttributeError, TypeError, KeyError)):   # vars(): a dict without EXPECTED
                read()
        with pytest.raises(AttributeError):
            mod.EXPECTED = 7
        assert getattr(mod, "EXPECTED", None) is None
        assert ("get", "EXPECTED") in MODS and ("peek", "__dict__") in MODS and ("set", "EXPECTED") in MODS
        undo()
        assert type(mod) is types.ModuleType and mod.EXPECTED == 6
    finally:
        for name in ("tlpkg", "tlpkg.test_a", "tlother"):
            sys.modules.pop(name, None)


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
