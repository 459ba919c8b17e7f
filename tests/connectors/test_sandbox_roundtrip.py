"""Connector tasks through the real sandbox: references pass, broken bodies fail.

Broken bodies are the reference with its body replaced by ``return None`` or
``raise NotImplementedError`` (issue 4's "done when").
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from connectors.suites.jsonl_bench import HumanEvalSource
from connectors.suites.pysource import replace_body
from connectors.suites.pytest_suite import PytestSuiteSource
from sdk.config import SandboxConfig
from sdk.sandbox.contract import ExecRequest, ExecStatus, Limits

sandbox_mod = pytest.importorskip("sdk.sandbox")
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "pyrepo"


def request(task, solution: str, hidden: bool = False) -> ExecRequest:
    v = task.verifier
    return ExecRequest(framework=v.framework, solution=solution, tests=v.hidden_tests if hidden else v.tests,
                       files=v.files, target_path=v.target_path, entry_point=v.entry_point, prelude=v.prelude,
                       limits=Limits(timeout_s=v.timeout_s))


@pytest.fixture(scope="module")
def sandbox():
    box = sandbox_mod.make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=2, cache=False))
    yield box
    box.close()


def _wrong(sandbox, tasks) -> list:
    """Verdicts that differ from the expectation (empty when every task behaves)."""
    reqs, labels = [], []
    for task in tasks:
        ep = task.verifier.entry_point
        reqs.append(request(task, task.reference))
        labels.append((ep, "reference", True))
        if task.verifier.hidden_tests:
            reqs.append(request(task, task.reference, hidden=True))
            labels.append((ep, "reference/hidden", True))
        for body in ("return None", "raise NotImplementedError"):
            reqs.append(request(task, replace_body(task.reference, ep, body)))
            labels.append((ep, body, False))
    results = sandbox.run(reqs)
    wrong = [(label, r.status.value, r.detail[:200]) for label, r in zip(labels, results)
             if r.all_passed != label[2] or (not label[2] and r.status == ExecStatus.OK)]
    return wrong


def test_pytest_tasks_validate_in_the_sandbox(sandbox, tmp_path):
    repo = shutil.copytree(FIXTURE, tmp_path / "repo", ignore=shutil.ignore_patterns("__pycache__", ".flaky_state"))
    # isolate off: the fixture's flaky test keeps its state in a file of the repository between runs; an isolated
    # run starts each run from the same overlay, so it passes every time there (as in the sandbox) and is a task
    result = PytestSuiteSource({"path": str(repo), "package": "minimath", "flaky_reruns": 1, "isolate": "off"},
                               repo, "fix").read()
    assert {t.verifier.entry_point for t in result.tasks} == {"add", "mul", "_times", "safe_div", "hypot", "fib", "clamp"}
    assert _wrong(sandbox, result.tasks) == []


def test_src_layout_task_validates(sandbox, tmp_path):
    repo = tmp_path / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "src/pkg/__init__.py").write_text("def twice(x):\n    return 2 * x\n")
    (repo / "tests/test_pkg.py").write_text("from pkg import twice\n\ndef test_twice():\n    assert twice(2) == 4\n")
    result = PytestSuiteSource({"path": str(repo), "package": "pkg"}, tmp_path, "d").read()
    assert _wrong(sandbox, result.tasks) == []


def test_humaneval_sample_validates(sandbox):
    tasks = HumanEvalSource({}, Path("."), "ood").read().tasks
    assert _wrong(sandbox, [tasks[i] for i in (0, 10, 32, 38)]) == []  # 10, 32 and 38 need the prelude's helpers
