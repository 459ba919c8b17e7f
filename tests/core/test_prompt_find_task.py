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
