"""Shadow comparisons of change tasks' test files (``sdk/sandbox/_runner/tl_shadow.py``, issue 14), unit by
unit in this process (no sandbox): the AST pass, the canonical data, what is flagged and what is not, and
the exempt sites. End to end: tests/rewards/test_redteam_round5.py and test_redteam_round4.py."""

from __future__ import annotations

import ast
import dataclasses
import fractions
import functools
import gc
import importlib
import sys
import sysconfig
from pathlib import Path
from unittest import mock

import pytest

RUNNER = str(Path(__file__).resolve().parents[2] / "sdk" / "sandbox" / "_runner")


@pytest.fixture(scope="module")
def sh():
    """The module, imported from the runner folder (as the sandbox does)."""
    sys.path.insert(0, RUNNER)
    try:
        yield importlib.import_module("tl_shadow")
    finally:
        sys.path.remove(RUNNER)


@pytest.fixture
def shadow(sh):
    """``(shadow, check_assert, flags)``: the helpers with a recording flag function; library folders
    are the standard library and this interpreter's site-packages (this test module is none of them)."""
    flags: list = []
    libs = tuple(str(Path(sysconfig.get_paths()[k]).resolve()) + "/" for k in ("stdlib", "purelib"))
    libs += tuple(p.rstrip("/") + "/" for p in sys.path if p and any(str(Path(p).resolve()) + "/" == x for x in libs))
    kind = sh.classifier(libs, RUNNER + "/tl_", "/nonexistent-tests/")
    s, a = sh.helper(kind, frozenset({"t.py:9:9"}), flag=lambda *args: flags.append(args[1:]))
    return s, a, flags


class Liar(int):
    __hash__ = int.__hash__

    def __eq__(self, other):
        return True


class Honest(int):
    __hash__ = int.__hash__

    def __eq__(self, other):
        return int(self) == other


class Plain:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, int)

    __hash__ = object.__hash__


@dataclasses.dataclass
class Point:
    x: int
    y: int


def test_the_pass_rewrites_comparisons_arithmetic_and_asserts_inside_functions_only(sh):
    src = ("X = 1 == 1\n\n\ndef test_a(self):\n    assert [k for k in (1,) if k in (1, 2)] == [1]\n"
           "    self.assertEqual(1 + 1, 2, msg='m')\n    f = lambda: 2 * 3 < 7\n")
    out = ast.unparse(sh.transform(ast.parse(src), "t.py")).replace(repr(sh.SLOTS[0]), "S").replace(repr(sh.SLOTS[1]), "A")
    assert out.startswith("X = 1 == 1")   # module level: untouched
    assert "S('t.py:5:31', 6, k, (1, 2))" in out and "S('t.py:7:16', 10, 2, 3)" in out
    assert "A('t.py:6:4', 0, self.assertEqual, S('t.py:6:21', 8, 1, 1), 2, (), {'msg': 'm'})" in out
    calls: list = []

    def helper(site, op, a, b):
        calls.append(site)
        return sh.OPS[op](a, b)
    ns: dict = {"__tl_shadow__": lambda *a: False}   # a rebound name changes nothing: the code holds the helper
    tree = sh.transform(ast.parse("def f():\n    return [1 + 1, 2 < 3, 4 in (4,), 'a' != 'b']\n"), "t.py")
    exec(sh.compiled(tree, "t.py", (helper, None)), ns)  # noqa: S102 - the pass's output, run
    assert ns["f"]() == [2, True, True, True] and len(calls) == 4


def test_a_yes_that_the_canonical_values_contradict_is_flagged(shadow):
    s, _, flags = shadow
    assert s("t.py:1:1", 0, Liar(5), 6) is True and flags[-1][0] == "always_equal" and "t.py:1:1" in flags[-1][1]
    for op, left, right in ((0, [(2, Liar(5))], [(2, 6)]), (0, {"k": Liar(5)}, {"k": 6}), (0, Plain(5), 6),
                            (6, Liar(5), [6])):
        flags.clear()
        assert s("t.py:2:2", op, left, right) and flags, (op, left, right)
    flags.clear()
    assert s("t.py:3:3", 0, Liar(5), pytest.approx(6)) and flags   # approx judged on the canonical 5


def test_arithmetic_that_the_canonical_values_contradict_is_flagged(shadow):
    s, _, flags = shadow

    class Sub(int):
        def __sub__(self, other):
            return 0

    assert s("t.py:1:1", 9, Sub(5), 6) == 0 and flags
    flags.clear()
    assert s("t.py:1:1", 9, Honest(5), 6) == -1 and s("t.py:1:1", 11, Honest(6), 4) == 1.5 and not flags


def test_honest_values_are_not_flagged(shadow):
    s, _, flags = shadow
    p = Point(1, 2)
    cases = [(0, Honest(6), 6), (0, [Honest(6)], [6]), (0, p, p), (0, Point(1, 2), Point(1, 2)),
             (0, fractions.Fraction(6), 6), (0, Honest(6), pytest.approx(6)), (1, Point(1, 2), Point(1, 3)),
             (0, float("nan"), float("nan")), (2, Honest(1), 2), (6, Honest(2), [1, 2]), (0, (1, 2), [1, 2])]
    for op, left, right in cases:
        s("t.py:4:4", op, left, right)
    assert not flags, flags


class Curried:
    """toolz's curry in small: a partial inside, equal by function, arguments and keywords."""

    def __init__(self, f, *args):
        self._partial = functools.partial(f, *args)

    def __eq__(self, other):
        return isinstance(other, Curried) and self._partial.func == other._partial.func \
            and self._partial.args == other._partial.args

    __hash__ = object.__hash__


class Composed:
    """toolz's Compose in small: NotImplemented for a stranger, so the stranger's own == decides."""

    def __init__(self, *funcs):
        self.funcs = funcs

    def __eq__(self, other):
        return self.funcs == other.funcs if isinstance(other, Composed) else NotImplemented

    __hash__ = object.__hash__


def test_equal_partials_and_a_library_objects_own_answer_are_honest(shadow):
    """Two equal partials are equal canonically (not opaque by identity), and a repository object met by
    a library or test object (``mock.ANY``, a test's AlwaysEquals) gets that object's own answer: toolz's
    test_curry_comparable and test_compose_metadata were flagged for both. A lie inside a partial stays flagged."""
    s, _, flags = shadow
    for op, left, right in ((0, Curried(max, 1), Curried(max, 1)), (1, Curried(max, 1), Curried(max, 2)),
                            (0, functools.partial(max, 1), functools.partial(max, 1)),
                            (0, Composed(max), mock.ANY), (1, Composed(max), mock.ANY), (0, Point(1, 2), mock.ANY)):
        s("t.py:5:5", op, left, right)
    assert not flags, flags
    assert s("t.py:5:5", 0, Curried(max, Liar(5)), Curried(max, 6)) and flags


def test_a_canonical_walk_leaves_no_garbage_cycle(sh):
    """Each walk's recursive closure is let go when it ends: before, every comparison left a cycle, and
    a call-dense test ran the collector ~20 times per 1000 comparisons (a full collection now and then)."""
    canon = sh.canonical(lambda t: "object")
    gc.collect()
    gc.disable()
    try:
        for _ in range(50):
            canon((Point(1, 2), [Point(3, 4)], {"k": Curried(max, 1)}))
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_the_helpers_hold_their_state_in_defaults_only(shadow):
    """No closure cell (its contents are rewritable without an audited event) and no global or builtin
    looked up by name, in the helpers or any function their defaults hold (a rebound default is flagged)."""
    import dis
    import types

    seen, todo = set(), list(shadow[:2])
    while todo:
        f = todo.pop()
        if id(f) in seen or not f.__module__.startswith("tl_"):   # the fixture's flag recorder is a test's
            continue
        seen.add(id(f))
        assert f.__closure__ is None, f.__name__
        codes = [f.__code__]
        while codes:
            code = codes.pop()
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
            loads = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
            assert not loads, (f.__name__, code.co_name, loads)
        todo += [d for d in f.__defaults__ or () if type(d) is types.FunctionType]
    assert len(seen) >= 8


def test_an_identity_equality_saying_different_is_honest(shadow):
    s, _, flags = shadow

    class Ident:
        pass

    assert s("t.py:1:1", 0, Ident(), Ident()) is False and s("t.py:1:1", 1, Ident(), Ident()) is True and not flags


def test_an_elementwise_answer_is_checked_element_by_element(shadow):
    s, _, flags = shadow

    class Answer(list):
        def __bool__(self):
            raise ValueError("ambiguous")

    class Arr(list):
        __hash__ = None

        def __eq__(self, other):
            return Answer(x == other for x in self)

    assert list(s("t.py:1:1", 0, Arr([6, 7]), 6)) == [True, False] and not flags

    class Lying(Arr):
        def __eq__(self, other):
            return Answer(True for _ in self)

    s("t.py:1:1", 0, Lying([5]), 6)
    assert flags


def test_unittest_asserts_are_shadowed_after_the_real_assertion(shadow):
    import unittest
    _, a, flags = shadow
    case = unittest.TestCase()
    a("t.py:1:1", 0, case.assertEqual, Liar(5), 6, (), {})
    assert flags
    flags.clear()
    a("t.py:1:1", 12, case.assertAlmostEqual, Honest(6), 6.00000001, (), {})
    a("t.py:1:1", 6, case.assertIn, Honest(6), [6], (), {})
    assert not flags
    with pytest.raises(AssertionError):
        a("t.py:1:1", 0, case.assertEqual, 5, 6, (), {})


def test_an_exempt_site_is_not_flagged(shadow):
    s, _, flags = shadow
    assert s("t.py:9:9", 0, Plain(5), 6) is True and not flags


def test_the_budget_gives_no_opinion(shadow, sh):
    s, _, flags = shadow
    big = [Liar(5)] * (sh.BUDGET + 1)
    s("t.py:1:1", 0, big, [6] * len(big))
    assert not flags   # past the budget: no opinion (documented in tl_shadow)
