"""Repair tasks from a real ``pytest --junitxml`` report, checked in the sandbox."""

from __future__ import annotations

import subprocess
import sys

from connectors.suites.junit import load_junit
from connectors.suites.junit_repair import repair_tasks
from sdk.config import SandboxConfig
from sdk.sandbox.contract import ExecRequest

BUGGY = "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n"
FIXED = "def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n"
TESTS = ("from pkg.calc import add, neg\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
         "def test_neg():\n    assert neg(2) == -2\n")


def _repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pkg/__init__.py").write_text("")
    (repo / "pkg/calc.py").write_text(BUGGY)
    (repo / "tests/test_calc.py").write_text(TESTS)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
                    "--junitxml", str(tmp_path / "report.xml"), "tests"], cwd=repo, capture_output=True, timeout=120)
    return repo


def test_failing_case_becomes_repair_task_that_the_fix_passes(tmp_path):
    repo = _repo(tmp_path)
    report = load_junit(tmp_path / "report.xml")
    assert {c.name: c.status for c in report.cases} == {"test_add": "failure", "test_neg": "passed"}
    tasks, quarantined = repair_tasks(report, repo, "repair/calc")
    assert not quarantined and len(tasks) == 1
    task = tasks[0]
    assert task.verifier.target_path == "pkg/calc.py" and "pkg/__init__.py" in task.verifier.files
    assert "test_add" in task.prompt[0].content and "return a - b" in task.prompt[0].content
    assert task.reference is None and task.metadata["failing"] == ["tests.test_calc::test_add"]

    from sdk.sandbox import make_sandbox

    box = make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=2, cache=False))
    try:
        v = task.verifier
        results = box.run([ExecRequest(solution=s, tests=v.tests, files=v.files, target_path=v.target_path)
                           for s in (BUGGY, FIXED)])
    finally:
        box.close()
    assert [r.all_passed for r in results] == [False, True]
    assert {t.name.split("::")[-1]: t.outcome for t in results[0].tests} == {"test_add": "failed", "test_neg": "passed"}


def test_broken_suites_and_unknown_targets_give_no_task(tmp_path):
    report = load_junit("""<testsuites>
      <testsuite name="jest" tests="1" errors="1"><testcase classname="a.test.js" name="Test suite failed to run"
        file="a.test.js"><error message="Cannot find module"/></testcase></testsuite>
      <testsuite name="go" tests="0"></testsuite>
      <testsuite name="py"><testcase classname="t" name="test_x" file="tests/test_nothing.py"><failure/></testcase>
      <testcase classname="t" name="test_y"><failure/></testcase></testsuite>
    </testsuites>""")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_nothing.py").write_text("def test_x():\n    assert False\n")
    tasks, quarantined = repair_tasks(report, tmp_path, "repair")
    assert tasks == []
    assert sorted(q.reason.split(":")[0] for q in quarantined) == ["no repair target", "no test file"]
