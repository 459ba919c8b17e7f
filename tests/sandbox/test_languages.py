"""Every language end to end, from source to per-test results (bubblewrap backend).

A language whose toolchain is missing here must come back ``toolchain_unavailable`` (and the
test then checks exactly that instead of the per-test results)."""

from __future__ import annotations

import pytest

from sdk.sandbox import ExecRequest, ExecStatus, Limits
from sdk.sandbox.languages import reports, toolchain_status
from sdk.tasks.records import Language as L

LIM = Limits(timeout_s=20, compile_timeout_s=60)

CASES = {
    L.JAVASCRIPT: dict(framework="node", target_path="add.js", solution="module.exports = (a, b) => a + b;\n",
                       tests={"add.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\n"
                              "const add = require('./add.js');\ntest('ok', () => assert.equal(add(1, 2), 3));\n"
                              "test('bad', () => assert.equal(add(1, 2), 4));\n"}),
    L.TYPESCRIPT: dict(framework="node", target_path="add.ts", solution="export const add = (a: number, b: number) => a + b;\n",
                       tests={"add.test.ts": "import test from 'node:test';\nimport assert from 'node:assert';\nimport { add } from './add';\n"
                              "test('ok', () => assert.equal(add(1, 2), 3));\ntest('bad', () => assert.equal(add(1, 2), 4));\n"}),
    L.C: dict(framework="tltest", target_path="add.c", solution="int add(int a, int b) { return a + b; }\n",
              tests={"test_add.c": '#include "tl_test.h"\nint add(int, int);\nTL_TEST(ok) { TL_ASSERT(add(1, 2) == 3); }\n'
                     'TL_TEST(bad) { TL_ASSERT(add(1, 2) == 4); }\n'}),
    L.CPP: dict(framework="tltest", target_path="add.cpp", solution="#include <vector>\nint add(int a, int b) { std::vector<int> v{a, b}; return v[0] + v[1]; }\n",
                tests={"test_add.cpp": '#include "tl_test.h"\nint add(int, int);\nTL_TEST(ok) { TL_ASSERT(add(1, 2) == 3); }\n'
                       'TL_TEST(bad) { TL_ASSERT(add(1, 2) == 4); }\n'}),
    L.JAVA: dict(framework="junit", target_path="Add.java", solution="public class Add { public static int add(int a, int b) { return a + b; } }\n",
                 tests={"AddTest.java": "import org.junit.jupiter.api.Test;\nimport static org.junit.jupiter.api.Assertions.*;\n"
                        "public class AddTest {\n  @Test void ok() { assertEquals(3, Add.add(1, 2)); }\n"
                        "  @Test void bad() { assertEquals(4, Add.add(1, 2)); }\n}\n"}),
    L.GO: dict(framework="go", target_path="add.go", solution="package tltask\n\nfunc Add(a, b int) int { return a + b }\n",
               tests={"add_test.go": "package tltask\n\nimport \"testing\"\n\nfunc TestOk(t *testing.T) { if Add(1, 2) != 3 { t.Fatal(\"x\") } }\n"
                      "func TestBad(t *testing.T) { if Add(1, 2) != 4 { t.Fatal(\"wrong\") } }\n"}),
    L.RUST: dict(framework="rust", target_path="lib.rs", solution="pub fn add(a: i32, b: i32) -> i32 { a + b }\n",
                 tests={"tests.rs": "#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test] fn ok() { assert_eq!(add(1, 2), 3); }\n"
                        "    #[test] fn bad() { assert_eq!(add(1, 2), 4); }\n}\n"}),
}


@pytest.fixture(scope="module")
def results(bubblewrap_sandbox):
    langs = list(CASES)
    out = bubblewrap_sandbox.run([ExecRequest(language=lang, limits=LIM, **CASES[lang]) for lang in langs])
    return dict(zip(langs, out))


@pytest.mark.parametrize("lang", list(CASES), ids=[lang.value for lang in CASES])
def test_per_test_results_or_toolchain_unavailable(results, lang):
    res = results[lang]
    if toolchain_status(lang) is not None:
        assert res.status == ExecStatus.TOOLCHAIN_UNAVAILABLE and res.status.is_infrastructure
        return
    assert res.status == ExecStatus.FAILED, res
    by_name = {t.name.rsplit("/", 1)[-1].rsplit("::", 1)[-1].removesuffix("()"): t.outcome for t in res.tests}
    assert {k: by_name.get(k) for k in ("ok", "bad")} in ({"ok": "passed", "bad": "failed"},) or \
        {by_name.get("TestOk"), by_name.get("TestBad")} == {"passed", "failed"}, by_name


def test_compile_error_and_crash_isolated_per_test(bubblewrap_sandbox):
    if toolchain_status(L.C):
        pytest.skip("gcc missing")
    bad, crash = bubblewrap_sandbox.run([
        ExecRequest(language=L.C, framework="tltest", target_path="add.c", solution="int add(int a, int b) { return a + b\n",
                    tests=CASES[L.C]["tests"], limits=LIM),
        ExecRequest(language=L.C, framework="tltest", target_path="add.c", solution="int add(int a, int b) { return a + b; }\n",
                    tests={"t.c": '#include "tl_test.h"\nint add(int, int);\nTL_TEST(crash) { int *p = 0; *p = add(1, 2); }\n'
                           'TL_TEST(fine) { TL_ASSERT(add(2, 2) == 4); }\n'}, limits=LIM)])
    assert bad.status == ExecStatus.COMPILE_ERROR and "expected" in bad.detail
    assert crash.status == ExecStatus.FAILED
    assert {t.name: t.outcome for t in crash.tests} == {"crash": "failed", "fine": "passed"}


def test_missing_toolchain_is_reported_before_running():
    assert toolchain_status(L.GO, search="/nonexistent") is not None
    assert "go" in toolchain_status(L.GO, search="/nonexistent")
    assert toolchain_status(L.PYTHON, search="/nonexistent") is None


def test_report_parsers():
    junit = ('<testsuites><testsuite name="All"><testsuite name="Auth"><testcase name="ok_pw"/>'
             '<testcase name="bad_pw"><failure message="expected 401"/></testcase></testsuite>'
             '<testcase name="top"/><testcase name="err"><error>boom</error></testcase></testsuite></testsuites>')
    assert [(t.name, t.outcome) for t in reports.parse_junit(junit)] == [
        ("All/Auth/ok_pw", "passed"), ("All/Auth/bad_pw", "failed"), ("All/top", "passed"), ("All/err", "error")]
    go = '{"Action":"run","Test":"TestA"}\n{"Action":"output","Test":"TestB","Output":"boom\\n"}\n{"Action":"pass","Test":"TestA"}\n{"Action":"fail","Test":"TestB"}\n'
    assert [(t.name, t.outcome, t.message) for t in reports.parse_go_json(go)] == [("TestA", "passed", ""), ("TestB", "failed", "boom\n")]
    lt = "running 2 tests\ntest a::x ... ok\ntest a::y ... FAILED\ntest z ... ignored\n"
    assert [(t.name, t.outcome) for t in reports.parse_libtest(lt)] == [("a::x", "passed"), ("a::y", "failed"), ("z", "skipped")]
    assert reports.parse_junit("") == () and reports.parse_tltest("garbage") == ()


def test_c_exit_zero_inside_the_code_under_test_is_not_a_pass():
    """A C solution that calls exit(0) before a test's assertion fails that test ('exited_early')."""
    from sdk.config import SandboxConfig
    from sdk.sandbox import make_sandbox

    if toolchain_status(L.C):
        pytest.skip(toolchain_status(L.C))
    box = make_sandbox(SandboxConfig(cache=False))
    try:
        [res] = box.run([ExecRequest(language=L.C, framework="tltest", target_path="add.c", limits=LIM,
                                     solution="#include <stdlib.h>\nint add(int a, int b) { exit(0); return a + b; }\n",
                                     tests=CASES[L.C]["tests"])])
    finally:
        box.close()
    assert res.passed == 0 and res.status == ExecStatus.FAILED
