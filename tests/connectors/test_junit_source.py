"""The ``junit`` source type: registration, option errors, and test files found from the layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.suites.junit import TestCaseRecord
from connectors.suites.junit_layout import TARGETS, locate_test_file
from connectors.suites.junit_source import JUnitSource
from sdk.errors import ConfigError, SourceError
from sdk.sources import resolve_source
from sdk.tasks.records import Language

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_junit_is_a_registered_source_type():
    assert resolve_source("junit") is JUnitSource


@pytest.mark.parametrize("options, words", [
    ({"path": "r"}, "reports"),
    ({"path": "r", "reports": []}, "reports"),
    ({"path": "r", "reports": ["x.xml"], "language": "cobol"}, "language"),
    ({"path": "r", "reports": ["x.xml"], "report": "x.xml"}, "report"),
])
def test_bad_options_are_a_config_error_naming_the_key(tmp_path, options, words):
    with pytest.raises(ConfigError) as err:
        JUnitSource(options, tmp_path, "repair/x")
    assert words in err.value.what and err.value.fix


def test_missing_reports_and_repository_are_source_errors(tmp_path):
    (tmp_path / "repo").mkdir()
    with pytest.raises(SourceError, match="no JUnit report matches"):
        JUnitSource({"path": "repo", "reports": "ci/*.xml"}, tmp_path, "repair/x").read()
    with pytest.raises(SourceError, match="does not exist"):
        JUnitSource({"path": "nope", "reports": ["ci/*.xml"]}, tmp_path, "repair/x").read()


def _case(classname, name, suite="s"):
    return TestCaseRecord(suite=suite, classname=classname, name=name, status="failure")


@pytest.mark.parametrize("repo, case, language, test_file, target", [
    ("pyrepo", _case("tests.test_arith", "test_add"), Language.PYTHON, "tests/test_arith.py", "minimath/arith.py"),
    ("pyrepo", _case("tests.test_util.TestX", "test_a"), Language.PYTHON, "tests/test_util.py", "minimath/util.py"),
    ("pyrepo", _case("test_arith", "test_add"), Language.PYTHON, "tests/test_arith.py", "minimath/arith.py"),
    ("javarepo", _case("MoneyTest", "plusAddsCents()"), Language.JAVA, "src/test/java/MoneyTest.java",
     "src/main/java/Money.java"),
    ("javarepo", _case("com.acme.MoneyTest$Nested", "x()"), Language.JAVA, "src/test/java/MoneyTest.java",
     "src/main/java/Money.java"),
    ("gorepo", _case("example.com/strutil", "TestReverse/unicode"), Language.GO, "strutil_test.go", "strutil.go"),
    ("jsrepo", _case("slugify trims separators", "slugify trims separators"), Language.JAVASCRIPT,
     "test/slug.test.js", "src/slug.js"),
    ("jsrepo", _case("", "x", suite="test/slug.test.js"), Language.JAVASCRIPT, "test/slug.test.js", "src/slug.js"),
])
def test_test_file_and_target_from_class_name_and_layout(repo, case, language, test_file, target):
    root = FIXTURES / repo
    assert locate_test_file(root, case, language) == test_file
    assert TARGETS[language](root, test_file) == target


def test_unknown_names_give_none_rather_than_a_guess():
    assert locate_test_file(FIXTURES / "gorepo", _case("example.com/strutil", "TestMissing"), Language.GO) is None
    assert locate_test_file(FIXTURES / "jsrepo", _case("", "no such title"), Language.JAVASCRIPT) is None
    assert locate_test_file(FIXTURES / "pyrepo", _case("tests.test_nothing", "t"), Language.PYTHON) is None
