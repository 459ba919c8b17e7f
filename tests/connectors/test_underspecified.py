"""The `underspecified` option of the pytest source: private helpers only their callers specify."""

from __future__ import annotations

from pathlib import Path

from connectors.suites.pytest_suite import PytestSuiteSource

LIB = '''def _sep():
    return ", "


def _direct(x):
    return x * 2


def _documented(x):
    """Twice ``x``.

    Used by join for doubling.
    """
    return x * 2


def join(xs):
    """Join ``xs`` with a comma and a space."""
    return _sep().join(str(_documented(_direct(x)) // 4) for x in xs)
'''
TESTS = "from lib import join, _direct\n\n\ndef test_join():\n    assert join([1, 2]) == '1, 2'\n\n\n" \
        "def test_direct():\n    assert _direct(2) == 4\n"


def _read(tmp_path: Path, **opts):
    (tmp_path / "lib").mkdir(exist_ok=True), (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "lib" / "__init__.py").write_text(LIB)
    (tmp_path / "tests" / "test_lib.py").write_text(TESTS)
    return PytestSuiteSource({"path": str(tmp_path), "package": "lib", "test_requirements": [], **opts},
                             tmp_path, "d").read()


def test_underspecified_helpers_are_kept_and_counted_by_default_and_quarantined_on_request(tmp_path):
    kept = _read(tmp_path)
    assert {t.verifier.entry_point for t in kept.tasks} == {"join", "_sep", "_direct", "_documented"}
    assert kept.counts["underspecified"] == 1  # _sep: no docstring, only join's test reaches it
    sep = next(t for t in kept.tasks if t.verifier.entry_point == "_sep")
    assert "return _sep().join(" in sep.prompt[-1].content  # its caller's line is in the prompt
    strict = _read(tmp_path, underspecified="quarantine")
    assert {t.verifier.entry_point for t in strict.tasks} == {"join", "_direct", "_documented"}
    (q,) = strict.quarantined
    assert q.raw["locator"] == "lib/__init__.py::_sep" and q.reason.startswith("underspecified:")
    assert "fix: " in q.reason and strict.counts["quarantined_underspecified"] == 1
