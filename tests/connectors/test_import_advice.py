"""A test file that fails at import for a missing helper module (issue 13 new-user check): the
functions only it would have covered are "no covering tests" *with* the ``fix:`` naming
``test_requirements`` and the files read automatically, not a silent dead end."""
from pathlib import Path

import pytest

from connectors.suites.pytest_suite import PytestSuiteSource
from connectors.suites.testreqs import import_failures
from sdk.errors import SourceError
from sdk.run.health import quarantine_summary

HELPER = "tl_not_installed_helper_xyz"


def _repo(tmp_path: Path, with_good_test: bool = True) -> Path:
    (tmp_path / "lib").mkdir(), (tmp_path / "tests").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text(
        'def add(a, b):\n    """Sum."""\n    return a + b\n\n\ndef mul(a, b):\n    """Product."""\n    return a * b\n')
    if with_good_test:
        (tmp_path / "tests" / "test_add.py").write_text("from lib import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    (tmp_path / "tests" / "test_mul.py").write_text(
        f"import {HELPER}\nfrom lib import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n")
    return tmp_path


def test_a_function_whose_test_file_cannot_import_gets_the_requirements_fix(tmp_path):
    repo = _repo(tmp_path)
    result = PytestSuiteSource({"path": str(repo), "package": "lib", "test_requirements": []}, repo, "d").read()
    (q,) = [q for q in result.quarantined if q.task is None or "mul" in (q.source.locator if q.source else "")]
    first, fix = q.reason.splitlines()
    assert first.startswith("no covering tests: no test of the suite calls it; test file(s) tests/test_mul.py "
                            f"(No module named '{HELPER}') failed at import")
    assert fix.startswith(f"fix: declare the package(s) providing '{HELPER}' as test requirements")
    for place in ("`test_requirements:`", f"test_requirements='[{HELPER}]'", "pyproject.toml [dependency-groups]",
                  "test extras", "requirements*test*.txt", "tox.ini", "noxfile.py", "read automatically"):
        assert place in fix
    (group,) = quarantine_summary([q])
    assert group["reason"] == "no covering tests" and group["fix"] == fix[len("fix: "):]


def test_no_advice_when_every_test_file_imports(tmp_path):
    repo = _repo(tmp_path)
    (repo / "tests" / "test_mul.py").write_text("def test_other():\n    assert True\n")
    result = PytestSuiteSource({"path": str(repo), "package": "lib", "test_requirements": []}, repo, "d").read()
    reasons = [q.reason for q in result.quarantined]
    assert reasons == ["no covering tests: no test of the suite calls it"]


def test_a_suite_that_collects_nothing_for_a_missing_module_says_how_to_declare_it(tmp_path):
    repo = _repo(tmp_path, with_good_test=False)
    with pytest.raises(SourceError) as err:
        PytestSuiteSource({"path": str(repo), "package": "lib", "test_requirements": []}, repo, "d").read()
    assert "`test_requirements:`" in str(err.value.fix) and HELPER in str(err.value.fix)


def test_import_failures_are_read_per_test_file():
    errors = ("tests/test_clock.py: ImportError while importing test module\nE   ModuleNotFoundError: No module "
              "named 'freezegun.api'", "tests/test_x.py: E   NameError: name 'y' is not defined")
    assert import_failures(errors) == {"tests/test_clock.py": ["freezegun"]}


def test_a_function_the_broken_file_never_names_is_not_blamed_on_its_import(tmp_path):
    """A new user's library: `untested_helper` in lib/stock.py, nothing tests it; tests/test_mul.py fails at
    import. Only `mul` (named by that file) gets the requirements fix; the untested helper's reason is plain."""
    repo = _repo(tmp_path)
    (repo / "lib" / "stock.py").write_text('def untested_helper(x):\n    """Nothing tests this."""\n    return x * 3\n')
    result = PytestSuiteSource({"path": str(repo), "package": "lib", "test_requirements": []}, repo, "d").read()
    reasons = {q.source.locator: q.reason for q in result.quarantined if q.source is not None}
    assert reasons["lib/stock.py::untested_helper"] == "no covering tests: no test of the suite calls it"
    assert "tests/test_mul.py" in reasons["lib/__init__.py::mul"] and "fix: declare" in reasons["lib/__init__.py::mul"]
