"""Idioms of real test suites across the harness/candidate boundary (issue 13).

Each idiom failed for honest code under the two-process harness (issue 14) while it works in one
process: ``pytest.raises(mod.OwnError)`` (the solution's exception classes were no classes in the
harness), ``f.__name__``/``f.__doc__``/``f.__module__`` of the solution's functions, a class of
the solution used as a method descriptor. Each test also checks that a wrong solution still fails.
"""

from __future__ import annotations

from sdk.sandbox import ExecRequest, ExecStatus
from tests.sandbox.conftest import FAST

ERRORS = '''
class ShapeError(ValueError):
    """Raised when the shapes differ."""


class RaggedError(ShapeError):
    pass


def check(a, b):
    if len(a) != len(b):
        raise RaggedError("lengths %d and %d differ" % (len(a), len(b)))
    return True


def fails_with(exc_class, fn, *args):
    try:
        fn(*args)
    except exc_class:
        return True
    return False
'''

ERROR_TESTS = '''import pytest

import solution
from solution import RaggedError, ShapeError, check, fails_with


def test_raises_own_class():
    with pytest.raises(ShapeError, match="lengths 1 and 2"):
        check([1], [1, 2])


def test_except_own_subclass():
    try:
        check([1], [])
    except solution.RaggedError as exc:
        assert isinstance(exc, ValueError) and exc.args == ("lengths 1 and 0 differ",)
    else:
        raise AssertionError("no error")


def test_own_class_passed_to_the_solution():
    assert fails_with(RaggedError, check, [1], [])


def test_no_error():
    assert check([1], [2]) is True
'''


def _run(sandbox, solution: str, tests: str):
    return sandbox.run_one(ExecRequest(solution=solution, tests={"test_errors.py": tests}, limits=FAST))


def test_the_solutions_exception_classes_are_classes_in_the_tests(sandbox):
    res = _run(sandbox, ERRORS, ERROR_TESTS)
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests])
    assert len(res.tests) == 4 and not res.flags


def test_a_wrong_exception_still_fails(sandbox):
    res = _run(sandbox, ERRORS.replace('raise RaggedError("lengths', 'raise TypeError("lengths'), ERROR_TESTS)
    outcomes = {t.name.rsplit("::", 1)[1]: t.outcome for t in res.tests}
    assert outcomes == {"test_raises_own_class": "failed", "test_except_own_subclass": "failed",
                        "test_own_class_passed_to_the_solution": "failed", "test_no_error": "passed"}


META = '''
import sys


def documented(x):
    """Return ``x`` twice."""
    return x, x


def where(fn):
    module = sys.modules.get(fn.__module__)
    return fn.__module__, fn.__qualname__, module is None
'''

META_TESTS = '''from solution import documented, where


def test_name_doc_module():
    assert documented.__name__ == "documented" and documented.__qualname__ == "documented"
    assert documented.__doc__ == "Return ``x`` twice."
    assert documented.__module__ == "solution"


def test_a_test_callable_seen_by_the_solution():
    assert where(lambda: 0) == ("test_meta", "test_a_test_callable_seen_by_the_solution.<locals>.<lambda>", True)
'''


def test_names_docs_and_modules_cross_as_in_one_process(sandbox):
    res = sandbox.run_one(ExecRequest(solution=META, tests={"test_meta.py": META_TESTS}, limits=FAST))
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests])
    assert not res.flags   # the solution never met the runner's module names (tl_cvalues was reported)
    wrong = sandbox.run_one(ExecRequest(solution=META.replace('"""Return ``x`` twice."""', '"""Twice."""'),
                                        tests={"test_meta.py": META_TESTS}, limits=FAST))
    assert [t.outcome for t in wrong.tests] == ["failed", "passed"]


HELPERS = '''
def double(x):
    return 2 * x
'''

OBJECTS = '''
import inspect
import pickle

import helpers


class Box:
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, Box) and other.value == self.value

    def __hash__(self):
        return hash(self.value)


class Method:
    """A descriptor class, as toolz's ``curry``: bound to the instance it is read from."""

    def __init__(self, fn):
        self.fn = fn

    def __get__(self, obj, owner=None):
        return self if obj is None else (lambda *args: self.fn(obj, *args))


def same(x):
    return x


def table():
    return {"double": helpers.double, "module": helpers}


def signature(fn):
    return inspect.signature(fn)


def first_or(xs, default):
    for x in xs:
        return x
    return default
'''

OBJECT_TESTS = '''import inspect
import pickle

import helpers
from solution import Box, Method, first_or, same, signature, table


class AlwaysEquals:
    def __eq__(self, other):
        return True


def test_identity_of_handles_and_sentinels():
    box = Box(1)
    assert same(box) is box
    assert pickle.loads(pickle.dumps(same)) is same
    start = object()
    assert first_or([], start) is start


def test_repository_globals_come_back_as_themselves():
    got = table()
    assert got["double"] is helpers.double and got["module"] is helpers


def test_isinstance_and_binding():
    box = Box(2)
    assert isinstance(box, Box) and not isinstance(2, Box) and issubclass(Box, Box)

    class Holder:
        base = 10
        add = Method(lambda self, x: self.base + x)

    assert Holder().add(5) == 15


def test_signature_by_value_and_the_tests_own_equality():
    sig = signature(lambda a, b=1: None)
    assert isinstance(sig, inspect.Signature) and list(sig.parameters) == ["a", "b"]
    assert Box(3) == AlwaysEquals()
'''


def test_objects_cross_as_in_one_process(sandbox):
    req = ExecRequest(solution=OBJECTS, tests={"test_objects.py": OBJECT_TESTS}, files={"helpers.py": HELPERS},
                      limits=FAST)
    res = sandbox.run_one(req)
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests])
    assert len(res.tests) == 4 and not res.flags
    wrong = sandbox.run_one(req.model_copy(update={"solution": OBJECTS.replace("return x\n", "return Box(x)\n", 1)
                                                   .replace("return default", "return object()")}))
    outcomes = {t.name.rsplit("::", 1)[1]: t.outcome for t in wrong.tests}
    assert outcomes["test_identity_of_handles_and_sentinels"] == "failed"


# A stand-in for freezegun (the real one is a test dependency, not installed here): patches time.time.
FAKE_FREEZEGUN = '''import datetime
import time


class freeze_time:
    def __init__(self, when, tz_offset=None):
        if isinstance(when, str):
            when = datetime.datetime.fromisoformat(when)
        self.epoch = when.replace(tzinfo=datetime.timezone.utc).timestamp()

    def __enter__(self):
        self.real, time.time = time.time, lambda: self.epoch
        return self

    def __exit__(self, *exc):
        time.time = self.real
'''

CLOCK = '''
import time


def stamp():
    return time.time()
'''

CLOCK_TESTS = '''from freezegun import freeze_time
from solution import stamp


def test_the_solution_sees_the_frozen_clock():
    with freeze_time("2020-02-02"):
        assert stamp() == 1580601600.0
    assert stamp() > 1.7e9
'''


def test_a_clock_frozen_by_the_test_is_frozen_for_the_solution(sandbox):
    req = ExecRequest(solution=CLOCK, tests={"test_clock.py": CLOCK_TESTS}, files={"freezegun.py": FAKE_FREEZEGUN},
                      limits=FAST)
    res = sandbox.run_one(req)
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests])
    wrong = sandbox.run_one(req.model_copy(update={"solution": CLOCK.replace("time.time()", "time.time() + 60")}))
    assert [t.outcome for t in wrong.tests] == ["failed"]


REGISTRY = '''
HANDLERS = {}
_hidden = 1


def handler(key):
    return HANDLERS.get(key, "none")
'''

REGISTRY_TESTS = '''import solution
from solution import HANDLERS, handler


class Key:
    pass


def test_a_registry_filled_by_the_test_is_the_solutions():
    HANDLERS["a"] = "alpha"
    HANDLERS[Key] = "class"
    assert handler("a") == "alpha" and handler(Key) == "class" and "a" in HANDLERS
    del HANDLERS["a"]
    assert handler("a") == "none"


def test_vars_of_the_solution_module():
    names = vars(solution)
    assert {"HANDLERS", "_hidden", "handler"} <= set(names) and names["__name__"] == "solution"
    assert callable(names["handler"]) and not callable(solution)
'''


def test_module_globals_and_namespace_as_in_one_process(sandbox):
    req = ExecRequest(solution=REGISTRY, tests={"test_registry.py": REGISTRY_TESTS}, limits=FAST)
    res = sandbox.run_one(req)
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests])
    wrong = sandbox.run_one(req.model_copy(update={"solution": REGISTRY.replace("HANDLERS.get(key", "{}.get(key")}))
    assert [t.outcome for t in wrong.tests] == ["failed", "passed"]


LOADER = '''
import importlib


def load(name):
    return importlib.import_module(name).thing
'''

LOADER_TESTS = '''import sys

from solution import load


def test_a_module_outside_the_imported_packages_is_not_imported_here():
    thing = load("elsewhere")
    assert thing(2) == 4 and "elsewhere" not in sys.modules   # the candidate's, behind a handle
'''


def test_the_candidate_cannot_make_the_harness_import_any_module(sandbox):
    req = ExecRequest(solution=LOADER, tests={"test_loader.py": LOADER_TESTS},
                      files={"elsewhere.py": "def thing(x):\n    return 2 * x\n"}, limits=FAST)
    res = sandbox.run_one(req)
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests])
