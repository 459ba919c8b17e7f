"""JUnit field cases J8–J11 (shared/cases/CASES.md, second round), as named tests."""

from __future__ import annotations

import subprocess
import sys

from connectors.suites.junit import combine_reports, load_junit, stable_tests
from connectors.suites.junit_repair import repair_tasks
from connectors.suites.junit_source import JUnitSource


def test_j8_skipped_with_a_reason_and_skipped_plus_failure(tmp_path):
    report = load_junit("""<testsuite name="s" tests="2" skipped="2">
      <testcase classname="c" name="needs_net"><skipped><![CDATA[pending: needs network]]></skipped></testcase>
      <testcase classname="c" name="assumed"><skipped/><failure message="assumption not met"/></testcase>
    </testsuite>""")
    cases = {c.name: c for c in report.cases}
    assert cases["needs_net"].status == "skipped" and cases["needs_net"].message == "pending: needs network"
    assert cases["assumed"].status == "skipped" and "assumption not met" in cases["assumed"].message
    assert any("c::assumed is skipped but also carries failure" in w for w in report.warnings)
    # a skipped case is never a verifier, nor a repair task
    assert stable_tests([report] * 3) == set()
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_c.py").write_text("def test_x():\n    pass\n")
    (tmp_path / "c.py").write_text("")
    files = report.model_copy(update={"cases": tuple(c.model_copy(update={"file": "tests/test_c.py"})
                                                      for c in report.cases)})
    assert repair_tasks(files, tmp_path, "repair/c") == ([], [])


def test_j9_names_from_anywhere():
    data = ('<testsuites><testsuite name="Проверка">'
            '<testcase classname="Проверка.Класс" name="testTwö"><system-out>输出 ✓ テスト</system-out></testcase>'
            '<testcase name="test_ok"/></testsuite>'
            '<testsuite name="other"><testcase name="test_ok"><failure message="bad \x80 byte"/></testcase>'
            '</testsuite></testsuites>').encode("utf-8").replace(b"\xc2\x80", b"\x80")
    report = load_junit(data)
    assert [(c.classname, c.name, c.status) for c in report.cases] == [
        ("Проверка.Класс", "testTwö", "passed"), ("Проверка", "test_ok", "passed"), ("other", "test_ok", "failure")]
    assert report.cases[0].output == "输出 ✓ テスト"
    assert report.cases[2].message == "bad \ufffd byte"
    assert any("not UTF-8" in w for w in report.warnings)


def test_j10_subtests_take_their_status_from_the_elements_and_know_their_parent():
    report = load_junit("""<testsuite name="upload" tests="3" failures="0">
      <testcase classname="pkg/upload" name="TestUpload"><failure message="subtest failed"/></testcase>
      <testcase classname="pkg/upload" name="TestUpload/empty_body_returns_400"><failure message="got 200"/></testcase>
      <testcase classname="pkg/upload" name="TestUpload/ok"/>
    </testsuite>""")
    got = {c.name: (c.status, c.parent) for c in report.cases}
    assert got == {"TestUpload": ("failure", ""), "TestUpload/empty_body_returns_400": ("failure", "TestUpload"),
                   "TestUpload/ok": ("passed", "TestUpload")}
    assert any("declares failures=0 but holds 2" in w for w in report.warnings)


STRUTILS_BUGGY = "def shout(s):\n    return s.lower()\n"
STRUTILS_TESTS = "from pkg.strutils import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A'\n"


def test_j11_pytest_default_report_has_no_file_and_still_gives_a_repair_task(tmp_path):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pkg/__init__.py").write_text("")
    (repo / "tests/__init__.py").write_text("")
    (repo / "pkg/strutils.py").write_text(STRUTILS_BUGGY)
    (repo / "tests/test_strutils.py").write_text(STRUTILS_TESTS)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml",
                    str(tmp_path / "report.xml"), "tests"], cwd=repo, capture_output=True, timeout=120)
    report = load_junit(tmp_path / "report.xml")
    (case,) = report.cases
    assert case.classname == "tests.test_strutils" and case.file == ""  # xunit2: no file attribute
    result = JUnitSource({"path": "repo", "reports": ["report.xml"]}, tmp_path, "repair/strutils").read()
    (task,) = result.tasks
    assert task.verifier.target_path == "pkg/strutils.py" and "tests/test_strutils.py" in task.verifier.tests
    assert result.counts["files_from_layout"] == 1 and not result.quarantined


CALC_TEST = "import org.junit.jupiter.api.Test;\nclass CalcTest {\n  @Test void adds() {}\n}\n"
JUPITER = """<testsuite name="JUnit Jupiter" tests="2" failures="1">
  <testcase name="adds()" classname="CalcTest"><failure message="expected: &lt;5&gt; but was: &lt;-1&gt;"/></testcase>
  <testcase name="subtracts()" classname="CalcTest"/>
</testsuite>"""
VINTAGE = '<testsuite name="JUnit Vintage" tests="0" failures="0" errors="0" skipped="0"></testsuite>'


def test_j11_junit5_class_name_and_an_empty_engine_report(tmp_path):
    repo = tmp_path / "repo"
    (repo / "src/test/java").mkdir(parents=True)
    (repo / "src/main/java").mkdir(parents=True)
    (repo / "src/test/java/CalcTest.java").write_text(CALC_TEST)
    (repo / "src/main/java/Calc.java").write_text("class Calc { static int add(int a, int b) { return a - b; } }\n")
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports/TEST-junit-jupiter.xml").write_text(JUPITER)
    (tmp_path / "reports/TEST-junit-vintage.xml").write_text(VINTAGE)
    combined = combine_reports([load_junit(tmp_path / "reports/TEST-junit-jupiter.xml"),
                                load_junit(tmp_path / "reports/TEST-junit-vintage.xml")])
    assert not combined.broken_suites and any("engine that found no tests" in w for w in combined.warnings)
    assert load_junit(VINTAGE).broken_suites  # alone, an empty report is still a broken suite (J7)
    result = JUnitSource({"path": "repo", "reports": ["reports/*.xml"], "language": "java"}, tmp_path, "repair/calc").read()
    (task,) = result.tasks
    assert task.verifier.target_path == "src/main/java/Calc.java" and task.verifier.framework == "junit"
    assert list(task.verifier.tests) == ["src/test/java/CalcTest.java"] and "expected: <5>" in task.prompt[0].content
    assert result.counts["broken_suites"] == 0 and result.counts["reports"] == 2
