"""Test files inside the package, beside its code (iso8601 2.1.0: ``iso8601/test_iso8601.py``, run
with ``tests: iso8601``): the package's modules are still targets, its test modules never are.
Before, every module under the tests folder was dropped, and the package gave no task at all."""

from __future__ import annotations

from connectors.suites.pytest_suite import PytestSuiteSource

FILES = {
    "isolib/__init__.py": "from .core import parse_date\n",
    "isolib/core.py": '''"""Dates."""


def parse_date(text):
    """``YYYY-MM-DD`` -> ``(year, month, day)``."""
    y, m, d = text.split("-")
    return int(y), int(m), int(d)
''',
    "isolib/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef sep():\n    return '-'\n",
    "isolib/test_core.py": '''import pytest

from . import core


@pytest.mark.parametrize("text, want", [("2026-01-02", (2026, 1, 2)), ("1999-12-31", (1999, 12, 31))])
def test_parse(text, want):
    assert core.parse_date(text) == want


def test_parse_sep(sep):
    assert core.parse_date(sep.join(["2000", "1", "1"])) == (2000, 1, 1)


def helper_not_a_target():
    return 1
''',
}


def test_tests_beside_the_code_keep_the_code_as_targets(tmp_path):
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    res = PytestSuiteSource({"path": str(tmp_path), "package": "isolib", "tests": "isolib"}, tmp_path, "iso").read()
    assert [(t.verifier.target_path, t.verifier.entry_point) for t in res.tasks] == [("isolib/core.py", "parse_date")]
    assert res.counts["functions_found"] == 1 and not res.quarantined  # test_core.py's helper is no target
    task = res.tasks[0]
    assert "isolib/test_core.py" not in task.verifier.files and "isolib/conftest.py" in task.verifier.files
    assert len(task.metadata["tests"]) + len(task.metadata["hidden_tests"]) == 3


def test_a_doctest_only_library_is_told_doctests_are_not_verifiers(tmp_path):
    import pytest

    from sdk.errors import SourceError

    (tmp_path / "doclib").mkdir()
    (tmp_path / "doclib/__init__.py").write_text('def double(x):\n    """Twice x.\n\n    >>> double(2)\n    4\n    '
                                                 '"""\n    return 2 * x\n')
    for tests in ("tests", "."):  # no tests folder; a folder without test files
        with pytest.raises(SourceError, match="doclib has 1 doctest examples") as err:
            PytestSuiteSource({"path": str(tmp_path), "package": "doclib", "tests": tests}, tmp_path, "d").read()
        assert "doctests are not verifiers" in err.value.what and "def test_double()" in err.value.what
