"""Validation before training: every task's reference must pass its own verifier in the sandbox.

Tasks that fail are quarantined with the reason and counted in the report, never trained on:

* ``no_reference``: a unit-test task without a reference cannot be validated;
* ``reference_fails``: the reference does not pass its visible (or hidden) tests; the reason's
  first line names the first failing test and its cause (``AssertionError: ...``), the lines after
  it the failing tests and the tail of each one's report (:mod:`sdk.tasks.failures`);
* ``toolchain_unavailable`` / ``sandbox_error``: the task cannot be judged on this machine
  (field case S3: excluded before training starts, never scored 0);
* ``tests_miss_broken_body``: a stub (``raise NotImplementedError``) passes the tests, so the
  tests cannot tell a right answer from a wrong one.
"""

from __future__ import annotations

from collections.abc import Sequence

from sdk.sandbox.contract import ExecRequest, ExecResult, ExecStatus, Limits, Sandbox
from sdk.tasks.failures import failing_tests_reason
from sdk.tasks.records import Language, Quarantined, Task, UnitTestVerifier


def request_for(task: Task, solution: str, hidden: bool | None = False, limits: Limits | None = None) -> ExecRequest:
    """The sandbox request that judges ``solution`` for a unit-test ``task``.

    Args:
        hidden: False: the visible tests; True: the hidden tests; None: both in one run (one
            interpreter start instead of two; outcomes keep their file names apart).
        limits: base limits; the verifier's ``timeout_s`` replaces ``limits.timeout_s``.
    Raises:
        TypeError: the task's verifier is not a :class:`UnitTestVerifier`.
    """
    v = task.verifier
    if not isinstance(v, UnitTestVerifier):
        raise TypeError(f"task {task.id} has a {v.kind!r} verifier, not unit tests")
    limits = (limits or Limits()).model_copy(update={"timeout_s": v.timeout_s})
    return ExecRequest(language=v.language, framework=v.framework, solution=solution,
                       tests={**v.tests, **v.hidden_tests} if hidden is None else v.hidden_tests if hidden else v.tests,
                       files=v.files, target_path=v.target_path,
                       entry_point=v.entry_point, prelude=v.prelude, limits=limits, requirements=v.requirements)


def stub_for(task: Task) -> str | None:
    """A wrong-on-purpose Python solution with the entry point's signature, or None."""
    v = task.verifier
    if not isinstance(v, UnitTestVerifier) or v.language != Language.PYTHON or not v.entry_point or not task.reference:
        return None
    import ast

    try:
        tree = ast.parse(task.reference)
    except SyntaxError:
        return None
    name = v.entry_point.split(".")[-1]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            node.body = [ast.Raise(exc=ast.Name(id="NotImplementedError", ctx=ast.Load()))]
            node.decorator_list = node.decorator_list
            return ast.unparse(node)
    return None


def _reason(result: ExecResult, what: str) -> str | None:
    if result.status.is_infrastructure:
        return f"{result.status.value}: {result.detail or what}"
    if not result.all_passed:
        bad = [t for t in result.tests if t.outcome in ("failed", "error")]
        if bad and result.status is ExecStatus.FAILED:  # each failing test's cause, briefly then in full
            return failing_tests_reason(f"reference_fails: {what} gave {result.status.value}", bad, len(result.tests))
        failed = [t.name for t in result.tests if t.outcome != "passed"][:3]
        return f"reference_fails: {what} gave {result.status.value} ({result.detail or ', '.join(failed)})"
    return None


def validate_tasks(tasks: Sequence[Task], sandbox: Sandbox, limits: Limits | None = None,
                   check_stub: bool = True, progress=None,
                   stubs_failed: dict[str, str] | None = None) -> tuple[list[Task], list[Quarantined]]:
    """Split ``tasks`` into (valid, quarantined) by running references (and stubs) in ``sandbox``.

    Answer-match and reference-only tasks pass through (their verifier needs no sandbox).
    All requests go to the sandbox as one batch so it can run them concurrently.

    Args:
        progress: optional callable ``advance(n)`` for a progress bar.
        stubs_failed: when given, filled with ``{task id: stub code}`` for each task whose stub
            was judged and failed its visible tests, so :func:`sdk.tasks.strength.check_strength`
            need not run the same ``raise NotImplementedError`` body again.
    """
    checks: list[tuple[int, str, ExecRequest]] = []
    checks_code: dict[int, str] = {}
    bad: dict[int, str] = {}
    for i, task in enumerate(tasks):
        v = task.verifier
        if not isinstance(v, UnitTestVerifier):
            continue
        if not task.reference:
            bad[i] = "no_reference: a unit-test task needs a reference solution to be validated"
            continue
        checks.append((i, "visible and hidden tests", request_for(task, task.reference, hidden=None, limits=limits)))
        stub = stub_for(task) if check_stub else None
        if stub:
            checks.append((i, "stub", request_for(task, stub, limits=limits)))
            checks_code[i] = stub
    results = run_batched(sandbox, [c[2] for c in checks], progress)
    tasks = list(tasks)
    _retry_timeouts(tasks, checks, results, sandbox)
    for (i, what, _), result in zip(checks, results):
        if i in bad:
            continue
        if what == "stub":
            if result.all_passed:
                bad[i] = "tests_miss_broken_body: a body raising NotImplementedError passes the tests"
            elif stubs_failed is not None and not result.status.is_infrastructure:
                stubs_failed[tasks[i].id] = checks_code[i]
            continue
        reason = _reason(result, what)
        if reason:
            bad[i] = reason
    valid = [t for i, t in enumerate(tasks) if i not in bad]
    quarantined = [Quarantined(reason=reason, task=tasks[i], source=tasks[i].source) for i, reason in sorted(bad.items())]
    return valid, quarantined


def _retry_timeouts(tasks: list[Task], checks: list, results: list[ExecResult], sandbox: Sandbox,
                    factor: float = 4.0) -> None:
    """Run each reference that only timed out once more with ``factor`` x its limit (at most
    600 s): the harness runs every call across a process boundary, so call-dense tests take
    far longer than in the traced run. A reference that then passes keeps the larger limit
    (its task's ``verifier.timeout_s``, in place in ``tasks``, ``checks`` and ``results``)."""
    again = [(k, i) for k, (i, what, _) in enumerate(checks)
             if what != "stub" and results[k].status == ExecStatus.TIMEOUT and tasks[i].verifier.timeout_s < 600]
    if not again:
        return
    longer = {i: min(600.0, tasks[i].verifier.timeout_s * factor) for _, i in again}
    retried = sandbox.run([checks[k][2].model_copy(update={"limits": checks[k][2].limits.model_copy(
        update={"timeout_s": longer[i]})}) for k, i in again])
    for (k, i), result in zip(again, retried):
        results[k] = result
        if result.all_passed:
            tasks[i] = tasks[i].model_copy(update={"verifier": tasks[i].verifier.model_copy(update={"timeout_s": longer[i]})})


def run_batched(sandbox: Sandbox, requests: list[ExecRequest], progress, chunk: int = 16) -> list[ExecResult]:
    """``sandbox.run`` over ``requests`` in chunks of ``chunk``, calling ``progress(n)`` after each
    (in order). Two chunks are in flight at once, so the sandbox's slots never drain at a chunk's
    end (its last run alone on one slot while the other waits); results align with ``requests``."""
    from concurrent.futures import ThreadPoolExecutor

    parts = [requests[start:start + chunk] for start in range(0, len(requests), chunk)]
    out: list[ExecResult] = []
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="tl-chunks") as chunks:
        futures = [chunks.submit(sandbox.run, part) for part in parts]
        for part, future in zip(parts, futures):
            out.extend(future.result())
            if progress:
                progress(len(part))
    return out


__all__ = ["ExecStatus", "request_for", "run_batched", "stub_for", "validate_tasks"]
