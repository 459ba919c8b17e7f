"""Core task records: the contract between connectors, the sandbox, training and evaluation.

A :class:`Task` is one verifiable unit of work: chat ``prompt`` in, a completion out, judged by
its ``verifier``. Records are frozen pydantic models; they cross stage boundaries and carry no
behaviour beyond hashing and (de)serialisation. Shape follows verifiers' ``Task`` and
torchtune's ``_types`` (see shared/STYLE.md).
"""

from __future__ import annotations

import hashlib
from enum import Enum
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, model_validator

from sdk.tasks.change import ChangeVerifier
from sdk.types import Framework, Frozen, Language, canonical_json  # noqa: F401 - re-exported


class Split(str, Enum):
    """Where a task is used: trained on, held out (same domains), or out-of-distribution."""

    TRAIN = "train"
    HELDOUT = "heldout"
    OOD = "ood"


class Message(Frozen):
    """One chat message. ``role`` is system, user, assistant or tool."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str


class UnitTestVerifier(Frozen):
    """Judge a completion by running unit tests against it in the sandbox.

    Attributes:
        language: language of the solution and tests.
        framework: test runner (:class:`~sdk.types.Framework`): ``pytest`` (per-test results),
            ``script`` (HumanEval-style: the test file defines ``check(candidate)``; one result),
            or a language runner.
        tests: visible test files, ``relative path -> source``; pristine and read-only at run time.
        hidden_tests: tests the prompt never shows, same shape; used against over-fitting.
        files: support files the solution needs (the rest of the package), ``path -> source``.
        target_path: where the solution goes. If ``target_path`` is in ``files``, the
            completion's definition of ``entry_point`` replaces the one in that file
            (the rest of the module stays); otherwise the completion is the whole file.
        entry_point: name of the function or class the completion must define.
        prelude: code prepended to the completion when it is written (e.g. HumanEval's prompt
            imports), never shown as model output.
        timeout_s: wall-clock limit for one run of the tests, seconds.
        requirements: pip requirement strings the tests import (``freezegun``), installed once
            into a cached read-only environment in the sandbox (:mod:`sdk.sandbox.deps`; for
            JavaScript/TypeScript npm ``name@spec`` strings, :mod:`sdk.sandbox.npmdeps`);
            hashed into the task id only when non-empty, so older ids stay stable.
    """

    kind: Literal["unit_tests"] = "unit_tests"
    language: Language = Language.PYTHON
    framework: Framework = Framework.PYTEST
    tests: dict[str, str]
    hidden_tests: dict[str, str] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict)
    target_path: str = "solution.py"
    entry_point: str | None = None
    prelude: str = ""
    timeout_s: float = 10.0
    requirements: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> "UnitTestVerifier":
        if not self.tests:
            raise ValueError("a unit_tests verifier needs at least one test file in `tests`")
        for path in [*self.tests, *self.hidden_tests, *self.files, self.target_path]:
            if path.startswith("/") or ".." in path.split("/"):
                raise ValueError(f"file path {path!r} must be relative and stay inside the task folder")
        return self

    def __hash__(self) -> int:  # dict fields are not hashable by default
        return hash(canonical_json(self.model_dump(mode="json")))


class AnswerVerifier(Frozen):
    """Judge the final answer in the completion against ``expected``.

    ``mode``: ``exact`` (after stripping), ``normalized`` (case, whitespace, punctuation),
    ``regex`` (``expected`` is a pattern, full match), ``numeric`` (within ``tolerance``,
    absolute), ``json`` (equal JSON values, or valid against ``expected`` as a JSON schema
    when ``json_schema`` is true).
    """

    kind: Literal["answer"] = "answer"
    mode: Literal["exact", "normalized", "regex", "numeric", "json"] = "exact"
    expected: str
    tolerance: float = 1e-6
    json_schema: bool = False


class ReferenceOnly(Frozen):
    """No automatic verdict: the task only carries a reference for SFT (e.g. a correction)."""

    kind: Literal["reference"] = "reference"


Verifier = Annotated[Union[UnitTestVerifier, AnswerVerifier, ReferenceOnly, ChangeVerifier], Field(discriminator="kind")]


class Source(Frozen):
    """Where a task came from: connector name, URI, row or test id, commit."""

    connector: str
    uri: str = ""
    locator: str = ""
    commit: str = ""


ID_FIELDS = frozenset({"domain", "prompt", "verifier", "reference"})  # what Task.content_hash covers


class Task(Frozen):
    """One verifiable task.

    Attributes:
        id: content hash (16 hex chars) of domain, prompt, verifier and reference; computed
            when omitted, checked when given.
        domain: slash-separated area, e.g. ``python/billing`` or ``feedback/support-bot``.
        prompt: chat messages given to the model (the completion is the next assistant turn).
        verifier: how a completion is judged.
        reference: a known-good completion (the solution), when one exists.
        source: provenance.
        split: train, heldout or ood; assigned by :mod:`sdk.tasks.split`.
        difficulty: the base model's measured pass rate in [0, 1], once measured.
        mutation_score: share of the reference's mutants its tests kill, in [0, 1], once
            measured (:mod:`sdk.tasks.strength`); None: not measured or not mutable.
        metadata: free-form, JSON-serialisable provenance details (never read by the core).
    """

    id: str = ""
    domain: str
    prompt: tuple[Message, ...]
    verifier: Verifier
    reference: str | None = None
    source: Source
    split: Split = Split.TRAIN
    difficulty: float | None = None
    mutation_score: float | None = Field(None, ge=0.0, le=1.0)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _fill_id(self) -> "Task":
        if not self.prompt:
            raise ValueError("a task needs at least one prompt message")
        if not self.domain.strip():
            raise ValueError("a task needs a non-empty domain, e.g. 'python/billing'")
        want = self.content_hash()
        if not self.id:
            object.__setattr__(self, "id", want)
        elif self.id != want:
            raise ValueError(f"task id {self.id!r} does not match its content hash {want!r}")
        return self

    def content_hash(self) -> str:
        """Stable 16-hex-char id over domain, prompt, verifier and reference."""
        body = {
            "domain": self.domain,
            "prompt": [m.model_dump(mode="json") for m in self.prompt],
            "verifier": _hashed(self.verifier),
            "reference": self.reference,
        }
        return hashlib.sha256(canonical_json(body).encode()).hexdigest()[:16]

    def with_(self, **changes: Any) -> "Task":
        """A copy with ``changes`` applied.

        Changing a field the id is hashed over (:data:`ID_FIELDS`: domain, prompt, verifier,
        reference) validates the copy anew and gives it its new content-hash id (unless ``id``
        is among the changes, which is then checked); split, difficulty, mutation_score, metadata and
        source keep the id.

        Raises:
            pydantic.ValidationError: a changed id field is invalid, or a given ``id`` does not
                match the new content.
        """
        if not ID_FIELDS & changes.keys():
            return self.model_copy(update=changes)
        data = {name: getattr(self, name) for name in type(self).model_fields}
        return type(self).model_validate({**data, "id": "", **changes})

    def __hash__(self) -> int:
        return hash(self.id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Task) and self.model_dump() == other.model_dump()


def _hashed(verifier: BaseModel) -> dict[str, Any]:
    """The verifier as hashed into :meth:`Task.content_hash`: fields added after ids were first
    published (:data:`_LATE_FIELDS`) count only when set, so existing task ids do not change."""
    dump = verifier.model_dump(mode="json")
    for name in _LATE_FIELDS:
        if not dump.get(name):
            dump.pop(name, None)
    return dump


_LATE_FIELDS = ("requirements",)


class Quarantined(Frozen):
    """A task (or raw row) held back, with the reason. Nothing is dropped silently."""

    reason: str
    task: Task | None = None
    raw: dict[str, Any] | None = None
    source: Source | None = None
