"""A function quarantined for tests that fail on the original code says why they fail (field case:
validators 0.36.0's ``eth_address`` raises ``ImportError("Do `pip install validators[crypto-eth-
addresses]` ...")`` without the optional ``eth_hash``; the reason said only "covering tests fail or
skip on the original code; 0 usable, need 1", with no cause and no way to fix it)."""

from __future__ import annotations

from pathlib import Path

from connectors.suites.pytest_suite import PytestSuiteSource

CODE = '''"""Checksums."""
try:
    from not_installed_hashlib import keccak
except ImportError:
    keccak = None


def checksum(value):
    """The checksum of ``value``; needs the optional keccak package."""
    if keccak is None:
        raise ImportError("Do `pip install hashy[keccak]` to compute checksums.")
    return keccak(value)


def plain(value):
    """``value`` upper-cased."""
    return value.upper()
'''
TESTS = '''from hashy.core import checksum, plain


def test_checksum():
    assert checksum("ab")


def test_plain():
    assert plain("ab") == "AB"
'''
BROKEN = '''from hashy.core import plain


def test_plain_wrong():
    assert plain("ab") == "ab"
'''


def _reasons(root: Path, tests: str) -> dict[str, str]:
    (root / "hashy").mkdir()
    (root / "tests").mkdir(exist_ok=True)
    (root / "hashy" / "__init__.py").write_text("")
    (root / "hashy" / "core.py").write_text(CODE)
    (root / "tests" / "test_core.py").write_text(tests)
    result = PytestSuiteSource({"path": str(root), "package": "hashy"}, root, "hashy").read()
    return {q.source.locator: q.reason for q in result.quarantined}


def test_an_import_error_the_code_raises_is_named_with_the_fix(tmp_path):
    reason = _reasons(tmp_path, TESTS)["hashy/core.py::checksum"]
    assert reason.startswith("failing tests:")
    assert "first: tests/test_core.py::test_checksum: ImportError: Do `pip install hashy[keccak]`" in reason
    assert "\nfix: " in reason and "`test_requirements:`" in reason


def test_an_assertion_failure_is_named_without_a_dependency_fix(tmp_path):
    reason = _reasons(tmp_path, BROKEN)["hashy/core.py::plain"]
    assert "first: tests/test_core.py::test_plain_wrong: AssertionError" in reason
    assert "test_requirements" not in reason


MISSING = '''import not_installed_freezegun
from hashy.core import plain


def test_plain_frozen():
    assert plain("b") == "B"
'''


def test_a_test_file_that_cannot_import_is_named_even_when_nothing_is_quarantined(tmp_path, caplog):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_time.py").write_text(MISSING)
    with caplog.at_level("WARNING"):
        reasons = _reasons(tmp_path, TESTS)
    assert "hashy/core.py::plain" not in reasons  # test_core.py still covers it: no quarantine says anything
    (warning,) = [r.getMessage() for r in caplog.records if "could not be collected" in r.getMessage()]
    assert "test_time.py (No module named 'not_installed_freezegun')" in warning
    assert "\nfix: " in warning and "`test_requirements:`" in warning


def test_a_collection_error_that_is_no_import_error_gets_its_last_report_line():
    from connectors.suites.testreqs import collection_warning
    text = collection_warning(["tests/test_x.py: Traceback:\nE   SystemExit: 3"])
    assert "tests/test_x.py (E   SystemExit: 3)" in text and "collection errors" in text
    assert collection_warning([]) == ""


EXITS = '''import sys

sys.exit("run me under the company runner")


def test_never():
    assert False
'''


def test_a_test_module_calling_sys_exit_at_import_costs_only_its_own_tests(tmp_path, caplog):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_exit.py").write_text(EXITS)
    with caplog.at_level("WARNING"):
        reasons = _reasons(tmp_path, TESTS)
    # read() did not raise "collected no tests": test_core.py was still collected and run (pytest alone stops
    # the whole session: INTERNALERROR, no tests ran)
    assert "hashy/core.py::plain" not in reasons
    (warning,) = [r.getMessage() for r in caplog.records if "could not be collected" in r.getMessage()]
    assert "test_exit.py (SystemExit('run me under the company runner')" in warning
