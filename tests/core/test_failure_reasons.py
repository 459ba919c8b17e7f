"""A ``reference_fails`` reason names the failing test's cause (issue 13 new-user check): briefly on
its first line (what ``tasks build`` prints), in full in ``tasks.quarantine.jsonl``."""
import json

import pytest

from sdk.config import SandboxConfig
from sdk.run.health import quarantine_summary
from sdk.run.stage_tasks import brief_reason
from sdk.sandbox import make_sandbox
from sdk.sandbox.contract import ExecResult, ExecStatus, Sandbox, TestOutcome
from sdk.tasks import Message, Source, Task, UnitTestVerifier
from sdk.tasks.failures import failing_tests_reason, failure_cause
from sdk.tasks.taskset import TaskSet
from sdk.tasks.validate import validate_tasks

DIFF_REPORT = """\
expected = 'name|score', result = 'name  score'

    def assert_equal(expected, result):
>       assert expected == result
E       AssertionError: assert 'name|score' == 'name  score'
E         
E         - name  score
E         + name|score

/tmp/.tl-tests-l2cdz_qq/test/common.py:9: AssertionError"""

BARE_ASSERT = """\
        result = tabulate(table, tablefmt="html")
>       assert hasattr(result, "_repr_html_")
E       assert False
E        +  where False = hasattr('<table>', '_repr_html_')

/tmp/.tl-tests-xx/test/test_output.py:112: AssertionError"""

TRACEBACK = """Traceback (most recent call last):
  File "t.py", line 3, in <module>
    f()
ValueError: bad width: -1"""


@pytest.mark.parametrize("report, cause", [
    (DIFF_REPORT, "AssertionError: assert 'name|score' == 'name  score'"),
    (BARE_ASSERT, "AssertionError: assert False"),
    (TRACEBACK, "ValueError: bad width: -1"),
    ("E   TypeError: object of type 'Person' has no len()\n\nrt/tl_remote.py:212: TypeError",
     "TypeError: object of type 'Person' has no len()"),
    ("", ""),
])
def test_failure_cause_is_the_exception_type_and_its_message_line(report, cause):
    assert failure_cause(report) == cause


def task(reference="def add(a, b):\n    return a * b\n"):
    tests = {"test_add.py": "from solution import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"}
    return Task(domain="t", prompt=(Message(role="user", content="write add"),),
                verifier=UnitTestVerifier(tests=tests, entry_point="add"), reference=reference,
                source=Source(connector="test", locator="pkg/m.py::add"))


class Canned(Sandbox):
    """A sandbox that answers every request with one failing test among twelve."""

    def run_one(self, request):
        tests = [TestOutcome(name=f"test/t.py::test_{i}", outcome="passed") for i in range(11)]
        tests.append(TestOutcome(name="test/test_output.py::test_html", outcome="failed", message=BARE_ASSERT))
        return ExecResult(status=ExecStatus.FAILED, tests=tuple(tests), detail="1 of 12 tests did not pass: ...")


def test_reason_names_the_cause_briefly_and_the_quarantine_file_keeps_the_report(tmp_path):
    valid, bad = validate_tasks([task()], Canned(), check_stub=False)
    assert not valid
    first = bad[0].reason.splitlines()[0]
    assert first == ("reference_fails: visible and hidden tests gave failed: 1 of 12 tests did not pass; first: "
                     "test/test_output.py::test_html: AssertionError: assert False")
    (group,) = quarantine_summary(bad)
    shown = brief_reason(group["examples"][0]["reason"])
    assert "\n" not in shown and len(shown) <= 170 and shown.endswith("AssertionError: assert False")
    TaskSet([], bad).save(tmp_path / "tasks.jsonl")
    (row,) = [json.loads(ln) for ln in (tmp_path / "tasks.quarantine.jsonl").read_text().splitlines()]
    assert "hasattr('<table>', '_repr_html_')" in row["reason"]     # the fuller detail, for the user to read
    assert "test/test_output.py:112: AssertionError" in row["reason"]


def test_one_line_reason_without_an_error_name_is_cut_once_not_repeated():
    reason = "reference_fails: visible and hidden tests gave failed (2 of 12 tests did not pass: " + "t::x, " * 30
    shown = brief_reason(reason)
    assert shown.count("reference_fails") == 1 and len(shown) <= 160


def test_real_sandbox_reason_carries_the_assertion(tmp_path):
    box = make_sandbox(SandboxConfig())
    try:
        _, bad = validate_tasks([task()], box, check_stub=False)
    finally:
        box.close()
    first = bad[0].reason.splitlines()[0]
    assert first.startswith("reference_fails: visible and hidden tests gave failed: 1 of 1 tests did not pass; first: ")
    assert "test_add" in first and "assert 6 == 5" in first


def test_a_missing_module_in_the_sandbox_gets_the_requirements_fix():
    class NoHelper(Sandbox):
        def run_one(self, request):
            msg = "test/t.py:1: in <module>\n    import freezegun\nE   ModuleNotFoundError: No module named 'freezegun'"
            return ExecResult(status=ExecStatus.FAILED, tests=(TestOutcome(name="test/t.py::test_a", outcome="error",
                                                                           message=msg),))

    _, bad = validate_tasks([task()], NoHelper(), check_stub=False)
    assert bad[0].reason.splitlines()[0].endswith("ModuleNotFoundError: No module named 'freezegun'")
    (group,) = quarantine_summary(bad)
    assert "`test_requirements:`" in group["fix"] and "freezegun" in group["fix"]


def test_many_failing_tests_are_named_up_to_a_limit():
    failed = [TestOutcome(name=f"t.py::test_{i}", outcome="failed", message="E   assert 0\n\nt.py:1: AssertionError")
              for i in range(80)]
    reason = failing_tests_reason("reference_fails: x gave failed", failed, 80)
    names = reason.splitlines()[1]
    assert names.count("t.py::test_") == 50 and names.endswith(" …")
    assert reason.count("\n--- ") == 3   # the report tails of the first three only
