"""Task records, task sets, splitting and validation."""

from sdk.tasks.records import (AnswerVerifier, Language, Message, Quarantined, ReferenceOnly, Source, Split,
                               Task, UnitTestVerifier, Verifier)
from sdk.tasks.taskset import TaskSet

__all__ = ["AnswerVerifier", "Language", "Message", "Quarantined", "ReferenceOnly", "Source", "Split", "Task",
           "TaskSet", "UnitTestVerifier", "Verifier"]
