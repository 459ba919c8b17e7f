"""The ``git_history`` source on a Go repository built here (see ``history_go_repo``): mined tasks,
their fail-to-pass / pass-to-pass tests (``<file>_test.go::TestName``), a commit whose tests cannot
build, the time-honest split, and the change reward on Go. Skipped with the reason where ``go`` is
missing (``.ci/run`` installs Debian's ``golang-go``). One module fixture mines once (about ten
sandboxed ``go test`` runs)."""

from __future__ import annotations

import shutil

import pytest

from connectors.history.source import GitHistorySource, select_go_test_files
from sdk.rewards.config import RewardConfig
from sdk.rewards.tiered import score_completion
from sdk.sandbox.languages.goguard import channel_outcomes, instrument, unguarded_go
from sdk.sandbox.languages.gorepo import go_test_functions, node_ids
from sdk.tasks.change import ChangeVerifier
from sdk.tasks.records import Split
from sdk.types import Framework, Language
from tests.connectors import history_go_repo as gr
from tests.connectors import history_repo

STREAM = "\n".join([
    '{"Action":"run","Package":"example.com/shop/calc","Test":"TestAdd"}',
    '{"Action":"pass","Package":"example.com/shop/calc","Test":"TestAdd"}',
    '{"Action":"output","Package":"example.com/shop/stats","Test":"TestSum","Output":"boom\\n"}',
    '{"Action":"fail","Package":"example.com/shop/stats","Test":"TestSum"}',
    '{"Action":"pass","Package":"example.com/shop/stats","Test":"TestSum/sub"}',
    '{"Action":"fail","Package":"example.com/shop/calc"}',
    "not json"])


def test_go_tests_are_named_by_their_file_and_subtests_stay_in_their_parent():
    tests = {"calc/ops_test.go": gr.TEST_MUL, "stats/stats_test.go": gr.TEST_STATS}
    got = {t.name: (t.outcome, t.message) for t in node_ids(STREAM, {"go.mod": gr.GO_MOD}, tests)}
    assert got == {"calc/ops_test.go::TestAdd": ("passed", ""), "stats/stats_test.go::TestSum": ("failed", "boom\n")}
    assert set(go_test_functions(gr.TEST_MUL)) == {"TestAdd", "TestMul"}
    assert go_test_functions(gr.TEST_MUL)["TestAdd"] == go_test_functions(gr.TEST_OPS)["TestAdd"]
    assert go_test_functions("func Testing(t *testing.T) {\n}\nfunc TestX(b *testing.B) {\n}\n") == {}


def test_go_test_selection_takes_whole_packages_and_their_importers():
    source = {"go.mod": gr.GO_MOD, "calc/ops.go": gr.OPS, "stats/stats.go": gr.STATS, "fmtx/fmtx.go": "package fmtx\n"}
    tests = {"calc/ops_test.go": "", "calc/div_test.go": "", "stats/stats_test.go": "", "fmtx/fmtx_test.go": ""}
    got = select_go_test_files(tests, {"calc/div_test.go"}, ["calc/div.go"], source, budget=6)
    assert got == ["calc/div_test.go", "calc/ops_test.go", "stats/stats_test.go"]
    assert select_go_test_files(tests, {"calc/div_test.go"}, ["calc/div.go"], source, budget=2) == \
        ["calc/div_test.go", "calc/ops_test.go"]


@pytest.fixture(scope="module")
def sandbox():
    if shutil.which("go") is None:
        pytest.skip("go is not installed (Debian: apt-get install golang-go; .ci/run does)")
    from sdk.sandbox import toolchain_status

    why = toolchain_status(Language.GO)
    if why:
        pytest.skip(why)
    yield from history_repo.module_sandbox()


@pytest.fixture(scope="module")
def mined(tmp_path_factory, sandbox):
    root = tmp_path_factory.mktemp("gohistory")
    shas = gr.build(root / "shop")
    result = GitHistorySource({"path": "shop", "heldout_fraction": 0.5, "reruns": 0}, root, "go/shop",
                              sandbox=sandbox).read()
    return shas, result, {t.source.commit: t for t in result.tasks}


def test_go_history_counts_and_a_commit_whose_tests_cannot_build(mined):
    shas, result, _ = mined
    assert (result.counts["commits_scanned"], result.counts["skipped_no_source_change"], result.counts["tasks"],
            result.counts["quarantined"]) == (4, 1, 2, 1)
    (q,) = result.quarantined
    assert q.source.commit == shas["broken"] and q.reason.startswith("tests_cannot_run")
    assert "undefined: Padd" in q.reason


def test_go_fail_to_pass_and_pass_to_pass_of_multi_file_changes(mined):
    shas, _, tasks = mined
    good = tasks[shas["good"]].verifier
    assert isinstance(good, ChangeVerifier) and (good.language, good.framework) == (Language.GO, Framework.GO_REPO)
    assert good.fail_to_pass == ("calc/ops_test.go::TestMul",)
    assert good.pass_to_pass == ("stats/stats_test.go::TestSum",)
    assert good.files["calc/ops.go"] == gr.OPS and "calc/mul.go" not in good.files
    assert good.tests == {"calc/ops_test.go": gr.TEST_MUL, "stats/stats_test.go": gr.TEST_STATS}
    ref = tasks[shas["good"]].reference
    assert "b/calc/ops.go" in ref and "b/calc/mul.go" in ref and "_test.go" not in ref
    newer = tasks[shas["newer"]]
    assert newer.verifier.fail_to_pass == ("calc/div_test.go::TestDiv",)
    assert newer.verifier.pass_to_pass == ("stats/stats_test.go::TestSum",)
    assert "fmtx/fmtx.go" in newer.verifier.files and "fmtx/fmtx_test.go" not in newer.verifier.tests
    assert tasks[shas["good"]].split == Split.TRAIN and newer.split == Split.HELDOUT
    assert "```go" in tasks[shas["good"]].prompt[0].content


def test_go_references_earn_full_marks_and_a_partial_change_breaks_the_importer(mined, sandbox):
    shas, _, tasks = mined
    task = tasks[shas["good"]]
    ok = score_completion(task, f"```diff\n{task.reference}```", sandbox, RewardConfig())
    assert ok.score == pytest.approx(1.0) and ok.components["all_passed"] == 1.0
    half = task.reference[:task.reference.index("diff --git a/calc/ops.go")]   # mul.go only: ops.go keeps no Mul
    res = score_completion(task, f"```diff\n{half}```", sandbox, RewardConfig())
    assert (res.components["collects"], res.components["f2p_frac"], res.components["regressions"]) == (0.0, 0.0, 0.0)
    wrong = task.reference + ("diff --git a/calc/zero.go b/calc/zero.go\nnew file mode 100644\n--- /dev/null\n"
                              "+++ b/calc/zero.go\n@@ -0,0 +1,3 @@\n+package calc\n+\n+func Add(a, b int) int { return 0 }\n")
    res = score_completion(task, f"```diff\n{wrong}```", sandbox, RewardConfig())
    assert (res.components["collects"], res.components["regressions"]) == (0.0, 1.0)


def _adds(*files: tuple[str, str]) -> str:
    """A completion whose diff adds each ``(path, text)`` of ``files``."""
    lines = []
    for path, text in files:
        lines += [f"diff --git a/{path} b/{path}", "new file mode 100644", "--- /dev/null", f"+++ b/{path}",
                  f"@@ -0,0 +1,{text.count(chr(10))} @@", *("+" + ln for ln in text.splitlines())]
    return "```diff\n" + "\n".join(lines) + "\n```"


# Mul prints the framing lines of a pass (with test2json's ^V marker) and leaves with status 0
# before the testing package can print the failure
FORGE_EXIT = ('package calc\n\nimport "os"\n\nfunc Mul(a, b int) int {\n'
              '\tos.Stdout.WriteString("\\x16--- PASS: TestMul (0.00s)\\n\\x16PASS\\nok\\n")\n\tos.Exit(0)\n\treturn 0\n}\n')
# a package of the candidate's that calc (so stats) imports: its init takes what fd 4 holds (the key,
# were it first), signs a pass of every test of the binary's package in sequence and leaves before any
# test runs: a perfect forgery had it read the key (it did, checked by hand, when only the test
# packages imported the guard)
STEAL = ('package aaa\n\nimport (\n\t"crypto/sha256"\n\t"encoding/hex"\n\t"io"\n\t"os"\n\t"strings"\n)\n\n'
         'func init() {\n\tkey := make([]byte, 32)\n\tn, _ := io.ReadFull(os.NewFile(4, "k"), key)\n'
         '\tnames := []string{"stats/stats_test.go::TestSum"}\n\twd, _ := os.Getwd()\n'
         '\tif strings.HasSuffix(wd, "calc") {\n\t\tnames = []string{"calc/ops_test.go::TestAdd", "calc/ops_test.go::TestMul"}\n\t}\n'
         '\tfor i, name := range names {\n'
         '\t\tbody := string(rune(48+i)) + " " + name + " passed"\n'
         '\t\tsum := sha256.Sum256(append(key[:n:n], body...))\n'
         '\t\tos.NewFile(3, "r").WriteString(hex.EncodeToString(sum[:16]) + " " + body + "\\n")\n\t}\n'
         '\tos.Exit(0)\n}\n')
FORGE_KEY = 'package calc\n\nimport _ "example.com/shop/aaa"\n\nfunc Mul(a, b int) int { return 0 }\n'
# Mul leaves the test goroutine before TestMul's check can fail it (deferred code still runs)
FORGE_GOEXIT = 'package calc\n\nimport "runtime"\n\nfunc Mul(a, b int) int {\n\truntime.Goexit()\n\treturn 0\n}\n'


@pytest.mark.parametrize("forge", [FORGE_EXIT, FORGE_KEY, FORGE_GOEXIT], ids=["exit", "stolen_key", "goexit"])
def test_a_go_candidate_that_forges_its_test_outcomes_earns_nothing(mined, sandbox, forge):
    shas, _, tasks = mined
    files = [("aaa/steal.go", STEAL)] if forge is FORGE_KEY else []
    res = score_completion(tasks[shas["good"]], _adds(*files, ("calc/forge.go", forge)), sandbox, RewardConfig())
    assert res.components.get("f2p_frac", 0.0) == 0.0 and res.score <= 0.1, res   # at most "applies" and "collects"
    assert res.fail_to_pass_failing == ("calc/ops_test.go::TestMul",)
    assert ("runner_tampering" in res.flags) == (forge is FORGE_KEY)   # unsigned lines on the channel


def test_the_guarded_test_process_cannot_open_its_own_memory(mined, sandbox):
    # Mul is right only when /proc/self/mem cannot be opened: the guard made the process non-dumpable
    # before the candidate's code ran (a scan of it could find the key)
    text = ('package calc\n\nimport "os"\n\nfunc Mul(a, b int) int {\n\tif f, err := os.Open("/proc/self/mem"); err == nil {\n'
            '\t\tf.Close()\n\t\treturn 0\n\t}\n\treturn a * b\n}\n')
    res = score_completion(mined[2][mined[0]["good"]], _adds(("calc/forge.go", text)), sandbox, RewardConfig())
    assert res.components["f2p_frac"] == 1.0, res


def test_a_go_change_that_could_leave_memory_safety_is_refused_before_it_runs(mined, sandbox):
    shas, _, tasks = mined
    text = 'package calc\n\nimport (\n\t"fmt"\n\tr "reflect"\n)\n\nfunc Mul(a, b int) int { _ = r.TypeOf(fmt.Sprint); return a * b }\n'
    res = score_completion(tasks[shas["good"]], _adds(("calc/forge.go", text)), sandbox, RewardConfig())
    assert (res.score, res.status.value, res.flags) == (0.0, "suspected_hacking", ("runner_tampering",))
    assert "calc/forge.go: imports reflect" in res.detail
    assert tasks[shas["good"]].verifier.protected("go.mod") == "edits_ci"


def test_unguarded_go_names_what_leaves_memory_safety():
    assert unguarded_go("a/x.go", 'package a\n\nimport "unsafe"\n') == "imports unsafe"
    assert unguarded_go("a/x.go", 'package a\n\nimport (\n\t_ "embed"\n\ts "syscall" // raw\n\t. "reflect"\n)\n') == \
        "imports reflect, syscall"
    assert unguarded_go("a/x.go", "package a\n\n//go:linkname now runtime.nanotime\nfunc now() int64\n") == "uses //go:linkname"
    assert unguarded_go("a/x_amd64.s", "TEXT ·f(SB),0,$0\n").startswith("adds or changes a non-Go file")
    assert unguarded_go("a/x_test.go", 'package a\n\nimport "unsafe"\n') is None
    assert unguarded_go("a/x.go", 'package a\n\n// import "unsafe"\nimport "os"\n') is None


def test_instrument_guards_every_module_package_and_wraps_each_test():
    files = {"go.mod": gr.GO_MOD, "calc/ops.go": gr.OPS, "stats/stats.go": gr.STATS, "gen.go": "//go:build ignore\n\npackage main\n",
             "root.go": "package shop\n", "tools/go.mod": "module x\n", "tools/t.go": "package t\n",
             "calc/testdata/d.go": "package d\n", "tlguardabc/evil.go": "package tlguardabc\n"}
    tests = {"calc/ops_test.go": "//go:build !windows\n\n" + gr.TEST_MUL, "stats/stats_test.go": gr.TEST_STATS,
             "stats/w_windows_test.go": gr.TEST_STATS.replace("TestSum", "TestW"), "stats/h_test.go": "package stats\n"}
    files.update(tests)
    assert instrument(files, tests, sfx="abc") == ["calc", "stats"]
    guard = 'import _ "example.com/shop/tlguardabc"\n'
    assert files["calc/zz_tlguardabc.go"] == "package calc\n\n" + guard
    assert files["zz_tlguardabc.go"] == "package shop\n\n" + guard           # gen.go is `ignore`: not the name
    assert {p for p in files if "zz_tlguard" in p} == {"calc/zz_tlguardabc.go", "stats/zz_tlguardabc.go", "zz_tlguardabc.go"}
    assert "tlguardabc/evil.go" not in files and "func Run(t *testing.T" in files["tlguardabc/guard.go"]
    assert "func tlabc_TestMul(t *testing.T)" in files["calc/ops_test.go"] and "func TestMul(" not in files["calc/ops_test.go"]
    wrap = files["calc/tlwrapabc_ops_test.go"]
    assert wrap.startswith("//go:build !windows\n") and "package calc\n" in wrap
    assert 'func TestMul(t *testing.T) { tlgabc.Run(t, "calc/ops_test.go::TestMul", tlabc_TestMul) }' in wrap
    assert "stats/tlwrapabc_w_windows_test.go" in files and "stats/tlwrapabc_h_test.go" not in files   # same GOOS suffix
    assert channel_outcomes(["calc/ops_test.go::TestMul passed", "x failed", "junk", "y maybe"]) == \
        [("calc/ops_test.go::TestMul", "passed"), ("x", "failed")]
