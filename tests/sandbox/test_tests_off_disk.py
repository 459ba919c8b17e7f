"""Go, Java and JavaScript tests stay off the disk while the program under test runs (issue 14, round 6).

Go: the test binary is built with ``go test -c``, the sources are deleted, and a decoy under each
test's name reports an open (flag ``reads_tests``). Java: the tests' class files reach ``TlJUnit``
on its key pipe and are defined from memory, beside the task's classes in one loader, so
package-private access between a test and the solution still works. JavaScript (CommonJS tests):
one node run per test file, its source on a pipe to the guard, a decoy on disk; the reports merged."""

from __future__ import annotations

import pytest

from sdk.sandbox import ExecRequest, ExecStatus, Limits
from sdk.sandbox.languages import toolchain_status
from sdk.tasks.records import Language as L

LIM = Limits(timeout_s=20, compile_timeout_s=60)
GO_T = "package tltask\n\nimport \"testing\"\n\n"
# what the program sees of its tests while it runs: printed into the test's failure message
GO_PEEK = ('package tltask\n\nimport (\n  "os"\n  "strings"\n)\n\nfunc Add(a, b int) int {\n'
           '  s, _ := os.ReadFile("add" + "_te" + "st.go")\n  if strings.Contains(string(s), "3345") {\n    return -1\n  }\n'
           '  return a + b\n}\n')
JAVA_TEST = ("import org.junit.jupiter.api.Nested;\nimport org.junit.jupiter.api.Test;\n"
             "import static org.junit.jupiter.api.Assertions.*;\n"
             "class Base { int twice(int x) { return Add.add(x, x); } }\n"
             "class AddTest extends Base {\n  @Test void ok() { assertEquals(3, Add.add(1, 2)); }\n"
             "  @Test void inherited() { assertEquals(8, twice(4)); }\n"
             "  @Test void hidden() { assertFalse(Add.sawTests(), \"the test class was on disk\"); }\n"
             "  @Nested class Inner { @Test void nested() { assertEquals(Add.SECRET, Add.add(20, 22)); } }\n}\n")
JAVA_SOLUTION = ("import java.nio.file.*;\nclass Add {\n  static final int SECRET = 42;\n"   # package-private throughout
                 "  static int add(int a, int b) { return a + b; }\n"
                 "  static boolean sawTests() {\n    return Files.exists(Paths.get(\"classes\", \"AddTest.class\"))"
                 " || Files.exists(Paths.get(\"classes\", \"Base.class\"));\n  }\n}\n")


JS_T = "const test = require('node:test');\nconst assert = require('node:assert');\nconst add = require('./add.js');\n"
JS_PEEK = ("const fs = require('f' + 's');\nmodule.exports = (a, b) => {\n  let s = '';\n"
           "  try { s = fs.readFileSync(__dirname + '/b.test.js', 'utf8'); } catch (e) { }\n"
           "  return s.includes('3345') ? -1 : a + b;\n};\n")


def _skip_without(lang):
    if toolchain_status(lang):
        pytest.skip(toolchain_status(lang))


def test_go_tests_are_gone_and_opening_one_is_reported(bubblewrap_sandbox):
    _skip_without(L.GO)
    tests = {"add_test.go": GO_T + "func TestBig(t *testing.T) { if Add(1000, 2345) != 3345 { t.Fatal(\"big\") } }\n"}
    honest, peek = bubblewrap_sandbox.run([
        ExecRequest(language=L.GO, framework="go", target_path="add.go", limits=LIM, tests=tests,
                    solution="package tltask\n\nfunc Add(a, b int) int { return a + b }\n"),
        ExecRequest(language=L.GO, framework="go", target_path="add.go", limits=LIM, tests=tests, solution=GO_PEEK)])
    assert honest.status == ExecStatus.OK and not honest.flags, honest
    assert [(t.name, t.outcome) for t in honest.tests] == [("TestBig", "passed")]
    # the source it opened held nothing (its test passes), and the open is reported
    assert peek.status == ExecStatus.OK and peek.flags == ("reads_tests",), peek


def test_java_tests_run_from_memory_with_package_private_access(bubblewrap_sandbox):
    _skip_without(L.JAVA)
    [res] = bubblewrap_sandbox.run([ExecRequest(language=L.JAVA, framework="junit", target_path="Add.java", limits=LIM,
                                                solution=JAVA_SOLUTION, tests={"AddTest.java": JAVA_TEST})])
    got = {t.name.rsplit("/", 1)[-1].removesuffix("()"): t.outcome for t in res.tests}
    assert res.status == ExecStatus.OK and got == dict.fromkeys(["ok", "inherited", "hidden", "nested"], "passed"), res
    assert not res.flags


def test_js_tests_run_from_a_pipe_one_file_at_a_time(bubblewrap_sandbox):
    _skip_without(L.JAVASCRIPT)
    tests = {"a.test.js": JS_T + "test('small', () => assert.equal(add(2, 3), 5));\n",
             "b.test.js": JS_T + "test('big', () => assert.equal(add(1000, 2345), 3345));\n"
                                 "test('wrong', () => assert.equal(add(1, 1), 3));\n"}
    honest, peek = bubblewrap_sandbox.run([
        ExecRequest(language=L.JAVASCRIPT, framework="node", target_path="add.js", limits=LIM, tests=tests,
                    solution="module.exports = (a, b) => a + b;\n"),
        ExecRequest(language=L.JAVASCRIPT, framework="node", target_path="add.js", limits=LIM, tests=tests, solution=JS_PEEK)])
    assert {t.name: t.outcome for t in honest.tests} == {"small": "passed", "big": "passed", "wrong": "failed"}, honest
    assert honest.status == ExecStatus.FAILED and not honest.flags, honest
    # the file it opened was a decoy (its tests pass as the honest ones do), and the open is reported
    assert {t.name: t.outcome for t in peek.tests} == {t.name: t.outcome for t in honest.tests}, peek
    assert peek.flags == ("reads_tests",), peek
