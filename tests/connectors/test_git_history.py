"""The ``git_history`` source on a small repository built here (see ``history_repo``): which commits
become tasks, their fail-to-pass / pass-to-pass tests, quarantine reasons and the time-honest split."""

from __future__ import annotations

import pytest

from connectors.history.gitrepo import GitRepo
from connectors.history.mine import StateRuns, changed_tests, discover, function_key
from connectors.history.source import GitHistorySource, select_test_files, time_split
from sdk.errors import ConfigError, SourceError
from sdk.rewards.config import RewardConfig
from sdk.rewards.tiered import score_completion
from sdk.sources import resolve_source
from sdk.tasks.change import ChangeVerifier
from sdk.tasks.records import Split
from tests.connectors import history_repo


@pytest.fixture(scope="module")
def sandbox():
    yield from history_repo.module_sandbox()


@pytest.fixture(scope="module")
def mined(tmp_path_factory, sandbox):
    root = tmp_path_factory.mktemp("history")
    shas = history_repo.build(root / "calc")
    src = GitHistorySource({"path": "calc", "heldout_fraction": 0.5, "reruns": 1}, root, "python/calc",
                           sandbox=history_repo.FlakySandbox(sandbox))
    result = src.read()
    return shas, result, {t.source.commit: t for t in result.tasks}


def test_registered_as_a_source_type_with_checked_options(tmp_path):
    assert resolve_source("git_history") is GitHistorySource
    with pytest.raises(ConfigError, match="max_comits"):
        GitHistorySource({"path": ".", "max_comits": 3}, tmp_path, "d")
    with pytest.raises(SourceError, match="not a git repository"):
        GitHistorySource({"path": str(tmp_path)}, tmp_path, "d").read()


def test_counts_skips_and_quarantine_reasons(mined):
    shas, result, _ = mined
    assert result.counts["commits_scanned"] == 5  # the root commit has no parent
    assert result.counts["skipped_no_source_change"] == 1  # the docs-only commit
    assert result.counts["tasks"] == 2
    assert result.counts["quarantined_flaky_fail_to_pass"] == 1
    assert result.counts["quarantined_tests_cannot_run"] == 1
    reasons = {q.source.commit: q.reason for q in result.quarantined}
    assert set(reasons) == {shas["flaky"], shas["broken"]}
    assert "test_flaky_clock" in reasons[shas["flaky"]]
    assert "No module named 'not_a_real_package_xyz'" in reasons[shas["broken"]]
    assert shas["docs"] not in reasons


def test_fail_to_pass_and_pass_to_pass_of_a_multi_file_change(mined):
    shas, _, tasks = mined
    good = tasks[shas["good"]].verifier
    assert isinstance(good, ChangeVerifier)
    assert good.fail_to_pass == ("tests/test_ops.py::test_mul",)
    assert good.pass_to_pass == ("tests/test_ops.py::test_add", "tests/test_text.py::test_concat")
    assert good.files["calc/ops.py"] == history_repo.OPS  # the parent's source
    assert good.tests["tests/test_ops.py"] == history_repo.TEST_MUL  # the commit's tests
    ref = tasks[shas["good"]].reference
    assert "calc/ops.py" in ref and "calc/__init__.py" in ref and "tests/" not in ref
    newer = tasks[shas["newer"]].verifier
    assert newer.fail_to_pass == ("tests/test_ops.py::test_div",)
    assert "tests/test_ops.py::test_mul" in newer.pass_to_pass


def test_time_honest_split_and_no_future_in_a_task(mined):
    shas, result, tasks = mined
    assert result.splits_fixed
    assert tasks[shas["good"]].split == Split.TRAIN and tasks[shas["newer"]].split == Split.HELDOUT
    train = [t.metadata["commit_time"] for t in result.tasks if t.split == Split.TRAIN]
    held = [t.metadata["commit_time"] for t in result.tasks if t.split == Split.HELDOUT]
    assert max(train) < min(held)
    good = tasks[shas["good"]]
    assert "calc/clock.py" not in good.verifier.files and "calc/fmt.py" not in good.verifier.files
    assert "div" not in good.prompt[0].content and "Add mul" in good.prompt[0].content
    assert good.source.commit == shas["good"] and good.metadata["parent"] == shas["root"]


def test_references_earn_full_marks_and_wrong_diffs_do_not(mined, sandbox):
    shas, _, tasks = mined
    from sdk.train.sft import (
        answer_text,  # the SFT target is the form the prompt asks for
    )

    task = tasks[shas["good"]]
    assert answer_text(task).startswith("```diff\n")
    ok = score_completion(task, answer_text(task), sandbox, RewardConfig())
    assert ok.score == pytest.approx(1.0) and ok.components["all_passed"] == 1.0
    half = task.reference.replace("+from calc.ops import add, mul", "+from calc.ops import add")
    res = score_completion(task, f"```diff\n{half}```", sandbox, RewardConfig())
    assert res.components["f2p_frac"] == 0.0 and res.components["regressions"] == 0.0


def test_commits_are_the_first_parent_line_oldest_first(tmp_path):
    repo = history_repo.build(tmp_path / "r")
    commits = GitRepo(tmp_path / "r").commits()
    assert [c.sha for c in commits] == [repo[k] for k in ("good", "flaky", "broken", "docs", "newer")]
    assert commits[0].subject == "Add mul" and "export it" in commits[0].message


def test_discovery_rules_on_recorded_runs():
    parent = StateRuns(runs=[{"t.py::test_new": "failed", "t.py::test_old": "passed", "t.py::test_flip": "passed"},
                             {"t.py::test_new": "failed", "t.py::test_old": "passed", "t.py::test_flip": "failed"}])
    commit = StateRuns(runs=[{"t.py::test_new": "passed", "t.py::test_old": "passed", "t.py::test_flip": "passed",
                              "t.py::test_same": "passed"}] * 2)
    changed = {("t.py", "test_new"), ("t.py", "test_flip"), ("t.py", "test_same")}
    found = discover(parent, commit, changed, {"t.py"}, max_pass_to_pass=5)
    assert found.fail_to_pass == ["t.py::test_new", "t.py::test_same"]  # test_same: missing at the parent
    assert found.pass_to_pass == ["t.py::test_old"]
    assert found.flaky == ["t.py::test_flip"]


def test_changed_tests_by_function_source():
    before = {"t.py": "def test_a():\n    assert 1\n\n\nclass TestB:\n    def test_c(self):\n        assert 1\n"}
    after = {"t.py": "def test_a():\n    assert 1\n\n\nclass TestB:\n    def test_c(self):\n        assert 2\n",
             "u.py": "def test_d():\n    pass\n"}
    assert changed_tests(before, after) == {("t.py", "TestB.test_c"), ("u.py", "test_d")}
    assert function_key("t.py::TestB::test_c[1-2]") == ("t.py", "TestB.test_c")


def test_select_test_files_and_time_split():
    tests = {"tests/test_a.py": "import calc.ops", "tests/test_b.py": "x", "tests/test_c.py": "from calc import ops"}
    assert select_test_files(tests, {"tests/test_b.py"}, ["calc/ops.py"], 2) == ["tests/test_b.py", "tests/test_a.py"]
    assert time_split([], 0.3) == []
