"""A library without a pytest configuration of its own, checked out inside another project, is traced
with its own settings, not the enclosing project's (new-user round: a library under /tmp/nu, a clone
of tuneloop, took tuneloop's ``pyproject.toml``: node ids ``hostile/h3/tests/...``, its ``pythonpath``
and markers)."""

from __future__ import annotations

from connectors.suites.pytest_collect import run_suite


def test_an_enclosing_projects_pytest_config_and_conftest_do_not_apply(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\npython_files = nothing_*.py\n")
    (tmp_path / "conftest.py").write_text("raise RuntimeError('the enclosing project conftest ran')\n")
    repo = tmp_path / "vendor" / "mini"
    (repo / "mini").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "mini" / "__init__.py").write_text("def double(x):\n    return 2 * x\n")
    (repo / "tests" / "test_mini.py").write_text("from mini import double\n\n\ndef test_double():\n"
                                                 "    assert double(2) == 4\n")
    run = run_suite(repo, "tests", repo / "mini", timeout_s=120)
    assert [i.nodeid for i in run.items] == ["tests/test_mini.py::test_double"]
    assert [i.outcome for i in run.items] == ["passed"] and not run.errors


def test_a_repository_with_its_own_config_keeps_it(tmp_path):
    repo = tmp_path / "mini"
    (repo / "mini").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pytest.ini").write_text("[pytest]\npython_functions = check_*\n")
    (repo / "mini" / "__init__.py").write_text("def double(x):\n    return 2 * x\n")
    (repo / "tests" / "test_mini.py").write_text("from mini import double\n\n\ndef check_double():\n"
                                                 "    assert double(2) == 4\n\n\ndef test_ignored():\n    assert False\n")
    run = run_suite(repo, "tests", repo / "mini", timeout_s=120)
    assert [i.nodeid for i in run.items] == ["tests/test_mini.py::check_double"]
