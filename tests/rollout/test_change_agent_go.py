"""``run_tests`` for Go change tasks (:mod:`sdk.rollout.go_visible`): the hidden fail-to-pass test cut out of
its file (an import it alone used made blank so the package still builds), the pass-to-pass tests run in the
sandbox and reported exactly, a change that breaks them shown as broken, a refused change answered with the
reason, and the final diff scored by the change reward. The task is mined from a Go repository built here:

1. ``root``: ``calc`` (``Add``, ``Abs`` that forgets negatives; ``TestAdd``) and ``stats`` (``Sum`` over
   ``calc.Add``; ``TestSum``).
2. ``fix``: "Abs of a negative number" -- ``calc/ops.go`` fixed and ``TestAbs`` added to ``calc/ops_test.go``
   with a new ``fmt`` import only it uses. Fail-to-pass ``TestAbs``; pass-to-pass ``TestAdd``, ``TestSum``.
"""

from __future__ import annotations

import shutil

import pytest

from connectors.history.source import GitHistorySource
from sdk.rewards.config import RewardConfig
from sdk.rollout.change_agent import ChangeAgentReward, agent_completion
from sdk.rollout.go_visible import (
    blank_unused_imports,
    cut_test_functions,
    default_name,
    strip_comments_and_strings,
)
from tests.connectors.history_repo import commit, git, module_sandbox
from tests.rollout.test_change_agent import roll

GO_MOD = "module example.com/shop\n\ngo 1.19\n"
OPS = ("package calc\n\n// Add returns a + b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n\n"
       "// Abs returns |a|.\nfunc Abs(a int) int {\n\treturn a\n}\n")
OPS_FIX = OPS.replace("\treturn a\n}", "\tif a < 0 {\n\t\treturn -a\n\t}\n\treturn a\n}")
TEST_ADD = ("func TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add(2, 3) != 5\")\n\t}\n}\n")
TEST_ABS = ("// TestAbs checks negatives.\nfunc TestAbs(t *testing.T) {\n\tif got := Abs(-2); got != 2 {\n"
            "\t\tt.Fatal(fmt.Sprintf(\"Abs(-2) = %d\", got))\n\t}\n}\n")
TEST_OPS = "package calc\n\nimport \"testing\"\n\n" + TEST_ADD
TEST_OPS_ABS = "package calc\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n)\n\n" + TEST_ADD + "\n" + TEST_ABS
STATS = ("package stats\n\nimport \"example.com/shop/calc\"\n\n// Sum adds xs.\nfunc Sum(xs ...int) int {\n\tt := 0\n"
         "\tfor _, x := range xs {\n\t\tt = calc.Add(t, x)\n\t}\n\treturn t\n}\n")
TEST_STATS = ("package stats\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(1, 2, 3) != 6 {\n"
              "\t\tt.Fatal(\"Sum\")\n\t}\n}\n")
FIX_ABS = ("edit_file", {"path": "calc/ops.go", "old_text": "\treturn a\n}", "new_text": "\tif a < 0 {\n\t\treturn -a\n\t}\n\treturn a\n}"})
BREAK_ADD = ("edit_file", {"path": "calc/ops.go", "old_text": "return a + b", "new_text": "return a - b"})


def test_cut_blanks_the_hidden_function_and_only_the_imports_it_alone_used():
    cut, n = cut_test_functions(TEST_OPS_ABS, {"TestAbs", "TestMissing"})
    assert n == 1 and "TestAbs" not in cut and "Abs(-2)" not in cut and "func TestAdd(" in cut
    assert cut.count("\n") == TEST_OPS_ABS.count("\n")   # lines blanked, not removed
    fixed = blank_unused_imports(cut, {}, "example.com/shop")
    assert fixed.startswith("package calc\n\nimport (\n\t_ \"fmt\"\n\t\"testing\"\n)\n")
    # a name that occurs only in a comment or a string does not count as used; aliases and versions resolve
    text = ('package x\n\nimport "fmt"\nimport s "strings"\nimport "gopkg.in/yaml.v2"\nimport "example.com/m/pk"\n\n'
            'func f() { // fmt.Println\n\t_ = "fmt.x"\n\t_ = s.ToUpper\n\t_ = pkg.V\n}\n')
    out = blank_unused_imports(text, {"pk": "pkg"}, "example.com/m")
    assert 'import _ "fmt"\nimport s "strings"\nimport _ "gopkg.in/yaml.v2"\nimport "example.com/m/pk"\n' in out
    src = 'a /* x\ny */ "q\\"r" `z` \'c\' b'
    out = strip_comments_and_strings(src)
    assert out.split() == ["a", "b"] and len(out) == len(src) and out.index("\n") == src.index("\n")
    assert (default_name("github.com/a/b/v3", {}, ""), default_name("math/rand", {}, "")) == ("b", "rand")


@pytest.fixture(scope="module")
def sandbox():
    if shutil.which("go") is None:
        pytest.skip("go is not installed (Debian: apt-get install golang-go; .ci/run does)")
    yield from module_sandbox()


@pytest.fixture(scope="module")
def task(tmp_path_factory, sandbox):
    root = tmp_path_factory.mktemp("goagent")
    repo = root / "shop"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, {"go.mod": GO_MOD, "calc/ops.go": OPS, "calc/ops_test.go": TEST_OPS, "stats/stats.go": STATS,
                  "stats/stats_test.go": TEST_STATS}, "Initial shop", 1)
    commit(repo, {"calc/ops.go": OPS_FIX, "calc/ops_test.go": TEST_OPS_ABS}, "Abs of a negative number", 2)
    src = GitHistorySource({"path": "shop", "heldout_fraction": 0.0, "reruns": 0, "answer": "tools",
                            "validate_references": False}, root,
                           "go/shop", sandbox=sandbox)
    [task] = src.read().tasks
    assert task.verifier.fail_to_pass == ("calc/ops_test.go::TestAbs",)
    assert task.verifier.pass_to_pass == ("calc/ops_test.go::TestAdd", "stats/stats_test.go::TestSum")
    return task


def _answers(ep) -> list[str]:
    return [c["answer"] for c in ep.trace()["calls"] if c["name"] == "run_tests"]


def test_go_run_tests_runs_the_pass_to_pass_tests_and_hides_the_fail_to_pass_one(task, sandbox, tool_tokenizer):
    ep = roll(task, sandbox, tool_tokenizer, [("run_tests", {}), BREAK_ADD, ("run_tests", {})])
    before, after = _answers(ep)
    assert before.splitlines() == ["2/2 pass-to-pass tests pass (the tests that decide the task are hidden)",
                                   "PASSED calc/ops_test.go::TestAdd", "PASSED stats/stats_test.go::TestSum"]
    lines = after.splitlines()
    assert lines[0].startswith("0/2 pass-to-pass tests pass")
    assert lines[1].startswith("FAILED calc/ops_test.go::TestAdd: ") and "Add(2, 3) != 5" in lines[1]
    assert lines[2].startswith("FAILED stats/stats_test.go::TestSum")
    assert "TestAbs" not in before + after and "Abs(-2)" not in before + after


def test_go_run_tests_refuses_a_change_the_reward_would_refuse(task, sandbox, tool_tokenizer):
    evil = ("edit_file", {"path": "calc/peek.go", "old_text": "",
                          "new_text": "package calc\n\nimport \"unsafe\"\n\nvar _ = unsafe.Sizeof(0)\n"})
    [answer] = _answers(roll(task, sandbox, tool_tokenizer, [evil, ("run_tests", {})]))
    assert answer == "error: your change would be refused without running any test: calc/peek.go: imports unsafe"


def test_go_agent_changes_are_scored_by_the_change_reward(task, sandbox, tool_tokenizer):
    weights = RewardConfig()
    eps = [roll(task, sandbox, tool_tokenizer, [FIX_ABS]), roll(task, sandbox, tool_tokenizer, [FIX_ABS, BREAK_ADD])]
    right, broken = ChangeAgentReward(weights, sandbox=sandbox, self_test=False).score(
        [agent_completion(e.trace()) for e in eps], task_json=[task.model_dump_json()] * 2)
    assert right.score == 1.0 and right.status.value == "ok"
    assert broken.pass_to_pass_broken == ("calc/ops_test.go::TestAdd", "stats/stats_test.go::TestSum")
    assert broken.fail_to_pass_failing == ()
