"""The one sandbox contract: :class:`ExecRequest` in, :class:`ExecResult` out.

Every backend (local process, bubblewrap, Ray) and every language takes the same request and
returns the same result. The sandbox knows nothing of torch, rewards or trainers.
"""

from __future__ import annotations

import hashlib
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sdk.types import Framework, Language, canonical_json


class ExecStatus(str, Enum):
    """Outcome of one execution. Only ``OK`` with every test passed is a pass.

    ``TOOLCHAIN_UNAVAILABLE`` and ``SANDBOX_ERROR`` are infrastructure statuses: the code was
    never judged, so they must never become a reward of 0 (see :attr:`is_infrastructure`).
    """

    OK = "ok"                                  # ran, every test passed
    FAILED = "failed"                          # ran, at least one test failed (or none reported)
    COMPILE_ERROR = "compile_error"            # syntax error / compilation failed
    RUNTIME_ERROR = "runtime_error"            # crashed before tests could report
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    TOOLCHAIN_UNAVAILABLE = "toolchain_unavailable"
    SANDBOX_ERROR = "sandbox_error"

    @property
    def is_infrastructure(self) -> bool:
        """True when the verdict says nothing about the code (mask, retry; never score 0)."""
        return self in (ExecStatus.TOOLCHAIN_UNAVAILABLE, ExecStatus.SANDBOX_ERROR)


class Limits(BaseModel):
    """Resource limits for one execution.

    Attributes:
        timeout_s: wall-clock seconds for the run (compilation has its own ``compile_timeout_s``).
        compile_timeout_s: wall-clock seconds for compilation, where the language compiles.
        cpu_s: CPU seconds (RLIMIT_CPU).
        memory_mb: address space / cgroup memory, MiB.
        file_size_mb: largest file the code may write, MiB.
        open_files: RLIMIT_NOFILE.
        processes: processes/threads the execution may hold.
        output_bytes: stdout and stderr are each cut to this many bytes and flagged truncated.
        scratch_mb: size of the writable scratch tmpfs, MiB (bubblewrap backend).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_s: float = Field(10.0, gt=0)
    compile_timeout_s: float = Field(30.0, gt=0)
    cpu_s: int = Field(20, gt=0)
    memory_mb: int = Field(1024, gt=0)
    file_size_mb: int = Field(16, gt=0)
    open_files: int = Field(256, gt=0)
    processes: int = Field(64, gt=0)
    output_bytes: int = Field(65536, gt=0)
    scratch_mb: int = Field(64, gt=0)


class ExecRequest(BaseModel):
    """Run ``tests`` against ``solution`` in ``language``.

    Attributes:
        language: language of solution and tests.
        framework: the test runner (:class:`~sdk.types.Framework`: ``pytest``, ``script``, ``node``,
            ``tltest``, ``junit``, ``go``, ``rust``).
        solution: the untrusted code.
        tests: test files, ``path -> source``; written read-only, never modifiable by the solution.
        files: support files, ``path -> source``.
        target_path: where the solution goes; if it is in ``files`` the solution's definition
            of ``entry_point`` is spliced into that file.
        entry_point: the function/class the solution must define.
        prelude: code prepended to the solution when written.
        limits: resource limits.
        requirements: pip requirement strings the tests need (``freezegun``); installed once
            into a cached read-only environment (:mod:`sdk.sandbox.deps`) that goes at the end
            of the sandboxed ``sys.path``. Empty: the standard library and pytest only. For JavaScript/
            TypeScript: npm ``name@spec`` strings, installed with the lockfile among ``files``
            (:mod:`sdk.sandbox.npmdeps`) into a read-only ``node_modules`` beside the task.
        shadow_exempt: ``pytest_repo`` only: comparison sites (``file:line:col``) of the test files
            whose shadow (``_runner/tl_shadow.py``) is not flagged (the reference's own disagree).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    language: Language = Language.PYTHON
    framework: Framework = Framework.PYTEST
    solution: str
    tests: dict[str, str]
    files: dict[str, str] = Field(default_factory=dict)
    target_path: str = "solution.py"
    entry_point: str | None = None
    prelude: str = ""
    limits: Limits = Field(default_factory=Limits)
    requirements: tuple[str, ...] = ()
    shadow_exempt: tuple[str, ...] = ()

    def cache_key(self) -> str:
        """sha256 over everything that can change the verdict (code, tests, language, limits)."""
        return hashlib.sha256(canonical_json(self.model_dump(mode="json")).encode()).hexdigest()

    def __hash__(self) -> int:
        return hash(self.cache_key())


class TestOutcome(BaseModel):
    """One test's result as reported by the runner (never by the solution)."""

    __test__ = False  # not a pytest class
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    outcome: Literal["passed", "failed", "error", "skipped"]
    message: str = ""


class ExecResult(BaseModel):
    """Result of one :class:`ExecRequest`.

    Attributes:
        status: see :class:`ExecStatus`.
        tests: per-test outcomes in runner order (empty when the run never reached the tests).
        exit_code: the test process's exit code, ``None`` if killed or never started.
        stdout, stderr: captured output, each cut to ``limits.output_bytes``.
        stdout_truncated, stderr_truncated: whether the cut happened.
        wall_s: wall-clock seconds; cpu_s: user+system CPU seconds of the execution.
        detail: a human-readable reason for non-OK statuses.
        cached: True when served from the result cache.
        flags: tampering the trusted harness saw (names as in ``sdk.rewards.integrity``:
            ``exit_trick``, ``always_equal``, ``runner_tampering``, ``reads_tests``), each also
            explained in ``detail``; empty for an ordinary run. Added by issue 14.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: ExecStatus
    tests: tuple[TestOutcome, ...] = ()
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    wall_s: float = 0.0
    cpu_s: float = 0.0
    detail: str = ""
    cached: bool = False
    flags: tuple[str, ...] = ()

    @property
    def passed(self) -> int:
        """Number of tests that passed."""
        return sum(t.outcome == "passed" for t in self.tests)

    @property
    def total(self) -> int:
        """Number of tests that ran (skipped ones excluded)."""
        return sum(t.outcome != "skipped" for t in self.tests)

    @property
    def all_passed(self) -> bool:
        """True only for status OK with at least one test and every test passed."""
        return self.status == ExecStatus.OK and self.total > 0 and self.passed == self.total


class Sandbox:
    """Protocol-like base: run many requests, return results in the same order.

    Implementations override :meth:`run_one`; the base owns the batch call.
    """

    def run_one(self, request: ExecRequest) -> ExecResult:  # pragma: no cover - interface
        """Run one request (the hook implementations override)."""
        raise NotImplementedError

    def run(self, requests: list[ExecRequest]) -> list[ExecResult]:
        """Run ``requests`` (possibly concurrently); results align with requests."""
        return [self.run_one(r) for r in requests]

    def close(self) -> None:
        """Release workers (no-op by default)."""
