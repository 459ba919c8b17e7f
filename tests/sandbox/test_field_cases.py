"""Field cases S1-S3 of shared/cases/CASES.md, on the default (bubblewrap) backend."""

from __future__ import annotations

import time

import pytest

from sdk.config import SandboxConfig
from sdk.sandbox import ExecRequest, ExecStatus, Limits, make_sandbox
from sdk.sandbox.languages import toolchain_status
from sdk.tasks.records import Language

CHECK = "def check(candidate):\n    assert candidate(2, 3) == 5\n"


def req(solution: str, limits: Limits) -> ExecRequest:
    return ExecRequest(framework="script", solution=solution, entry_point="add", tests={"t.py": CHECK}, limits=limits)


def test_s1_one_bad_sample_in_a_batch(bubblewrap_sandbox):
    limits = Limits(timeout_s=2)
    batch = [
        req("def add(a, b):\n    return a + b\n", limits),
        req("while True:\n    pass\n", limits),
        # the grandchild sleeps holding the pipe the sample waits on
        req("import subprocess\nsubprocess.run(['sh', '-c', '(sleep 100 &) ; sleep 100'], capture_output=True)\n", limits),
        req("raise SystemError('broken')\n", limits),
    ]
    t = time.monotonic()
    out = bubblewrap_sandbox.run(batch)
    elapsed = time.monotonic() - t
    assert [r.status for r in out] == [ExecStatus.OK, ExecStatus.TIMEOUT, ExecStatus.TIMEOUT, ExecStatus.RUNTIME_ERROR]
    assert elapsed < 30   # the 100 s sleepers were killed at the 2 s limit (generous for a loaded machine)
    assert bubblewrap_sandbox.stray_processes() == []


def test_s2_memory_and_output_floods(bubblewrap_sandbox):
    mem = req("x = bytearray(2 * 1024 ** 3)\n", Limits(memory_mb=256))
    big = "print(list(range(100000)))\ndef add(a, b):\n    return a + b\n"
    full, cut = bubblewrap_sandbox.run([req(big, Limits(output_bytes=1 << 20)), req(big, Limits(output_bytes=1 << 16))])
    assert bubblewrap_sandbox.run_one(mem).status == ExecStatus.MEMORY_LIMIT
    # complete output is complete; truncated output is flagged and is never a prefix passed off as whole
    assert not full.stdout_truncated and eval(full.stdout) == list(range(100000))
    assert cut.stdout_truncated and len(cut.stdout) == 1 << 16
    assert full.status == cut.status == ExecStatus.OK   # the verdict never depended on stdout


def test_s3_missing_toolchain_found_before_training(monkeypatch):
    import sdk.sandbox.languages as langs

    monkeypatch.setattr(langs, "SEARCH", "/nonexistent")
    reason = langs.toolchain_status(Language.GO, search=langs.SEARCH)
    assert reason and "go" in reason
    sb = make_sandbox(SandboxConfig(backend="process", allow_unisolated=True, concurrency=1))
    try:
        res = sb.run_one(ExecRequest(language=Language.GO, framework="go", solution="package x\n",
                                     tests={"x_test.go": "package x\n"}, target_path="x.go"))
    finally:
        sb.close()
    assert res.status == ExecStatus.TOOLCHAIN_UNAVAILABLE and res.status.is_infrastructure
    assert res.tests == () and not res.all_passed
