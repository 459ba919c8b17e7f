"""Shared leaf types: what every layer may import, importing nothing of ``sdk`` but :mod:`sdk.errors`.

- :class:`Frozen`: the immutable pydantic base of every record that crosses a stage boundary.
- :class:`ConfigModel`: the base of every config section (unknown keys are errors, defaults validated).
- :class:`Language`: the languages a verifier and the sandbox know.
- :class:`Framework`: the test runners (``UnitTestVerifier.framework``, ``ExecRequest.framework``).
- :func:`canonical_json`: the input of every content hash (task ids, sandbox cache keys).

They live here, below both :mod:`sdk.tasks` and :mod:`sdk.sandbox`, so that neither has to import
the other for them. Both enums are ``str`` enums: on disk (JSON, JSONL) they are their plain values,
so task files written before the enums existed load unchanged.
"""

from __future__ import annotations

import json
from enum import Enum, StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Base for immutable records: unknown fields are an error, instances are hashable."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class ConfigModel(BaseModel):
    """Base of every config section (:mod:`sdk.config` and the sections next to their concern):
    an unknown key is an error naming the allowed ones; defaults are validated too."""

    model_config = ConfigDict(extra="forbid", validate_default=True)


class Language(str, Enum):
    """Languages the sandbox can run tests in."""

    PYTHON = "python"
    JAVASCRIPT = "javascript"
    TYPESCRIPT = "typescript"
    C = "c"
    CPP = "cpp"
    JAVA = "java"
    GO = "go"
    RUST = "rust"


class Framework(StrEnum):
    """The test runner of a verifier / sandbox request.

    ``pytest`` (Python, per-test results), ``script`` (HumanEval style: the test file defines
    ``check(candidate)``; one result; also accepted by the C/C++ runner), ``node`` (``node --test``,
    JavaScript/TypeScript), ``tltest`` (C/C++ with ``tl_test.h``), ``junit`` (Java), ``go``
    (``go test``), ``rust`` (``rustc --test``), ``pytest_repo`` (Python, the whole working folder is
    the candidate: its tests run in a process of their own and the verdict is re-derived outside
    it; change tasks), ``go_repo`` (Go, a whole module is the candidate: ``go test ./...``, tests
    named ``<test file>::<TestName>``; change tasks). Which language takes which runner:
    :mod:`sdk.sandbox.languages` and :mod:`sdk.sandbox.python_lang`.
    """

    PYTEST = "pytest"
    SCRIPT = "script"
    NODE = "node"
    TLTEST = "tltest"
    JUNIT = "junit"
    GO = "go"
    RUST = "rust"
    PYTEST_REPO = "pytest_repo"
    GO_REPO = "go_repo"


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the input of every content hash."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


__all__ = ["ConfigModel", "Framework", "Frozen", "Language", "canonical_json"]
