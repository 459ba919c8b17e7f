"""Helpers for the reward tests: task builders and a scripted fake sandbox."""

from __future__ import annotations

from collections.abc import Callable

from sdk.sandbox.contract import ExecRequest, ExecResult, ExecStatus, Sandbox, TestOutcome
from sdk.tasks.records import Message, Source, Task, UnitTestVerifier

ADD_TESTS = {"test_add.py": "from solution import add\n\n\ndef test_small():\n    assert add(2, 3) == 5\n\n\n"
                            "def test_negative():\n    assert add(-4, 1) == -3\n"}
ADD_HIDDEN = {"test_add_hidden.py": "from solution import add\n\n\ndef test_big():\n    assert add(1000, 2345) == 3345\n"}


def add_task(hidden: bool = True, reference: str | None = None, **changes) -> Task:
    """A small `add(a, b)` task with two visible tests and (optionally) one hidden test."""
    verifier = UnitTestVerifier(tests=ADD_TESTS, hidden_tests=ADD_HIDDEN if hidden else {}, entry_point="add",
                                timeout_s=5.0, **changes)
    return Task(domain="python/demo", prompt=(Message(role="user", content="Write `add(a, b)` returning a + b."),),
                verifier=verifier, source=Source(connector="test"), reference=reference)


def outcome(name: str, ok: bool) -> TestOutcome:
    return TestOutcome(name=name, outcome="passed" if ok else "failed")


def passing(req: ExecRequest) -> ExecResult:
    """All tests defined in the request's files pass (names as the real runner reports them)."""
    import ast

    tests = []
    for path, src in sorted(req.tests.items()):
        for node in ast.parse(src).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                tests.append(outcome(f"{path}::{node.name}", True))
    return ExecResult(status=ExecStatus.OK, tests=tuple(tests), exit_code=0)


class FakeSandbox(Sandbox):
    """Answers each request with ``respond(request)``; records every batch it was given."""

    def __init__(self, respond: Callable[[ExecRequest], ExecResult] = passing) -> None:
        self.respond = respond
        self.batches: list[list[ExecRequest]] = []

    def run_one(self, request: ExecRequest) -> ExecResult:
        return self.respond(request)

    def run(self, requests: list[ExecRequest]) -> list[ExecResult]:
        self.batches.append(list(requests))
        return [self.respond(r) for r in requests]


def fake_factory() -> FakeSandbox:
    """A picklable sandbox factory for :class:`~sdk.rewards.trl.SandboxReward` tests."""
    return FakeSandbox()


def flaky_factory() -> FakeSandbox:
    """Every request is an infrastructure failure."""
    return FakeSandbox(lambda req: ExecResult(status=ExecStatus.SANDBOX_ERROR, detail="worker lost"))


def judge_hello(task, completion):
    """A picklable judge (judges run in verifier worker processes): 0.7, None for '?', raises on 'crash'."""
    if completion == "crash":
        raise RuntimeError("judge offline")
    return None if completion == "?" else 0.7


def judge_hangs(task, completion):
    """A judge that never returns on the completion 'hang' (W2), else 1.0."""
    import time

    while completion == "hang":
        time.sleep(1)
    return 1.0


def judge_with_alarm(task, completion):
    """A judge that limits its own time with ``signal.alarm`` (W1): it works only on a main thread."""
    import signal

    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("judge too slow")))
    signal.alarm(5)
    try:
        return 1.0 if "Paris" in completion else 0.0
    finally:
        signal.alarm(0)
