"""Issue 13, item 1: the shapes of real suites, each in a small repository built here, validated
in the sandbox: tests of one function both module-level and in a class, an inherited test class,
a ``test_*`` function other tests call, conftest fixtures, parametrised tests, an ``src/``
layout with a second (alias) top-level package, and ``importlib.metadata.version`` at import."""

from __future__ import annotations

import pytest

from connectors.suites.pyprune import TestModule
from connectors.suites.pytest_suite import PytestSuiteSource
from sdk.config import SandboxConfig
from sdk.sandbox import make_sandbox
from sdk.tasks.validate import validate_tasks

FILES = {
    "pyproject.toml": '[project]\nname = "mainpkg-dist"\nversion = "1.2.3"\n\n'
                      '[tool.pytest.ini_options]\naddopts = "--doctest-modules"\n',
    "src/mainpkg/__init__.py": '''from importlib.metadata import version

__version__ = version("mainpkg-dist")


def double(x):
    """Twice x.

    >>> double(2)
    4
    """
    return 2 * x


def triple(x):
    """Three times x."""
    return 3 * x


def quad(x):
    """Four times x."""
    return 4 * x


def add(a, b):
    """a + b."""
    return a + b


def get_item(d, key):
    """d[key]."""
    return d[key]


def set_item(d, key, value):
    """Set d[key] and return d."""
    d[key] = value
    return d
''',
    "src/aliaspkg/__init__.py": "from mainpkg import *  # noqa: F401,F403 - the alias package\n",
    "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef base():\n    return 10\n",
    "tests/test_mixed.py": '''from mainpkg import double


def test_double_small():
    assert double(1) == 2


def test_double_zero():
    assert double(0) == 0


class TestDouble:
    def test_double_big(self):
        assert double(50) == 100

    def test_double_negative(self):
        assert double(-3) == -6
''',
    "tests/test_inherit.py": '''from collections import defaultdict

from mainpkg import get_item, set_item


class TestDict:
    make = dict

    def test_set(self):
        assert set_item(self.make(), "a", 1) == {"a": 1}

    def test_get(self):
        assert get_item(self.make(a=2), "a") == 2


class TestDefaultDict(TestDict):
    @staticmethod
    def make(**kw):
        return defaultdict(int, **kw)
''',
    "tests/test_helper.py": '''from mainpkg import quad, triple


def test_triple_base():
    assert triple(1) == 3


def test_quad_uses_helper():
    test_triple_base()
    assert quad(2) == 8
''',
    "tests/test_param.py": '''import pytest

from mainpkg import add


@pytest.mark.parametrize("a, b, want", [(1, 2, 3), (0, 0, 0), (-1, 1, 0)])
def test_add(a, b, want):
    assert add(a, b) == want


def test_add_fixture(base):
    assert add(base, 1) == 11
''',
    "tests/test_meta.py": '''import aliaspkg
import mainpkg


def test_version():
    assert mainpkg.__version__ == "1.2.3"


def test_alias():
    assert aliaspkg.double(4) == 8
''',
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    repo = tmp_path_factory.mktemp("cases") / "repo"
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    return PytestSuiteSource({"path": str(repo), "package": "mainpkg", "hidden_fraction": 0.5}, repo, "c").read()


def _task(result, entry):
    return next(t for t in result.tasks if t.verifier.entry_point == entry)


def test_every_case_becomes_a_task(built):
    assert {t.verifier.entry_point for t in built.tasks} == {"double", "triple", "quad", "add", "get_item", "set_item"}
    assert not built.quarantined and built.counts["collection_errors"] == 0


def test_mixed_class_and_module_tests_split_without_crashing(built):
    v = _task(built, "double").verifier
    shown = "".join(v.tests.values()) + "".join(v.hidden_tests.values())
    assert v.hidden_tests and shown.count("def test_double") == 4  # each test in exactly one of the two files


def test_inherited_class_keeps_its_base_uncollected(built):
    task = _task(built, "get_item")
    text = "".join(task.verifier.tests.values()) + "".join(task.verifier.hidden_tests.values())
    assert "class TestDict" in text and "class TestDefaultDict(TestDict)" in text
    assert "test_set" not in text  # set_item's tests are not part of get_item's task
    compile(text, "pruned.py", "exec")


def test_helper_test_function_is_kept_but_not_collected(built):
    text = "".join(_task(built, "quad").verifier.tests.values())
    assert "def test_triple_base" in text and "test_triple_base.__test__ = False" in text


def test_alias_package_and_metadata_travel(built):
    files = _task(built, "add").verifier.files
    assert "src/aliaspkg/__init__.py" in files
    assert files["mainpkg_dist-1.2.3.dist-info/METADATA"].splitlines()[1:3] == ["Name: mainpkg-dist", "Version: 1.2.3"]
    assert "'src'" in files["conftest.py"] and "tests/conftest.py" in files


def test_every_task_validates_in_the_sandbox(built):
    box = make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=2, cache=False))
    try:
        valid, bad = validate_tasks(built.tasks, box)
    finally:
        box.close()
    assert [(q.task.verifier.entry_point, q.reason[:300]) for q in bad] == []
    assert len(valid) == len(built.tasks)


def test_pruning_unit_cases():
    source = FILES["tests/test_inherit.py"]
    collected = {("TestDict", "test_set"), ("TestDict", "test_get"),
                 ("TestDefaultDict", "test_set"), ("TestDefaultDict", "test_get")}
    only_sub = TestModule(source, collected).keep({("TestDefaultDict", "test_get")})
    assert "__test__ = False" in only_sub and "__test__ = True" in only_sub
    assert "def test_set" not in only_sub and "def test_get" in only_sub
    both = TestModule(source, collected).keep({("TestDict", "test_get"), ("TestDefaultDict", "test_get")})
    assert "__test__" not in both and "def test_set" not in both
    sub_shadow = TestModule(source, collected).keep({("TestDict", "test_set"), ("TestDict", "test_get"),
                                                     ("TestDefaultDict", "test_get")})
    assert "    test_set = None" in sub_shadow  # the subclass must not run the inherited test it was not given
    for text in (only_sub, both, sub_shadow):
        compile(text, "pruned.py", "exec")


def test_a_broken_test_file_is_named_in_the_quarantine(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pkg/__init__.py").write_text("def one():\n    return 1\n")
    (repo / "tests/test_one.py").write_text("from pkg import one\n\ndef test_one():\n    assert one() == 1\n")
    source = PytestSuiteSource({"path": str(repo), "package": "pkg"}, tmp_path, "d")

    def broken(self, text, collected):
        raise SyntaxError("invalid syntax (line 3)")

    monkeypatch.setattr(TestModule, "__init__", broken)
    res = source.read()
    assert not res.tasks and len(res.quarantined) == 1
    reason = res.quarantined[0].reason
    assert reason.startswith("task build failed") and "tests/test_one.py" in reason and "exclude" in reason
