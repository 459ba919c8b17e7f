"""The change reward (sdk.rewards.change, sdk.rewards.patch): a diff applied to the parent's files and
judged by fail-to-pass and pass-to-pass tests in the real sandbox, through ``score_completion``."""

from __future__ import annotations

import pytest

from sdk.rewards.config import RewardConfig
from sdk.rewards.patch import PatchError, apply_diff, extract_diff, split_diff
from sdk.rewards.result import RewardStatus
from sdk.rewards.tiered import score_completion
from sdk.tasks.change import ChangeVerifier, module_groups
from sdk.tasks.records import Message, Source, Task
from tests.connectors.history_repo import OPS, TEST_MUL, TEST_TEXT

INIT = "from calc.ops import add\n"
SOURCE = """\
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -1 +1 @@
-from calc.ops import add
+from calc.ops import add, mul
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -1,2 +1,6 @@
 def add(a, b):
     return a + b
+
+
+def mul(a, b):
+    return a * b
"""
TEST_EDIT = """\
--- a/tests/test_ops.py
+++ b/tests/test_ops.py
@@ -8,3 +8,2 @@
 def test_mul():
-    from calc import mul
-    assert mul(2, 3) == 6
+    pass
"""
CI_EDIT = """\
--- /dev/null
+++ b/.github/workflows/ci.yml
@@ -0,0 +1 @@
+on: push
"""


@pytest.fixture(scope="module")
def task() -> Task:
    verifier = ChangeVerifier(files={"calc/__init__.py": INIT, "calc/ops.py": OPS, "README.md": "calc\n"},
                              tests={"tests/test_ops.py": TEST_MUL, "tests/test_text.py": TEST_TEXT},
                              fail_to_pass=("tests/test_ops.py::test_mul",),
                              pass_to_pass=("tests/test_ops.py::test_add", "tests/test_text.py::test_concat"))
    return Task(domain="python/calc", prompt=(Message(role="user", content="Add mul"),), verifier=verifier,
                reference=SOURCE, source=Source(connector="git_history"))


def _score(task, sandbox, diff):
    return score_completion(task, f"Here it is:\n```diff\n{diff}```\n", sandbox, RewardConfig())


def test_a_correct_multi_file_diff_earns_full_marks(task, real_sandbox):
    res = _score(task, real_sandbox, SOURCE)
    assert res.status == RewardStatus.OK and res.score == pytest.approx(1.0)
    assert res.components["f2p_frac"] == 1.0 and res.components["regressions"] == 0.0
    assert res.components["files_changed"] == 2.0 and not res.flags


def test_each_broken_pass_to_pass_test_costs_its_share_of_the_penalty(task, real_sandbox):
    breaks_concat = SOURCE.replace(" def add(a, b):\n     return a + b\n",
                                   "-def add(a, b):\n-    return a + b\n+def add(a, b):\n"
                                   "+    return b + a if isinstance(a, str) else a + b\n")
    res = _score(task, real_sandbox, breaks_concat)
    assert res.components["f2p_frac"] == 1.0 and res.components["regressions"] == 1.0
    assert res.components["regression_penalty"] == pytest.approx(0.25)  # 0.5 x 1 of 2
    assert res.score == pytest.approx(0.75) and res.status == RewardStatus.FAILED
    assert "test_concat" in res.detail
    assert res.pass_to_pass_broken == ("tests/test_text.py::test_concat",) and res.fail_to_pass_failing == ()


def test_edits_to_tests_and_ci_are_ignored_and_flagged(task, real_sandbox):
    only_tests = _score(task, real_sandbox, TEST_EDIT)
    assert only_tests.score == 0.0 and only_tests.status == RewardStatus.NO_CODE
    assert only_tests.flags == ("edits_tests",)
    both = _score(task, real_sandbox, TEST_EDIT + SOURCE + CI_EDIT)
    assert both.score == pytest.approx(1.0)  # the source change is judged against the pristine tests
    assert set(both.flags) == {"edits_tests", "edits_ci"}
    assert both.components["flag_edits_tests"] == 1.0 and both.components["flag_edits_ci"] == 1.0
    cheat = _score(task, real_sandbox, TEST_EDIT + SOURCE.split("--- a/calc/ops.py")[0])
    assert cheat.components["f2p_frac"] == 0.0  # the edited test_mul is not what runs


def test_a_diff_that_does_not_apply_or_breaks_collection(task, real_sandbox):
    stale = SOURCE.replace(" def add(a, b):", " def add(x, y):")
    res = _score(task, real_sandbox, stale)
    assert res.score == 0.0 and res.status == RewardStatus.COMPILE_ERROR and res.components["applies"] == 0.0
    assert "does not apply" in res.detail
    assert res.fail_to_pass_failing == ("tests/test_ops.py::test_mul",) and res.pass_to_pass_broken == ()
    broken = SOURCE.replace("+from calc.ops import add, mul", "+from calc.ops import add, mul, nope")
    res = _score(task, real_sandbox, broken)
    assert res.components["applies"] == 1.0 and res.components["collects"] == 0.0
    assert res.components["regressions"] == 2.0 and res.score == pytest.approx(0.05 - 0.5)
    assert res.fail_to_pass_failing == ("tests/test_ops.py::test_mul",) and len(res.pass_to_pass_broken) == 2
    none = score_completion(task, "I would add a mul function.", real_sandbox, RewardConfig())
    assert none.status == RewardStatus.NO_CODE and none.score == 0.0


def test_extract_and_split_diffs():
    assert extract_diff("```diff\n" + SOURCE + "```") == SOURCE
    assert extract_diff("text first\n" + SOURCE) == SOURCE
    assert extract_diff("```python\nprint(1)\n```") is None
    sections = split_diff(SOURCE + CI_EDIT)
    assert [s.paths for s in sections] == [("calc/__init__.py",), ("calc/ops.py",), (".github/workflows/ci.yml",)]
    assert sections[2].old is None


def test_apply_adds_deletes_and_refuses_escapes():
    files = {"a.py": "x = 1\n", "b.py": "y = 2\n"}
    diff = ("diff --git a/b.py b/b.py\ndeleted file mode 100644\n--- a/b.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-y = 2\n"
            "diff --git a/c.py b/c.py\nnew file mode 100644\n--- /dev/null\n+++ b/c.py\n@@ -0,0 +1 @@\n+z = 3\n")
    out = apply_diff(files, split_diff(diff))
    assert out.files == {"a.py": "x = 1\n", "c.py": "z = 3\n"} and out.deleted == ["b.py"]
    assert files == {"a.py": "x = 1\n", "b.py": "y = 2\n"}  # the snapshot is not changed
    loose = "--- a.py\n+++ a.py\n@@ -1,7 +1,9 @@\n-x = 1\n+x = 2\n"  # no a/ b/ prefixes, wrong counts
    assert apply_diff(files, split_diff(loose)).files["a.py"] == "x = 2\n"
    with pytest.raises(PatchError, match="leaves the repository"):
        apply_diff(files, split_diff("--- a/../x.py\n+++ b/../x.py\n@@ -0,0 +1 @@\n+1\n"))
    with pytest.raises(PatchError, match="symlink"):
        apply_diff(files, split_diff("diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n"
                                     "@@ -0,0 +1 @@\n+/etc/passwd\n"))


def test_test_modules_sharing_a_file_name_run_apart(real_sandbox):
    assert module_groups(["a/test_core.py", "b/test_core.py", "c/test_x.py"]) == [
        ["a/test_core.py", "c/test_x.py"], ["b/test_core.py"]]
    verifier = ChangeVerifier(files={"calc/__init__.py": INIT, "calc/ops.py": OPS},
                              tests={"tests/a/test_core.py": TEST_MUL, "tests/b/test_core.py": TEST_TEXT},
                              fail_to_pass=("tests/a/test_core.py::test_mul",),
                              pass_to_pass=("tests/a/test_core.py::test_add", "tests/b/test_core.py::test_concat"))
    task = Task(domain="python/calc", prompt=(Message(role="user", content="Add mul"),), verifier=verifier,
                reference=SOURCE, source=Source(connector="git_history"))
    res = _score(task, real_sandbox, SOURCE)  # one pytest session cannot import two test_core.py
    assert res.score == pytest.approx(1.0) and res.components["p2p_total"] == 2.0
