"""Go and Java tests stay off the disk while the program under test runs (issue 14, round 6).

Go: the test binary is built with ``go test -c``, the sources are deleted, and a decoy under each
test's name reports an open (flag ``reads_tests``). Java: the tests' class files reach ``TlJUnit``
on its key pipe and are defined from memory, beside the task's classes in one loader, so
package-private access between a test and the solution still works."""

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
