"""JUnit XML field cases J1–J7 (shared/cases/CASES.md) and the stable-test history."""

from __future__ import annotations

import pytest

from connectors.suites.junit import load_junit, stable_tests
from sdk.errors import SourceError


def _by_name(report):
    return {c.name: c for c in report.cases}


def test_j1_nested_suites_keep_their_path():
    report = load_junit("""<testsuites><testsuite name="All">
      <testsuite name="Auth.Login">
        <testcase classname="auth" name="ok_pw" time="0.1"/>
        <testcase classname="auth" name="bad_pw"><failure message="expected 401"/></testcase>
      </testsuite>
      <testcase classname="all" name="top_level"/>
    </testsuite></testsuites>""")
    cases = _by_name(report)
    assert len(report.cases) == 3
    assert [c.status for c in report.cases].count("passed") == 2
    assert cases["bad_pw"].status == "failure" and cases["bad_pw"].message == "expected 401"
    assert cases["ok_pw"].suite == "All/Auth.Login" and cases["top_level"].suite == "All"
    assert not report.broken_suites


def test_j2_bare_root_matches_wrapped_form():
    body = """<testsuite name="S" tests="2" failures="1">
      <properties><property name="java.version" value="21"/></properties>
      <testcase classname="c" name="good"/>
      <testcase classname="c" name="bad"><failure message="no"/></testcase>
    </testsuite>"""
    bare, wrapped = load_junit(body), load_junit(f"<testsuites>{body}</testsuites>")
    assert bare.cases == wrapped.cases
    assert [(c.name, c.status) for c in bare.cases] == [("good", "passed"), ("bad", "failure")]
    assert not bare.warnings


def test_j3_error_and_failure_without_attributes():
    report = load_junit("""<testsuite name="s">
      <testcase classname="c" name="e"><error type="KeyError"><![CDATA[missing key]]></error></testcase>
      <testcase classname="c" name="f"><failure>only text</failure></testcase>
    </testsuite>""")
    cases = _by_name(report)
    assert cases["e"].status == "error" and "missing key" in cases["e"].message and "KeyError" in cases["e"].message
    assert cases["f"].status == "failure" and cases["f"].message == "only text"
    assert not any(c.status == "passed" for c in report.cases)


def test_j4_odd_durations():
    report = load_junit("""<testsuite name="s">
      <testcase classname="c" name="empty" time=""/><testcase classname="c" name="none"/>
      <testcase classname="c" name="comma" time="1,5"/><testcase classname="c" name="junk" time="abc"/>
    </testsuite>""")
    cases = _by_name(report)
    assert cases["empty"].duration is None and cases["none"].duration is None
    assert cases["comma"].duration == 1.5 and cases["junk"].duration is None
    assert any("unreadable time" in w for w in report.warnings)


def test_j5_forbidden_bytes_still_load():
    data = (b'<testsuite name="s"><testcase classname="c" name="t">'
            b'<failure>colour \x1b[31mred\x1b[0m and \x00 nul &#27;</failure></testcase>'
            b'<testcase classname="c" name="ok"/></testsuite>')
    report = load_junit(data)
    cases = _by_name(report)
    assert cases["t"].status == "failure" and "\\x1b[31mred" in cases["t"].message and "\\x00" in cases["t"].message
    assert cases["ok"].status == "passed"
    assert any("control characters" in w for w in report.warnings)


def test_j6_one_test_two_results():
    report = load_junit("""<testsuite name="s" tests="2" failures="1" errors="0">
      <testcase classname="c" name="t"><failure message="f1"/><error message="e1"/></testcase>
      <testcase classname="c" name="t"/>
    </testsuite>""")
    assert len(report.cases) == 1
    case = report.cases[0]
    assert case.status == "error" and "f1" in case.message and "e1" in case.message
    assert any("declares errors=0" in w for w in report.warnings)
    assert any("more than once" in w for w in report.warnings)


def test_j7_broken_suites_are_flagged_and_unusable():
    report = load_junit("""<testsuites>
      <testsuite name="example.com/pkg/billing" tests="0" failures="0"></testsuite>
      <testsuite name="src/cart.test.js" tests="1" errors="1">
        <testcase classname="src/cart.test.js" name="Test suite failed to run">
          <error message="Cannot find module './cart'"/></testcase>
      </testsuite>
      <testsuite name="ok"><testcase classname="k" name="fine"/></testsuite>
    </testsuites>""")
    broken = {s.path: s.reason for s in report.broken_suites}
    assert set(broken) == {"example.com/pkg/billing", "src/cart.test.js"}
    assert "no test case" in broken["example.com/pkg/billing"] and "Cannot find module" in broken["src/cart.test.js"]
    assert [c.name for c in report.usable()] == ["fine"]


def test_not_junit_is_a_source_error(tmp_path):
    with pytest.raises(SourceError, match="root element"):
        load_junit("<html><body/></html>")
    with pytest.raises(SourceError, match="does not exist"):
        load_junit(tmp_path / "missing.xml")


def test_stable_tests_need_every_run_to_pass():
    def run(flaky_status):
        return load_junit(f"""<testsuite name="s"><testcase classname="c" name="steady"/>
          <testcase classname="c" name="flaky">{flaky_status}</testcase></testsuite>""")
    history = [run(""), run("<failure/>"), run("")]
    assert stable_tests(history) == {("c", "steady")}
    assert stable_tests(history[:2], min_runs=3) == set()
