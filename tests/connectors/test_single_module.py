"""A single-module library (``package:`` naming ``mylib.py``, as six, inflection-style sdists with
``tests: .``, or ``src/mylib.py``) becomes tasks like a package: traced, built, validated in the sandbox."""

from __future__ import annotations

import pytest

from connectors.suites.pytest_suite import PytestSuiteSource
from sdk.config import SandboxConfig
from sdk.errors import SourceError
from sdk.sandbox import make_sandbox
from sdk.tasks.validate import validate_tasks

SOLO = '''"""A one-file library."""

import re

__version__ = "2.0"


def slug(text):
    """Lower-case words joined by dashes."""
    return "-".join(_words(text))


def _words(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def untested(x):
    """Nobody tests this."""
    return x
'''
TESTS = '''import pytest

import solo


@pytest.mark.parametrize("text, want", [("Hello World", "hello-world"), ("a  b", "a-b")])
def test_slug(text, want):
    assert solo.slug(text) == want


class TestWords:
    def test_words(self):
        assert solo._words("X y") == ["x", "y"]
'''


def _repo(tmp_path, layout):
    repo = tmp_path / layout
    module, tests = {"root": ("solo.py", "test_solo.py"), "src": ("src/solo.py", "tests/test_solo.py")}[layout]
    for rel, text in ((module, SOLO), (tests, TESTS), ("PKG-INFO", "Name: solo\nVersion: 2.0\n")):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    return repo, module


@pytest.mark.parametrize("layout", ["root", "src"])
def test_single_module_library_becomes_tasks_that_validate(tmp_path, layout):
    repo, module = _repo(tmp_path, layout)
    tests = "." if layout == "root" else "tests"
    res = PytestSuiteSource({"path": str(repo), "package": "solo", "tests": tests}, tmp_path, "solo").read()
    assert sorted(t.verifier.entry_point for t in res.tasks) == ["_words", "slug"]
    assert {t.verifier.target_path for t in res.tasks} == {module}
    assert {t.domain for t in res.tasks} == {"solo/solo"}
    assert [q.raw["locator"] for q in res.quarantined] == [f"{module}::untested"]
    assert res.counts["functions_found"] == 3
    files = res.tasks[0].verifier.files
    assert files[module] == SOLO and "solo-2.0.dist-info/top_level.txt" in files
    assert files["solo-2.0.dist-info/top_level.txt"] == "solo\n"
    box = make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=2, cache=False))
    try:
        valid, bad = validate_tasks(res.tasks, box)
    finally:
        box.close()
    assert [(q.task.verifier.entry_point, q.reason[:300]) for q in bad] == []
    assert len(valid) == 2


def test_module_inside_a_package_says_to_name_the_package(tmp_path):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg/__init__.py").write_text("")
    (repo / "pkg/mod.py").write_text("def f():\n    return 1\n")
    (repo / "tests").mkdir()
    with pytest.raises(SourceError, match="module inside the package 'pkg'") as err:
        PytestSuiteSource({"path": str(repo), "package": "pkg.mod"}, tmp_path, "d").read()
    assert "`package: pkg`" in err.value.fix


def test_misspelt_package_lists_single_modules_too(tmp_path):
    repo, _ = _repo(tmp_path, "root")
    with pytest.raises(SourceError) as err:
        PytestSuiteSource({"path": str(repo), "package": "sollo", "tests": "."}, tmp_path, "d").read()
    assert err.value.fix.endswith("packages found there: solo")


def test_a_submodule_of_the_single_module_is_not_a_missing_install():
    """six 1.16.0: ``No module named 'six.moves'; 'six' is not a package`` in a reference_fails reason was
    answered 'add the package(s) that provide six to test_requirements' (six is the library itself)."""
    from sdk.sandbox.deps import missing_modules

    assert missing_modules("ModuleNotFoundError: No module named 'six.moves'; 'six' is not a package") == []
    assert missing_modules("No module named 'six.moves'; 'six' is not a package\nNo module named 'yaml'") == ["yaml"]
