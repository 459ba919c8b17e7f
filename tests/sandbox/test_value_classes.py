"""Value classes across the harness/candidate boundary (issue 13, tabulate's cases A-E).

(A, B) instances of the module-under-test's own value classes (namedtuples, ``str`` subclasses,
dataclasses, enums) come back as the *task's* classes, built in the harness from the task's file
(``_runner/tl_pristine.py``), never from the solution's; (C, D) a test's own dataclass or
namedtuple reaches the solution with its fields; (E) a warning the solution raises is raised in
the test's process inside the call. And the cheats: a class the solution changed, the entry
point's own class and a method of a rebuilt class that calls the solution's function must never
let the reference's code decide a test.
"""

from __future__ import annotations

import base64

import pytest

from sdk.sandbox import ExecRequest, ExecStatus
from tests.sandbox.conftest import FAST

MOD = '''
import dataclasses
import enum
import warnings
from collections import namedtuple

Line = namedtuple("Line", ["begin", "sep"])


class Fmt(namedtuple("_Fmt", "a b")):
    pass


class Html(str):
    @property
    def html(self):
        return "<b>" + self + "</b>"

    def wrapped(self):
        return wrap(self)


class Color(enum.IntEnum):
    RED = 1


class _Nothing(enum.Enum):
    NOTHING = "NOTHING"


NOTHING = _Nothing.NOTHING


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0

    def norm(self):
        return abs(self.x) + abs(self.y)


class PkgWarning(UserWarning):
    pass


def wrap(s):
    return "<" + s + ">"


def line(a):
    return Line(a, "|")


def fmt(a):
    return Fmt(a, Line(a, "-"))


def html(s):
    return Html(s)


def point(x, y=2):
    return Point(x, y)


def color():
    return Color.RED


def nothing():
    return NOTHING


def ident(v):
    return v


def kind(v):
    return type(v).__name__


def fields(row):
    if dataclasses.is_dataclass(row):
        return [f.name for f in dataclasses.fields(row)]
    return list(row._fields)


def as_dict(row):
    return dataclasses.asdict(row) if dataclasses.is_dataclass(row) else row._asdict()


def area(shape):
    return shape.area()


def warn(x):
    warnings.warn("careful %s" % x, PkgWarning)
    warnings.warn("old", DeprecationWarning)
    return x + 1
'''

MODULE_CLASSES = '''
import dataclasses

from pkg import NOTHING, Color, Html, Line, Point, color, fmt, html, ident, kind, line, nothing, point


def test_namedtuple():
    got = line("x")
    assert type(got).__name__ == "Line" and got.begin == "x" and got._fields == ("begin", "sep")
    assert isinstance(got, Line) and not isinstance(got, Html)
    assert ident(got) == got and type(ident(got)) is type(got)
    nested = fmt(1)
    assert type(nested).__name__ == "Fmt" and type(nested.b) is type(got) and nested.b.sep == "-"


def test_str_subclass():
    got = html("a")
    assert got == "a" and got.html == "<b>a</b>" and type(got).__name__ == "Html" and isinstance(got, Html)
    assert kind(got) == "Html" and kind(line("x")) == "Line" and kind(point(1)) == "Point"   # and back, by value


def test_dataclass():
    got = point(1)
    assert got == point(1) and got.norm() == 3 and type(got).__name__ == "Point" and isinstance(got, Point)
    assert [f.name for f in dataclasses.fields(got)] == ["x", "y"]


def test_enum():
    assert color().name == "RED" and type(color()).__name__ == "Color" and ident(color()) is color()
    assert isinstance(color(), Color) and issubclass(type(color()), Color) and color() == 1
    assert nothing() is NOTHING and ident(NOTHING) is NOTHING   # a plain Enum sentinel: by reference
'''

TEST_RECORDS = '''
import dataclasses
import warnings
from collections import namedtuple

import pytest

from pkg import PkgWarning, area, as_dict, fields, ident, warn


@dataclasses.dataclass
class Row:
    name: str
    n: int = 0

    def area(self):
        return self.n * 2


P = namedtuple("P", "x y")


def test_dataclass_of_the_test():
    r = Row("a", 3)
    assert fields(r) == ["name", "n"] and as_dict(r) == {"name": "a", "n": 3}
    assert ident(r) is r and area(r) == 6


def test_made_dataclass_of_the_test():   # make_dataclass: its class claims the module ``types``
    Person = dataclasses.make_dataclass("Person", ["name", "age"])
    assert [fields(p) for p in [Person("a", 1)]] == [["name", "age"]] and as_dict(Person("a", 1)) == {"name": "a", "age": 1}


def test_namedtuple_of_the_test():
    p = P(1, 2)
    assert fields(p) == ["x", "y"] and as_dict(p) == {"x": 1, "y": 2} and ident(p) is p


def test_warnings_inside_the_call():
    with pytest.warns(PkgWarning, match="careful 1"):
        assert warn(1) == 2
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warn(2)
    assert [w.category for w in seen] == [PkgWarning, DeprecationWarning]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(PkgWarning):
            warn(3)
'''


def _req(solution: str, entry: str, tests: str, module: str = MOD) -> ExecRequest:
    return ExecRequest(solution=solution, entry_point=entry, tests={"tests/test_pkg.py": tests},
                       files={"pkg/__init__.py": module}, target_path="pkg/__init__.py", limits=FAST)


def _failed(res) -> list[str]:
    return [t.name.rsplit("::", 1)[1] for t in res.tests if t.outcome != "passed"]


def test_module_value_classes_come_back_as_the_tasks_own(sandbox):
    res = sandbox.run_one(_req("def line(a):\n    return Line(a, '|')\n", "line", MODULE_CLASSES))
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests])
    assert len(res.tests) == 4 and not res.flags


def test_a_tests_records_and_warnings_cross(sandbox):
    res = sandbox.run_one(_req("def ident(row):\n    return row\n", "ident", TEST_RECORDS))
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests])
    assert len(res.tests) == 4 and not res.flags


LYING_HTML = '''
class Html(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


def html(s):
    return Html("wrong")
'''


def test_a_class_the_solution_changed_is_not_the_tasks(process_sandbox):
    """The solution redefines Html (the splice keeps its class): no rebuild as the task's Html,
    its instance crosses as its base value, and its lying ``__eq__`` is reported."""
    tests = "from pkg import html\n\n\ndef test_html():\n    assert html('a') == 'a'\n"
    res = process_sandbox.run_one(_req(LYING_HTML, "html", tests))
    assert res.status != ExecStatus.OK and _failed(res) == ["test_html"]
    assert "always_equal" in res.flags, res.flags


def test_the_entry_points_class_is_not_rebuilt(process_sandbox):
    """Entry point ``Point.norm``: a Point coming back must not run the task's (reference) norm."""
    tests = "from pkg import point\n\n\ndef test_norm():\n    assert point(3, -4).norm() == 7\n"
    wrong = process_sandbox.run_one(_req("def norm(self):\n    return 0\n", "Point.norm", tests))
    right = process_sandbox.run_one(_req("def norm(self):\n    return abs(self.x) + abs(self.y)\n", "Point.norm", tests))
    assert _failed(wrong) == ["test_norm"] and right.status == ExecStatus.OK, (wrong.detail, right.detail)


def test_a_rebuilt_classs_method_calls_the_solutions_function(process_sandbox):
    """``Html.wrapped`` (the task's class, rebuilt in the harness) calls ``wrap``: the solution's."""
    tests = "from pkg import html\n\n\ndef test_wrapped():\n    assert html('a').wrapped() == '<a>'\n"
    wrong = process_sandbox.run_one(_req("def wrap(s):\n    return 'x'\n", "wrap", tests))
    right = process_sandbox.run_one(_req("def wrap(s):\n    return '<' + s + '>'\n", "wrap", tests))
    assert _failed(wrong) == ["test_wrapped"] and right.status == ExecStatus.OK, (wrong.detail, right.detail)


HOSTILE_WARNING = '''
import warnings


class Boom(UserWarning):
    pass


Boom.__module__, Boom.__qualname__ = "os", "_exit"


def warn(x):
    warnings.warn("boom", Boom)
    return x + 1
'''


def test_a_warning_naming_a_standard_callable_is_only_a_warning(process_sandbox):
    tests = ("import pytest\nfrom pkg import warn\n\n\ndef test_warn():\n    with pytest.warns(UserWarning, match='boom'):\n"
             "        assert warn(1) == 2\n")
    res = process_sandbox.run_one(_req(HOSTILE_WARNING, "warn", tests))
    assert res.status == ExecStatus.OK, (res.detail, [t.message[-600:] for t in res.tests])


@pytest.fixture()
def runner(monkeypatch):
    from sdk.sandbox.pyruntime import RUNNER_DIR
    monkeypatch.syspath_prepend(str(RUNNER_DIR))
    import tl_pickle
    import tl_pristine
    return tl_pickle, tl_pristine


def test_value_classes_found_in_the_source(runner):
    _, pristine = runner
    names = pristine.value_classes(MOD, MOD, "line")
    assert names == ["Line", "Fmt", "Html", "Color", "Point"]   # not the plain Enum _Nothing
    assert "Point" not in pristine.value_classes(MOD, MOD, "Point.norm")
    changed = MOD.replace("class Html(str):\n", "class Html(str):\n    x = 1\n")
    assert "Html" not in pristine.value_classes(MOD, changed, "line")
    redecorated = MOD.replace("@dataclasses.dataclass\nclass Point", "@dataclasses.dataclass(eq=False)\nclass Point")
    assert "Point" not in pristine.value_classes(MOD, redecorated, "line")
    rebound = MOD.replace("import enum\n", "import enum\nfrom os import sep as Html\n")
    assert "Html" not in pristine.value_classes(MOD, rebound, "line") and "Line" in pristine.value_classes(MOD, rebound, "x")


def test_the_restricted_unpickler_resolves_only_kept_classes(runner, monkeypatch):
    import collections
    import types
    tl_pickle, _ = runner
    kept = collections.namedtuple("Line", "a b", module="pkg")
    monkeypatch.setitem(__import__("sys").modules, "pkg", types.SimpleNamespace(Line=kept))
    trust = tl_pickle.Trust(["/nonexistent"], "pkg")
    trust.pristine = {"Line": kept}
    assert tl_pickle.loads_restricted(tl_pickle.dumps(kept(1, 2), lambda o: None), trust, lambda pid: None) == (1, 2)
    assert type(tl_pickle.loads_restricted(tl_pickle.dumps(kept(1, 2), lambda o: None), trust, lambda pid: None)) is kept
    with pytest.raises(tl_pickle.Refused) as info:
        tl_pickle.loads_restricted(base64.b64encode(b"cpkg\nwrap\n.").decode(), trust, lambda pid: None)
    assert info.value.hostile


ATTRS_CORE = '''
import types


class Attribute:
    __slots__ = ("name", "metadata")

    def __init__(self, name):
        self.name, self.metadata = name, types.MappingProxyType({})

    def __getstate__(self):
        return {"name": self.name}

    def __setstate__(self, state):
        self.__init__(state["name"])


def attrs(cls):
    names = list(cls.__annotations__)
    cls.__attrs_attrs__ = tuple(Attribute(n) for n in names)

    def __init__(self, *args, **kw):
        for n, v in list(zip(names, args)) + list(kw.items()):
            setattr(self, n, v)

    def __eq__(self, other):
        return type(self) is type(other) and all(getattr(self, n) == getattr(other, n) for n in names)
    cls.__init__, cls.__eq__, cls.__hash__ = __init__, __eq__, None
    return cls
'''

ATTRS_FUNCS = '''
def asdict(inst):
    return {a.name: getattr(inst, a.name) for a in type(inst).__attrs_attrs__}


def evolve(inst, **changes):
    kw = asdict(inst)
    kw.update(changes)
    return inst.__class__(**kw)
'''

ATTRS_TESTS = '''
from pkg.core import attrs
from pkg.funcs import asdict, evolve


@attrs
class C:
    x: int
    y: int

    def total(self):
        return self.x + self.y


def test_asdict():
    assert asdict(C(1, 2)) == {"x": 1, "y": 2}


def test_evolve():
    got = evolve(C(1, 2), y=5)
    assert type(got) is C and got == C(1, 5) and got.total() == 6
'''


def test_an_attrs_like_instance_of_the_test_is_a_record(sandbox):
    """A test's class decorated by the repository (``__attrs_attrs__``, as attrs does): its instance
    reaches the solution with its fields, and ``inst.__class__(**kw)`` makes the test's class."""
    req = ExecRequest(solution=ATTRS_FUNCS.split("def evolve")[0], entry_point="asdict",
                      tests={"tests/test_pkg.py": ATTRS_TESTS}, target_path="pkg/funcs.py", limits=FAST,
                      files={"pkg/__init__.py": "", "pkg/core.py": ATTRS_CORE, "pkg/funcs.py": ATTRS_FUNCS})
    res = sandbox.run_one(req)
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests])


DECORATOR = '''
class Counting:
    def __init__(self, default=None):
        self.default = default


def ib(default=None):
    return Counting(default)


def attrs(cls):
    names = [k for k, v in cls.__dict__.items() if isinstance(v, Counting)]
    defaults = {k: cls.__dict__[k].default for k in names}

    def __init__(self, *args, **kw):
        for n in names:
            setattr(self, n, defaults[n])
        for n, v in list(zip(names, args)) + list(kw.items()):
            setattr(self, n, v)
        if hasattr(self, "__attrs_post_init__"):
            self.__attrs_post_init__()

    def __repr__(self):
        return "%s(%s)" % (type(self).__qualname__, ", ".join("%s=%r" % (n, getattr(self, n)) for n in names))
    cls.__init__, cls.__repr__, cls.names = __init__, __repr__, tuple(names)
    return cls


def make(cls, *args):
    return cls(*args)
'''

DECORATED_TESTS = '''
from pkg.core import attrs, ib, make
from pkg.models import Model


@attrs
class C:
    x = ib()
    y = ib(default=7)

    def total(self):
        return self.x + self.y

    def __attrs_post_init__(self):
        self.z = self.x * 10


class Plain:
    def __init__(self, v):
        self.v = v


def test_decorated_by_the_solution():
    c = C(1)
    assert c.x == 1 and c.y == 7 and c.total() == 8 and c.z == 10 and repr(c) == "C(x=1, y=7)" and C.names == ("x", "y")


def test_a_repository_class_decorated_at_import():   # bound to its name only after the decorator
    assert Model(2).size == 2 and repr(Model(2)) == "Model(size=2)"


def test_a_plain_class_made_by_the_solution_is_the_tests():
    got = make(Plain, 3)
    assert type(got) is Plain and got.v == 3
'''


MODELS = "from pkg.core import attrs, ib\n\n\n@attrs\nclass Model:\n    size = ib()\n"


def test_a_tests_class_decorated_by_the_solution(sandbox):
    """``@attrs`` (the entry point, run in the candidate) on a test's class: the class crosses by its
    namespace (its methods called back, bound to the instance); a class the solution only calls
    stays the test's."""
    req = ExecRequest(solution=DECORATOR, entry_point="attrs", tests={"tests/test_pkg.py": DECORATED_TESTS},
                      files={"pkg/__init__.py": "", "pkg/core.py": DECORATOR, "pkg/models.py": MODELS},
                      target_path="pkg/core.py", limits=FAST)
    res = sandbox.run_one(req)
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests])
