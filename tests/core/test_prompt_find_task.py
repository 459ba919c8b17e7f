"""`tuneloop tasks prompt CONFIG KEY`: in a src/ layout (isodate 0.7.2) the locator is
``src/isodate/isodates.py::parse_date``, and the import path a user types (``isodate/isodates.py::parse_date``,
the README's ``pkg/mod.py::func``) or the bare function name matched nothing."""

import pytest

from sdk.errors import SourceError
from sdk.run.prompt_view import find_task
from sdk.tasks.records import AnswerVerifier, Message, Source, Task
from sdk.tasks.taskset import TaskSet


def _task(locator: str) -> Task:
    return Task(domain="d", prompt=(Message(role="user", content=locator),), reference="x",
                verifier=AnswerVerifier(expected="1"), source=Source(connector="pytest", locator=locator))


TASKS = TaskSet([_task("src/isodate/isodates.py::parse_date"), _task("src/isodate/isotime.py::parse_time"),
                 _task("src/isodate/isodates.py::date_isoformat"), _task("src/isodate/isotime.py::date_isoformat")])


@pytest.mark.parametrize("key", ["isodate/isodates.py::parse_date", "isodates.py::parse_date", "parse_date",
                                 "src/isodate/isodates.py::parse_date"])
def test_locator_tail_or_bare_name_finds_the_task(key):
    task, where = find_task(TASKS, key)
    assert task.source.locator == "src/isodate/isodates.py::parse_date" and where == "tasks"


def test_an_ambiguous_name_lists_the_candidates_and_a_partial_name_matches_nothing():
    with pytest.raises(SourceError, match="2 tasks match 'date_isoformat'"):
        find_task(TASKS, "date_isoformat")
    with pytest.raises(SourceError, match="no task matches 'isoformat'"):
        find_task(TASKS, "isoformat")
    with pytest.raises(SourceError, match="no task matches"):
        find_task(TASKS, "odates.py::parse_date")  # a tail only at a path boundary


def test_a_quarantined_function_without_a_task_says_why_instead_of_no_match():
    """A function no test covers has no task (so no prompt): the refusal names its quarantine reason and
    the reason's own fix line, not 'no task matches' (found by a new user on `untested_helper`)."""
    from sdk.tasks.records import Quarantined

    reason = "no covering tests: no test of the suite calls it\nfix: add a test that calls it"
    q = Quarantined(reason=reason, source=Source(connector="pytest", locator="mylib/stock.py::untested_helper"))
    tasks = TaskSet([_task("mylib/stock.py::parse_sku")], quarantined=[q])
    for key in ("mylib/stock.py::untested_helper", "untested_helper"):
        with pytest.raises(SourceError, match="quarantined before a prompt was built: no covering tests") as err:
            find_task(tasks, key)
        assert err.value.fix == "add a test that calls it"
    with pytest.raises(SourceError, match="no task matches 'nothing_here'"):
        find_task(tasks, "nothing_here")
