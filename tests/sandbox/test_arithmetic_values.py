"""A module's numbers-like class runs its operators in the test process (issue 13, isodate 0.7.2).

isodate's ``Duration`` (a plain class with ``__eq__``, ``__add__``, ``__radd__``...) lives in the
module of the tasks ``fquotmod`` and ``max_days_in_month``; ``date + Duration`` met a handle and was
refused (a handle's operator would see the expected value). Such a class is now a kept value class
of :mod:`tl_pristine`: built from the task's file in the harness, so its operators are the task's,
calling the solution's functions, and no change the solution makes to the class at run time
reaches them.
"""

from __future__ import annotations

from sdk.sandbox import ExecRequest, ExecStatus
from tests.sandbox.conftest import FAST

MOD = '''from datetime import date


def wrap(month):
    return month % 12


class Dur:
    def __init__(self, months=0):
        self.months = months

    def __eq__(self, other):
        return isinstance(other, Dur) and self.months == other.months

    def __hash__(self):
        return hash(self.months)

    def __add__(self, other):
        if isinstance(other, date):
            total = other.month - 1 + self.months
            return other.replace(year=other.year + total // 12, month=wrap(total) + 1)
        return NotImplemented

    __radd__ = __add__
'''
TESTS = '''from datetime import date

from pkg import Dur


def test_date_plus_duration():
    assert date(2000, 11, 1) + Dur(3) == date(2001, 2, 1)
    assert Dur(2) + date(2000, 1, 1) == date(2000, 3, 1)


def test_values():
    assert Dur(3) == Dur(3) and Dur(3) != Dur(4) and isinstance(Dur(1), Dur)
'''
RIGHT = "def wrap(month):\n    return month % 12\n"
WRONG = "def wrap(month):\n    return 0\n"
PATCHER = ("def wrap(month):\n    Dur.__radd__ = Dur.__add__ = lambda self, other: date(2001, 2, 1)\n"
           "    return 0\n")


def _req(solution: str) -> ExecRequest:
    return ExecRequest(solution=solution, entry_point="wrap", tests={"tests/test_dur.py": TESTS},
                       files={"pkg/__init__.py": MOD}, target_path="pkg/__init__.py", limits=FAST)


def _failed(res) -> list[str]:
    return [t.name.rsplit("::", 1)[1] for t in res.tests if t.outcome != "passed"]


def test_operators_of_the_tasks_class_call_the_solution(sandbox):
    right = sandbox.run_one(_req(RIGHT))
    assert right.status == ExecStatus.OK, (right.detail, [(t.name, t.message[-600:]) for t in right.tests])
    assert _failed(sandbox.run_one(_req(WRONG))) == ["test_date_plus_duration"]


def test_the_solution_cannot_change_the_operators(process_sandbox):
    assert _failed(process_sandbox.run_one(_req(PATCHER))) == ["test_date_plus_duration"]
