"""Iterators, a test's own mappings and callables across the harness/candidate boundary (issue 13).

Real suites (more-itertools, toolz) pass iterators whose position the test keeps using, consume
infinite or shared (``groupby``) iterators lazily, hand the code their own ``Mapping`` classes and
let it inspect their callables. All of it must behave as in one process; what a call back may read
of the harness's objects stays limited to a test object's public attributes.
"""

from __future__ import annotations

from sdk.sandbox import ExecRequest, ExecStatus
from tests.sandbox.conftest import FAST

SOLUTION = '''
import inspect
import itertools
from collections.abc import Mapping


def take(n, iterable):
    return list(itertools.islice(iterable, n))


def count_from(start):
    while True:
        yield start
        start += 1


def runs(xs):
    return itertools.groupby(xs)


def merge(*dicts, factory=dict):
    if len(dicts) == 1 and not isinstance(dicts[0], Mapping):
        dicts = dicts[0]
    rv = factory()
    for d in dicts:
        rv.update(d)
    return rv


def arity(fn):
    return fn.__name__, len(inspect.signature(fn).parameters)


def plain_iterator(xs):
    return iter(xs)


def count(seq):
    if hasattr(seq, "__len__"):
        return len(seq)
    return sum(1 for _ in seq)


def probe(obj):
    got = []
    for reach in (lambda: obj.mod, lambda: obj._secret, lambda: obj.mod.system,
                  lambda: obj.method.__self__, lambda: obj.method.__func__.__globals__):
        try:
            got.append(type(reach()).__name__)
        except AttributeError:
            pass
    return got
'''

TESTS = '''
import itertools
import os
from collections.abc import Mapping
from functools import partial

from pkg.tools import arity, count, count_from, merge, plain_iterator, probe, runs, take


def test_position_of_the_tests_iterator_is_shared():
    it = iter("ABCDEFG")
    assert take(2, it) == ["A", "B"]
    assert next(it) == "C"
    assert list(iter(partial(take, 2, it), [])) == [["D", "E"], ["F", "G"]]


def test_a_tests_iterator_has_no_length():
    assert count(iter((1, 2, 3))) == 3 and count(x for x in "ab") == 2 and count([1]) == 1


def test_infinite_generator_is_consumed_lazily():
    gen = count_from(3)
    assert list(itertools.islice(gen, 4)) == [3, 4, 5, 6]
    assert next(gen) == 7


def test_groupby_groups_keep_their_elements():
    assert [(k, list(g)) for k, g in runs("aabccc")] == [("a", ["a", "a"]), ("b", ["b"]), ("c", ["c", "c", "c"])]


class Frozen(Mapping):
    def __init__(self, d):
        self.d = d

    def __iter__(self):
        return iter(self.d)

    def __getitem__(self, key):
        return self.d[key]

    def __len__(self):
        return len(self.d)


class Box:
    def __init__(self):
        self._d = {}

    def update(self, other):
        self._d.update(other)

    def __eq__(self, other):
        return isinstance(other, Box) and self._d == other._d


def test_a_tests_own_mapping_and_factory():
    assert merge(Frozen({1: 1})) == {1: 1}
    box = merge({1: 2}, Frozen({3: 4}), factory=Box)
    assert isinstance(box, Box) and box._d == {1: 2, 3: 4}


def test_a_tests_callable_keeps_its_name_and_signature():
    def add(x, y, *rest, k=1):
        return x + y
    assert arity(add) == ("add", 4)


def test_a_plain_iterator_of_the_solution():
    it = plain_iterator([1, 2, 3])
    assert next(it) == 1
    assert list(it) == [2, 3]


class Holder:
    mod = os
    _secret = "s"

    def method(self):
        return 1


def test_nothing_of_the_harness_is_reached_through_a_tests_object():
    assert probe(Holder()) == []
'''


def test_iterators_mappings_and_callables_cross_as_in_one_process(sandbox):
    res = sandbox.run_one(ExecRequest(solution=SOLUTION, tests={"tests/test_tools.py": TESTS}, limits=FAST,
                                      files={"pkg/__init__.py": ""}, target_path="pkg/tools.py"))
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests if t.outcome != "passed"])
    assert len(res.tests) == 8 and not res.flags


FROZEN_TESTS = '''
import sys
import time

from pkg.tools import take

REAL = time.monotonic


def test_under_a_faked_clock_the_solution_still_answers():
    fake = lambda: 1.6e9   # what freezegun's freeze_time("2020-...") makes of time.monotonic
    patched = [(m, n) for m in list(sys.modules.values()) for n in list(getattr(m, "__dict__", {}))
               if getattr(m, "__dict__", {}).get(n) is REAL]
    for m, n in patched:
        setattr(m, n, fake)
    try:
        assert take(2, [1, 2, 3]) == [1, 2]
    finally:
        for m, n in patched:
            setattr(m, n, REAL)
'''


def test_a_test_that_fakes_the_clock_like_freezegun(sandbox):
    res = sandbox.run_one(ExecRequest(solution=SOLUTION, tests={"tests/test_frozen.py": FROZEN_TESTS}, limits=FAST,
                                      files={"pkg/__init__.py": ""}, target_path="pkg/tools.py"))
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests])
