"""The ``git_history`` source on shapes of a real Go history (golang-lru's, issue 17) that the
``shop`` module of ``history_go_repo`` does not have: a helper ``_test.go`` file with no test of its
own, a nested module, a commit that only deletes a test file, and one that changes ``go.mod``.
Each must get the reason that says what happened. Skipped where ``go`` is missing."""

from __future__ import annotations

import shutil

import pytest

from tests.connectors import history_repo
from tests.connectors.test_git_history_shapes import mine

GO_MOD = "module example.com/m\n\ngo 1.19\n"
A = "package m\n\n// A is one.\nfunc A() int {\n\treturn 1\n}\n"
B = "package m\n\n// B is two.\nfunc B() int {\n\treturn 2\n}\n"
UTIL = "package m\n\nfunc one() int {\n\treturn 1\n}\n"
TEST_A = "package m\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tif A() != one() {\n\t\tt.Fatal(A())\n\t}\n}\n"
TEST_B = "package m\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) {\n\tif B() != 2 {\n\t\tt.Fatal(B())\n\t}\n}\n"
TEST_C = "package m\n\nimport \"testing\"\n\nfunc TestC(t *testing.T) {\n\tif C() != 3 {\n\t\tt.Fatal(C())\n\t}\n}\n"
SUB = "package sub\n\n// S is four.\nfunc S() int {\n\treturn 4\n}\n"
INNER = "package inner\n\n// Four is 4.\nconst Four = 4\n"
D = "package m\n\nimport \"example.com/m/v2/inner\"\n\n// D is four.\nfunc D() int {\n\treturn inner.Four\n}\n"
TEST_D = "package m\n\nimport \"testing\"\n\nfunc TestD(t *testing.T) {\n\tif D() != 4 {\n\t\tt.Fatal(D())\n\t}\n}\n"
TEST_S = "package sub\n\nimport \"testing\"\n\nfunc TestS(t *testing.T) {\n\tif S() != 4 {\n\t\tt.Fatal(S())\n\t}\n}\n"


@pytest.fixture(scope="module")
def sandbox():
    if shutil.which("go") is None:
        pytest.skip("go is not installed (Debian: apt-get install golang-go; .ci/run does)")
    yield from history_repo.module_sandbox()


def test_go_commits_that_make_no_task_get_the_reason_that_says_why(tmp_path, sandbox):
    shas, result = mine(tmp_path, [
        ({"go.mod": GO_MOD, "a.go": A, "b.go": B, "util.go": UTIL, "a_test.go": TEST_A, "b_test.go": TEST_B}, "Initial"),
        ({"util.go": None, "util_test.go": UTIL, "a.go": A.replace("A is one", "A is 1")}, "Make one test-only"),
        ({"sub/go.mod": "module example.com/sub\n\ngo 1.19\n", "sub/s.go": SUB, "sub/s_test.go": TEST_S},
         "Add the sub module"),
        ({"b_test.go": None, "b.go": B.replace("B is two", "B is 2")}, "Drop B's test"),
        ({"go.mod": GO_MOD + "\n// tidy\n", "c.go": A.replace("A", "C").replace("1", "3"), "c_test.go": TEST_C},
         "Add C"),
        ({"go.mod": GO_MOD.replace("example.com/m", "example.com/m/v2"), "inner/inner.go": INNER, "d.go": D,
          "d_test.go": TEST_D}, "v2: add D over inner"),
    ], sandbox)
    reasons = {q.source.commit: q.reason for q in result.quarantined}
    assert set(reasons) == {shas[1], shas[2], shas[3], shas[5]}
    # the helper file defines no test, but the package's TestA ran: a refactor, not a broken suite
    assert reasons[shas[1]].startswith("no_fail_to_pass: no test the commit adds or changes")
    assert reasons[shas[2]].startswith("tests_cannot_run") and "nested module (sub/go.mod)" in reasons[shas[2]]
    assert reasons[shas[3]] == ("no_fail_to_pass: the commit changes no test module that exists at the commit "
                                "(deletes b_test.go)")
    # go.mod is runner configuration: left out of the reference, which still earns 1.0 unflagged when
    # the commit did not need it, and fails with the reason when it did (a module path change)
    (task,) = result.tasks
    assert task.source.commit == shas[4] and task.metadata["dropped_from_reference"] == ["go.mod"]
    assert "go.mod" not in task.reference and "c.go" in task.reference
    assert reasons[shas[5]].startswith("reference_fails") and "the commit also changes go.mod" in reasons[shas[5]]


def test_a_commit_from_before_go_modules_says_so_with_its_fix(tmp_path, sandbox):
    """No go.mod: the package's import of its own ``example.com/m/inner`` cannot resolve. The
    reason says why, and the build summary's fix is the reason's own (it once advised ``exclude``
    for 'the Go package example.com/m/inner', the repository's own)."""
    from sdk.run.health import group_fix

    a = A.replace("package m\n", "package m\n\nimport \"example.com/m/inner\"\n").replace("return 1", "return inner.Four")
    shas, result = mine(tmp_path, [
        ({"inner/inner.go": INNER, "a.go": a, "a_test.go": TEST_A.replace("one()", "4")}, "Initial"),
        ({"b.go": B, "b_test.go": TEST_B}, "Add B"),
    ], sandbox, language="go")
    (q,) = result.quarantined
    assert q.source.commit == shas[1] and q.reason.startswith("tests_cannot_run")
    assert "no go.mod at the commit: a tree from before Go modules" in q.reason
    assert group_fix([q]).startswith("none needed: commits from before the repository's go.mod make no task")
