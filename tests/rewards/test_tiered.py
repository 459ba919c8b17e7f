"""The tiered reward against a scripted sandbox: tiers, batching, infrastructure (R2)."""

from __future__ import annotations

import pytest

from sdk.config import RewardConfig
from sdk.errors import RewardError
from sdk.rewards import tiered
from sdk.rewards.result import RewardStatus
from sdk.rewards.tiered import build_request, score_batch, score_completion
from sdk.sandbox.contract import ExecResult, ExecStatus
from sdk.tasks.records import Message, ReferenceOnly, Source, Task

from .helpers import FakeSandbox, add_task, judge_hello, outcome, passing

HONEST = "```python\ndef add(a, b):\n    return a + b\n```"
W = RewardConfig()


def test_honest_solution_gets_full_marks_and_every_component(fake):
    r = score_completion(add_task(), HONEST, fake, W)
    assert r.score == 1.0 and r.status == RewardStatus.OK
    for key in ("parses", "runs", "tests", "visible_frac", "hidden_frac", "hidden_gap", "all_passed"):
        assert key in r.components
    assert r.components["visible_total"] == 2 and r.components["hidden_total"] == 1


def test_batch_goes_to_the_sandbox_in_one_call(fake):
    tasks = [add_task()] * 4 + [add_task(hidden=False)]
    results = score_batch(tasks, [HONEST] * 5, fake, W)
    assert [r.score for r in results] == [1.0] * 5
    # pytest tasks run visible and hidden files in one request, split by file afterwards
    assert len(fake.batches) == 1 and len(fake.batches[0]) == 5
    assert set(fake.batches[0][0].tests) == {"test_add.py", "test_add_hidden.py"}


def test_request_is_built_from_the_verifier():
    task = add_task(files={"pkg/util.py": "X = 1\n"}, target_path="pkg/add.py", prelude="import math\n")
    req = build_request(task.verifier, "def add(a, b):\n    return a + b\n")
    v = task.verifier
    assert (req.language, req.framework, req.tests, req.files) == (v.language, v.framework, v.tests, v.files)
    assert (req.target_path, req.entry_point, req.prelude) == ("pkg/add.py", "add", "import math\n")
    assert req.limits.timeout_s == v.timeout_s
    assert build_request(v, "x", hidden=True).tests == v.hidden_tests


def test_partial_credit_by_tier():
    def one_visible_fails(req):
        res = passing(req)
        tests = tuple(outcome(t.name, "negative" not in t.name) for t in res.tests)
        return ExecResult(status=ExecStatus.FAILED if len(tests) == 2 else ExecStatus.OK, tests=tests, exit_code=0)

    r = score_completion(add_task(), HONEST, FakeSandbox(one_visible_fails), W)
    # visible 1/2, hidden 1/1 -> tests (0.5 + 1) / 2 = 0.75
    assert r.components["tests"] == 0.75
    assert r.score == pytest.approx(0.05 + 0.05 + 0.9 * 0.75)
    assert r.status == RewardStatus.FAILED


def test_r2_infrastructure_is_none_and_genuine_failure_is_a_number():
    def respond(req):
        if "conn" in req.solution:
            raise ConnectionError("sandbox worker unreachable")
        if "slow" in req.solution:
            return ExecResult(status=ExecStatus.SANDBOX_ERROR, detail="verifier timed out")
        return ExecResult(status=ExecStatus.FAILED, exit_code=0,
                          tests=(outcome("test_add.py::test_small", False), outcome("test_add.py::test_negative", False)))

    sandbox = FakeSandbox(respond)
    comps = [f"```python\ndef add(a, b):\n    # {tag}\n    return a * b\n```" for tag in ("conn", "slow", "wrong")]
    res = score_batch([add_task(hidden=False)] * 3, comps, sandbox, W)
    assert [r.score for r in res[:2]] == [None, None]
    assert all(r.status == RewardStatus.INFRASTRUCTURE for r in res[:2])
    assert res[2].score == pytest.approx(0.1) and res[2].components["tests"] == 0.0
    zero_credit = RewardConfig(parses=0, runs=0, tests=1)
    assert score_batch([add_task(hidden=False)], comps[2:], sandbox, zero_credit)[0].score == 0.0


def test_infrastructure_failures_are_retried():
    calls = []

    def flaky(req):
        calls.append(req)
        return ExecResult(status=ExecStatus.SANDBOX_ERROR) if len(calls) == 1 else passing(req)

    r = score_completion(add_task(hidden=False), HONEST, FakeSandbox(flaky), W)
    assert r.score == 1.0 and len(calls) == 2


def test_toolchain_unavailable_is_not_retried_and_not_zero():
    sandbox = FakeSandbox(lambda req: ExecResult(status=ExecStatus.TOOLCHAIN_UNAVAILABLE, detail="no go"))
    r = score_completion(add_task(hidden=False), HONEST, sandbox, W)
    assert r.score is None and r.exec_status == ExecStatus.TOOLCHAIN_UNAVAILABLE
    assert len(sandbox.batches) == 1


@pytest.mark.parametrize("status, want", [(ExecStatus.TIMEOUT, RewardStatus.TIMEOUT),
                                          (ExecStatus.MEMORY_LIMIT, RewardStatus.RESOURCE_LIMIT),
                                          (ExecStatus.RUNTIME_ERROR, RewardStatus.RUNTIME_ERROR)])
def test_runs_that_never_reach_the_tests_keep_only_the_parse_tier(status, want):
    r = score_completion(add_task(hidden=False), HONEST, FakeSandbox(lambda req: ExecResult(status=status)), W)
    assert r.status == want and r.score == pytest.approx(0.05)


def test_truncated_output_is_never_scored_as_complete():
    def flood(req):
        return passing(req).model_copy(update={"status": ExecStatus.OUTPUT_LIMIT, "stdout_truncated": True})

    r = score_completion(add_task(hidden=False), HONEST, FakeSandbox(flood), W)
    assert r.components["tests"] == 0.0 and r.status == RewardStatus.RESOURCE_LIMIT


def test_syntax_error_and_no_code_never_reach_the_sandbox(fake):
    bad = score_completion(add_task(), "```python\ndef add(a, b)\n    return a + b\n```", fake, W)
    none = score_completion(add_task(), "I don't know.", fake, W)
    assert (bad.status, bad.score) == (RewardStatus.COMPILE_ERROR, 0.0)
    assert (none.status, none.score) == (RewardStatus.NO_CODE, 0.0)
    assert fake.batches == [] or all(b == [] for b in fake.batches)


def test_regression_penalty_for_tests_that_passed_in_the_baseline():
    baseline = ExecResult(status=ExecStatus.OK, tests=(outcome("test_add.py::test_small", True),
                                                       outcome("test_add.py::test_negative", True)))

    def now(req):
        return ExecResult(status=ExecStatus.FAILED, tests=(outcome("test_add.py::test_small", True),
                                                           outcome("test_add.py::test_negative", False)))

    r = score_completion(add_task(hidden=False), HONEST, FakeSandbox(now), W, baseline=baseline)
    assert r.components["regressions"] == 1.0
    assert r.components["regression_penalty"] == pytest.approx(0.25)  # 0.5 * 1/2
    assert r.score == pytest.approx(0.05 + 0.05 + 0.9 * 0.5 - 0.25)


def test_side_effect_penalty(fake):
    code = "```python\ndef add(a, b):\n    open('/tmp/marker', 'w').write('x')\n    return a + b\n```"
    r = score_completion(add_task(), code, fake, W)
    assert "side_effect" in r.flags and r.status == RewardStatus.OK
    assert r.score == pytest.approx(1.0 - W.side_effect_penalty)


def test_reference_only_task_is_not_verifiable(fake):
    task = Task(domain="feedback/bot", prompt=(Message(role="user", content="hi"),), verifier=ReferenceOnly(),
                source=Source(connector="t"))
    r = score_completion(task, "hello", fake, W)
    assert r.score is None and r.status == RewardStatus.NOT_VERIFIABLE


def test_one_sample_that_breaks_the_scorer_costs_only_itself(fake, monkeypatch):
    real = tiered.extract_code

    def boom(completion, *a, **k):
        if "boom" in completion:
            raise RuntimeError("parser bug")
        return real(completion, *a, **k)

    monkeypatch.setattr(tiered, "extract_code", boom)
    res = score_batch([add_task()] * 2, ["boom", HONEST], fake, W)
    assert res[0].score is None and res[0].status == RewardStatus.ERROR and "parser bug" in res[0].detail
    assert res[1].score == 1.0


def test_configuration_errors_raise(fake):
    with pytest.raises(RewardError):
        score_batch([add_task()], [], fake, W)
    with pytest.raises(RewardError):
        score_batch([add_task()], [HONEST], fake, RewardConfig(parses=0, runs=0, tests=0))


def test_hidden_timeout_counts_as_failing_and_is_flagged():
    """Issue 14: hard-coding the visible answers and hanging on hidden inputs used to skip the
    hidden-gap check (0.55); a timeout on a hidden input now fails it and raises the flag."""
    def slow_hidden(req):
        return ExecResult(status=ExecStatus.TIMEOUT) if "1000" in req.tests["test_add.py"] else passing(req)

    # same file name in both splits: two separate runs
    task = add_task(hidden=False)
    task = Task(domain=task.domain, prompt=task.prompt, source=task.source, verifier=task.verifier.model_copy(
        update={"hidden_tests": {"test_add.py": "from solution import add\n\ndef test_big():\n"
                                                "    assert add(1000, 2345) == 3345\n"}}))
    sandbox = FakeSandbox(slow_hidden)
    r = score_completion(task, HONEST, sandbox, W)
    assert len(sandbox.batches[0]) == 2
    assert r.status == RewardStatus.SUSPECTED_HACKING and r.flags == ("hardcoded_outputs",)
    assert r.components["hidden_frac"] == 0.0 and r.score == 0.0 and "timeout" in r.detail


def test_optional_judge_for_reference_only_tasks_is_marked_not_verifiable(fake):
    task = Task(domain="feedback/bot", prompt=(Message(role="user", content="hi"),), verifier=ReferenceOnly(),
                source=Source(connector="t"))
    good, unsure, broken = score_batch([task] * 3, ["hello", "?", "crash"], fake, W, judge=judge_hello)
    assert (good.score, good.status, good.flags) == (0.7, RewardStatus.JUDGED_UNVERIFIED, ("not_verifiable",))
    assert unsure.score is None and unsure.status == RewardStatus.NOT_VERIFIABLE
    # a judge that raises is a verifier error (masked, retried once), never 0 (W1)
    assert broken.score is None and broken.status == RewardStatus.VERIFIER_ERROR and "judge offline" in broken.detail


def test_body_only_completion_is_joined_to_the_prompt_header(fake):
    header = 'def add(a, b):\n    """Return a + b."""\n'
    task = Task(domain="python/he", prompt=(Message(role="user", content=f"Complete:\n```python\n{header}```"),),
                verifier=add_task(hidden=False).verifier, source=Source(connector="t"))
    r = score_completion(task, "    if a == 0:\n        return b\n    return a + b\n", fake, W)
    assert r.score == 1.0 and r.flags == ()
    solution = fake.batches[0][0].solution
    assert solution.startswith("def add(a, b):") and "        return b" in solution


def test_return_outside_function_is_a_compile_error(fake):
    r = score_completion(add_task(), "return 1\n", fake, W)
    assert r.status == RewardStatus.COMPILE_ERROR and "outside function" in r.detail


def test_merged_pytest_run_is_split_by_file():
    def hidden_fails(req):
        res = passing(req)
        return res.model_copy(update={"status": ExecStatus.FAILED, "tests": tuple(
            outcome(t.name, not t.name.startswith("test_add_hidden.py")) for t in res.tests)})

    r = score_completion(add_task(), HONEST, FakeSandbox(hidden_fails), W)
    assert (r.components["visible_frac"], r.components["hidden_frac"]) == (1.0, 0.0)
    assert r.components["visible_total"] == 2 and r.components["hidden_total"] == 1
    assert "hardcoded_outputs" in r.flags and r.score == 0.0


def test_r5_a_crash_is_not_a_clean_run(real_sandbox):
    """Field case R5: ``raise ValueError`` in every test gets no ``runs`` credit and status
    runtime_error; a wrong value returned without raising scores above it."""
    from sdk.tasks.records import UnitTestVerifier

    tests = {"test_solve.py": "from solution import solve\n\ndef test_a():\n    assert solve(1) == ''\n\n"
                              "def test_b():\n    assert solve(2) == ''\n"}
    task = Task(domain="python/r5", prompt=(Message(role="user", content="Write solve(x)."),), source=Source(connector="t"),
                verifier=UnitTestVerifier(tests=tests, entry_point="solve", timeout_s=10.0))
    crash, wrong = score_batch([task, task], ["```python\ndef solve(x):\n    raise ValueError\n```",
                                              "```python\ndef solve(x):\n    return 'no'\n```"], real_sandbox, W)
    assert crash.status == RewardStatus.RUNTIME_ERROR and crash.components["runs"] == 0.0, crash
    assert wrong.status == RewardStatus.FAILED and wrong.score > crash.score, (wrong, crash)
