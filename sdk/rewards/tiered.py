"""The tiered reward: how good a completion's code really is, from sandboxed test runs.

Tiers (weights in :class:`sdk.config.RewardConfig`, normalised by ``parses + runs + tests`` so
full marks are exactly 1.0):

- ``parses``: the extracted code compiles (Python: ``compile()`` here in the parent, never
  run; a bare function body is first joined to the ``def`` header the prompt shows; other
  languages: the sandbox did not report a compile error);
- ``runs``: the run reached the tests (no crash at import, no timeout, no resource limit);
- ``tests``: the fraction of tests passed. Visible tests alone when a task has no hidden
  tests, else the mean of the visible and hidden fractions (an over-fitted solution loses
  half). Denominators count the tests the pristine files define, so a missing result is a
  failure (R3);
- minus ``regression_penalty`` x the fraction of the baseline's passing tests now failing;
- minus ``side_effect_penalty`` when the solution writes files, deletes, spawns processes or
  opens sockets (static detector, :mod:`sdk.rewards.integrity`).

Any hacking detector forces the score to 0 with status ``suspected_hacking``; static ones
short-circuit before the sandbox runs. An infrastructure failure (sandbox error, missing
toolchain) gives ``score=None`` after one retry, never 0 (R2). Every component is logged,
including weight-0 metrics (``hidden_gap``, ``visible_passed``...).

Sources: the tiers are those issue 6 lists; the shape follows CodeRL (Le et al., 2022), whose
reward is -1 for a compile error, -0.6 for a runtime error, -0.3 for failed tests and +1 for a
pass. Deviations: rewards stay in [0, 1] before penalties (parse and run tiers are small positive credits, so a
group of all-failing samples still ranks "ran" above "crashed"); credit for tests is by
fraction; a crash keeps only ``parses``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sdk.errors import RewardError
from sdk.rewards.config import RewardConfig
import sdk.rewards.integrity as integrity
import sdk.rewards.change as change_reward
import sdk.rewards.runtime_checks as runtime_checks
from sdk.rewards.answers import AnswerOptions, score_answer
from sdk.rewards.extract import ExtractStatus, extract_code
from sdk.rewards.result import RewardResult, RewardStatus
from sdk.rewards.verifier_pool import VerifierPool, judged, shared_pool, verdicts
from sdk.sandbox.contract import ExecRequest, ExecResult, ExecStatus, Limits, Sandbox
from sdk.tasks.records import AnswerVerifier, ChangeVerifier, ReferenceOnly, Task, UnitTestVerifier
from sdk.types import Framework, Language

log = logging.getLogger(__name__)
_NOT_REACHED = (ExecStatus.COMPILE_ERROR, ExecStatus.RUNTIME_ERROR, ExecStatus.TIMEOUT,
                ExecStatus.MEMORY_LIMIT, ExecStatus.OUTPUT_LIMIT)
_STATUS = {ExecStatus.COMPILE_ERROR: RewardStatus.COMPILE_ERROR, ExecStatus.RUNTIME_ERROR: RewardStatus.RUNTIME_ERROR,
           ExecStatus.TIMEOUT: RewardStatus.TIMEOUT, ExecStatus.MEMORY_LIMIT: RewardStatus.RESOURCE_LIMIT,
           ExecStatus.OUTPUT_LIMIT: RewardStatus.RESOURCE_LIMIT}


def build_request(verifier: UnitTestVerifier, code: str, hidden: bool = False,
                  limits: Limits | None = None) -> ExecRequest:
    """The sandbox request for ``code`` against the verifier's visible (or ``hidden``) tests.

    ``limits`` (e.g. the sandbox config's) is used with its ``timeout_s`` replaced by the
    verifier's ``timeout_s``.
    """
    base = limits or Limits()
    return ExecRequest(
        language=verifier.language, framework=verifier.framework, solution=code,
        tests=dict(verifier.hidden_tests if hidden else verifier.tests), files=dict(verifier.files),
        target_path=verifier.target_path, entry_point=verifier.entry_point, prelude=verifier.prelude,
        limits=base.model_copy(update={"timeout_s": verifier.timeout_s}), requirements=verifier.requirements,
    )


@dataclass
class _Plan:
    """One sample between preparation and scoring."""

    task: Task
    done: RewardResult | None = None
    check: tuple | None = None  # (fn, args) run in a verifier worker (answer checks, judges)
    requests: list[ExecRequest] = field(default_factory=list)
    components: dict[str, float] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    side_effect: bool = False
    merged: bool = False
    baseline: ExecResult | None = None
    change: change_reward.ChangePlan | None = None  # change tasks (sdk.rewards.change)


def score_completion(task: Task, completion: str, sandbox: Sandbox, weights: RewardConfig,
                     baseline: ExecResult | None = None) -> RewardResult:
    """Score one completion; see :func:`score_batch` (this is a batch of one)."""
    return score_batch([task], [completion], sandbox, weights, [baseline])[0]


def score_batch(tasks: Sequence[Task], completions: Sequence[str], sandbox: Sandbox, weights: RewardConfig,
                baselines: Sequence[ExecResult | None] | None = None, limits: Limits | None = None,
                retries: int = 1, static_checks: bool = True,
                judge: Callable[[Task, str], float | None] | None = None,
                verifiers: VerifierPool | None = None) -> list[RewardResult]:
    """Score ``completions[i]`` against ``tasks[i]``, every sandbox request in one ``sandbox.run``.

    Args:
        tasks, completions: aligned, length B.
        sandbox: runs the requests (concurrently, when the backend can).
        weights: tier weights.
        baselines: optional per-sample baseline run of the visible tests (regression penalty).
        limits: base resource limits (``timeout_s`` comes from each verifier).
        retries: how many times infrastructure failures are re-run before ``score=None``.
        static_checks: run the static detectors first (default); False is for auditing the
            runtime defences alone (every completion then reaches the sandbox).
        judge: optional reward model / LLM judge ``(task, completion) -> float | None`` for
            reference-only tasks; its scores get status ``judged_unverified`` and the flag
            ``not_verifiable``. Without one, reference-only tasks get ``score=None``. It must
            be picklable (a module-level function or object): it runs in a verifier worker.
        verifiers: the worker processes that run answer checks and judges with a deadline of
            ``weights.verifier_timeout_s`` each (default: this process's shared pool of
            ``weights.verifier_workers``). A check that hangs is killed: ``verifier_timeout``;
            one that raises is re-run ``retries`` times, then ``verifier_error`` (both
            ``score=None``: masked, never 0; W1, W2).
    Returns:
        B :class:`RewardResult`; a sample whose scoring raised (including a task whose answer
        verifier is broken: ``RewardError``) gets ``status=error, score=None`` and a warning
        (one exception costs one sample, never the batch).
    Raises:
        RewardError: lengths differ or the weights are all zero (a configuration error).
    """
    if len(tasks) != len(completions) or (baselines is not None and len(baselines) != len(tasks)):
        raise RewardError(f"{len(tasks)} tasks, {len(completions)} completions, "
                          f"{None if baselines is None else len(baselines)} baselines",
                          "pass one completion (and one baseline, or none) per task")
    if weights.parses + weights.runs + weights.tests <= 0:
        raise RewardError("reward weights parses + runs + tests sum to 0", "give `reward.tests` a positive weight")
    plans = [_safe_prepare(t, c, b, limits, static_checks, judge, weights)
             for t, c, b in zip(tasks, completions, baselines or [None] * len(tasks))]
    checked = [p for p in plans if p.check is not None]
    if checked:
        pool = verifiers or shared_pool(weights.verifier_workers)
        for plan, res in zip(checked, verdicts(pool, [p.check for p in checked], weights.verifier_timeout_s, retries)):
            plan.done = res
    flat = [r for p in plans for r in p.requests]
    results = run_with_retries(sandbox, flat, retries)
    out, i = [], 0
    for plan in plans:
        got, i = results[i:i + len(plan.requests)], i + len(plan.requests)
        out.append(plan.done or _safe_finish(plan, got, weights))
    return out


def run_with_retries(sandbox: Sandbox, requests: list[ExecRequest], retries: int = 1) -> list[ExecResult]:
    """``sandbox.run(requests)``; infrastructure results are re-run up to ``retries`` times.

    A batch call that raises falls back to one ``run_one`` per request, so one broken request
    costs only itself (its result becomes ``SANDBOX_ERROR``).
    """
    if not requests:
        return []
    try:
        results = list(sandbox.run(requests))
        if len(results) != len(requests):
            raise RuntimeError(f"sandbox returned {len(results)} results for {len(requests)} requests")
    except Exception:  # noqa: BLE001 - degrade to per-request runs
        results = [_run_one(sandbox, r) for r in requests]
    for _ in range(retries):
        again = [i for i, r in enumerate(results) if r.status.is_infrastructure
                 and r.status != ExecStatus.TOOLCHAIN_UNAVAILABLE]
        if not again:
            break
        for i, res in zip(again, run_with_retries(sandbox, [requests[i] for i in again], 0)):
            results[i] = res
    return results


def _run_one(sandbox: Sandbox, request: ExecRequest) -> ExecResult:
    try:
        return sandbox.run_one(request)
    except Exception as exc:  # noqa: BLE001 - a sandbox fault is data
        return ExecResult(status=ExecStatus.SANDBOX_ERROR, detail=f"{type(exc).__name__}: {exc}")


def _safe_prepare(task: Task, completion: str, baseline: ExecResult | None, limits: Limits | None,
                  static_checks: bool = True, judge: Callable[[Task, str], float | None] | None = None,
                  weights: RewardConfig | None = None) -> _Plan:
    try:
        if judge is not None and isinstance(task.verifier, ReferenceOnly):
            return _Plan(task, check=(judged, (judge, task, completion)))
        return _prepare(task, completion, baseline, limits, static_checks, weights or RewardConfig())
    except Exception as exc:  # noqa: BLE001 - one sample (or one broken task), not the batch
        log.warning("scoring a completion for task %s raised: %s", task.id, exc)
        return _Plan(task, done=RewardResult.not_judged(RewardStatus.ERROR, f"{type(exc).__name__}: {exc}"))


def _safe_finish(plan: _Plan, results: list[ExecResult], weights: RewardConfig) -> RewardResult:
    try:
        return _finish(plan, results, weights)
    except Exception as exc:  # noqa: BLE001
        return RewardResult.not_judged(RewardStatus.ERROR, f"{type(exc).__name__}: {exc}")


def _prepare(task: Task, completion: str, baseline: ExecResult | None, limits: Limits | None,
             static_checks: bool, weights: RewardConfig) -> _Plan:
    verifier = task.verifier
    if isinstance(verifier, ReferenceOnly):
        return _Plan(task, done=RewardResult.not_judged(RewardStatus.NOT_VERIFIABLE,
                                                        "task carries no automatic verifier (reference only)"))
    if isinstance(verifier, AnswerVerifier):  # in a worker process, with a deadline (W1/W2)
        prompt = "\n".join(m.content for m in task.prompt)
        return _Plan(task, check=(score_answer, (verifier, completion, AnswerOptions.of(weights), prompt)))
    if isinstance(verifier, ChangeVerifier):  # a diff against a repository (issue 17)
        plan = change_reward.prepare(task, completion, limits)
        return _Plan(task, done=plan.done, requests=plan.requests, change=plan)
    assert isinstance(verifier, UnitTestVerifier)
    ext = extract_code(completion, verifier.entry_point, verifier.language)
    if ext.status == ExtractStatus.NO_CODE or ext.code is None:
        return _Plan(task, done=RewardResult(score=0.0, status=RewardStatus.NO_CODE, components={"parses": 0.0},
                                             detail="no code in the completion"))
    code = ext.code
    plan = _Plan(task, baseline=baseline)
    plan.components["parses"] = 1.0
    dups = [n.split(":", 1)[1] for n in ext.notes if n.startswith("duplicate_definition:")]
    if dups:  # P3: last definition wins, a warning (flag + component), never a penalty by itself
        log.info("task %s: completion defines %s more than once; the last definition is used", task.id, dups)
        plan.components["duplicate_definitions"] = float(len(dups))
        plan.flags.append("duplicate_definition")
    if "demo_code_removed" in ext.notes:
        plan.components["demo_code_removed"] = 1.0
    prompt_text = "\n".join(m.content for m in task.prompt)
    if verifier.language == Language.PYTHON:
        code = _complete_body(code, prompt_text, verifier.entry_point, verifier.prelude)
        error = _compile_error(verifier.prelude + "\n" + code)
        if error:
            plan.done = RewardResult(score=0.0, status=RewardStatus.COMPILE_ERROR, components={"parses": 0.0},
                                     detail=f"does not compile: {error}")
            return plan
    findings = integrity.scan_solution(code, verifier.language, verifier.tests, prompt_text) if static_checks else []
    for f in findings:
        plan.components[f"flag_{f.flag}"] = float(f.metric)
    hacks = [f for f in findings if f.hacking]
    if hacks:
        plan.done = _hacking(plan.components, hacks, None)
        return plan
    plan.side_effect = any(f.flag == "side_effect" for f in findings)
    plan.flags += [f.flag for f in findings]
    visible = build_request(verifier, code, hidden=False, limits=limits)
    if verifier.hidden_tests and _can_merge(verifier):  # one pytest run, split by file afterwards
        plan.merged = True
        visible = visible.model_copy(update={"tests": {**verifier.tests, **verifier.hidden_tests}})
    plan.requests.append(visible)
    if verifier.hidden_tests and not plan.merged:
        plan.requests.append(build_request(verifier, code, hidden=True, limits=limits))
    return plan


def _can_merge(verifier: UnitTestVerifier) -> bool:
    return verifier.framework == Framework.PYTEST and not set(verifier.tests) & set(verifier.hidden_tests)


def _split(result: ExecResult, verifier: UnitTestVerifier) -> list[ExecResult]:
    """A merged pytest run as two results (visible, hidden), by the file each node id names
    (results naming no hidden file count as visible)."""
    hidden_of = {True: [], False: []}
    for t in result.tests:
        hidden_of[t.name.split("::")[0] in verifier.hidden_tests].append(t)
    out = []
    for tests in (tuple(hidden_of[False]), tuple(hidden_of[True])):
        status = result.status
        if status in (ExecStatus.OK, ExecStatus.FAILED):
            ok = any(t.outcome == "passed" for t in tests) and all(t.outcome in ("passed", "skipped") for t in tests)
            status = ExecStatus.OK if ok else ExecStatus.FAILED
        out.append(result.model_copy(update={"tests": tests, "status": status}))
    return out


def _compile_error(source: str) -> str | None:
    """Compile (never run) ``source`` in this process; the error text, or None. Catches what
    :func:`ast.parse` lets through, such as ``return`` outside a function."""
    try:
        compile(source, "<solution>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _complete_body(code: str, prompt_text: str, entry_point: str | None, prelude: str) -> str:
    """A completion that is only a function *body* (HumanEval continuation style) is joined to
    the ``def entry_point`` header the prompt shows, when that makes it compile."""
    if not entry_point or not _compile_error(prelude + "\n" + code):
        return code
    header = extract_code(prompt_text, entry_point).code
    if not header or f"def {entry_point}" not in header:
        return code
    joined = header.rstrip() + "\n" + "".join(f"    {ln}\n" if ln.strip() else "\n" for ln in code.splitlines())
    return joined if _compile_error(prelude + "\n" + joined) is None else code


def _hacking(components: dict[str, float], findings: list, exec_status: ExecStatus | None) -> RewardResult:
    flags = tuple(dict.fromkeys(f.flag for f in findings))
    return RewardResult(score=0.0, components=components, status=RewardStatus.SUSPECTED_HACKING, flags=flags,
                        exec_status=exec_status, detail="; ".join(dict.fromkeys(f"{f.flag}: {f.detail}" for f in findings)))


def _fraction(result: ExecResult, expected) -> tuple[float, int, int]:
    """(fraction passed, passed, denominator), every expected id counted once (missing and
    duplicated ids fail; see :func:`runtime_checks.count_results`); nothing is credited when
    the run did not reach the end (timeout, limits, crash before the tests)."""
    tally = runtime_checks.count_results(result, expected, reached=result.status not in _NOT_REACHED)
    return tally.fraction, tally.passed, tally.total


def _finish(plan: _Plan, results: list[ExecResult], weights: RewardConfig) -> RewardResult:
    verifier = plan.task.verifier
    if plan.change is not None:
        return change_reward.finish(plan.task, plan.change, results, weights)
    assert isinstance(verifier, UnitTestVerifier)
    if plan.merged:
        results = _split(results[0], verifier)
    main = results[0]
    infra = next((r for r in results if r.status.is_infrastructure), None)
    if infra is not None:
        return RewardResult.not_judged(RewardStatus.INFRASTRUCTURE, f"{infra.status.value}: {infra.detail}",
                                       exec_status=infra.status)
    comp = plan.components
    expected = runtime_checks.expected_test_counts(verifier.tests, verifier.framework)
    forged = verifier.framework in (Framework.PYTEST, Framework.SCRIPT)
    findings = runtime_checks.check_results(main, expected, forged)
    vis, comp["visible_passed"], comp["visible_total"] = _fraction(main, expected)
    comp["visible_frac"] = vis
    frac = vis
    if len(results) > 1:
        hidden_expected = runtime_checks.expected_test_counts(verifier.hidden_tests, verifier.framework)
        findings += runtime_checks.check_results(results[1], hidden_expected, forged)
        hid, comp["hidden_passed"], comp["hidden_total"] = _fraction(results[1], hidden_expected)
        comp["hidden_frac"], comp["hidden_gap"] = hid, vis - hid
        # a timeout or missing result on a hidden input fails it; visible tests that all passed
        # (as reported, even when the merged run then hung) against no hidden pass is the signal
        shown = runtime_checks.count_results(main, expected).fraction if plan.merged else vis
        findings += runtime_checks.hidden_gap(shown, hid, results[1].status)
        frac = (vis + hid) / 2
    if main.status == ExecStatus.COMPILE_ERROR:
        comp["parses"] = 0.0
    crashed = _all_crashed(main)  # R5: a crash in every test is not a clean run
    comp["runs"] = 0.0 if main.status in _NOT_REACHED or not main.tests or crashed else 1.0
    comp["tests"] = frac if comp["runs"] else 0.0
    comp["all_passed"] = float(all(r.all_passed for r in results) and frac == 1.0)
    for f in findings:
        comp[f"flag_{f.flag}"] = float(f.metric)
    hacks = [f for f in findings if f.hacking]
    if hacks:
        return _hacking(comp, hacks, main.status)
    total_w = weights.parses + weights.runs + weights.tests
    score = (weights.parses * comp["parses"] + weights.runs * comp["runs"] + weights.tests * comp["tests"]) / total_w
    score -= _regression(comp, plan.baseline, main, weights)
    if plan.side_effect:
        comp["side_effect_penalty"] = weights.side_effect_penalty
        score -= weights.side_effect_penalty
    status = RewardStatus.OK if comp["all_passed"] else RewardStatus.RUNTIME_ERROR if crashed else \
        _STATUS.get(main.status, RewardStatus.FAILED)
    return RewardResult(score=score, components=comp, status=status, flags=tuple(dict.fromkeys(plan.flags)),
                        exec_status=main.status, detail=main.detail)


_ASSERTED = re.compile(r"^E\s+(assert\b|AssertionError)|^AssertionError|^TLFAIL"
                       r"|\b(?:org\.opentest4j\.)?Assertion\w*(?:Error|Failure)\b|\bComparisonFailure\b", re.MULTILINE)
_RAISED = re.compile(r"^E\s+[\w.]*(Error|Exception|Exit|Interrupt)\b|^Traceback|\b\w+(Error|Exception):", re.MULTILINE)


def _all_crashed(result: ExecResult) -> bool:
    """True when no test passed and every failure is an exception raised by the code under test
    (not an assertion): field case R5, so ``runs`` earns nothing and a wrong value ranks above."""
    bad = [t for t in result.tests if t.outcome in ("failed", "error")]
    if not bad or len(bad) != result.total:
        return False
    return all(t.outcome == "error" or (_RAISED.search(t.message) and not _ASSERTED.search(t.message)) for t in bad)


def _regression(comp: dict[str, float], baseline: ExecResult | None, now: ExecResult, weights: RewardConfig) -> float:
    """Penalty for tests that passed in ``baseline`` and do not pass now (missing = failing)."""
    if baseline is None or baseline.status.is_infrastructure:
        return 0.0
    before = {t.name for t in baseline.tests if t.outcome == "passed"}
    if not before:
        comp["regressions"] = 0.0
        return 0.0
    reached = now.status not in _NOT_REACHED
    after = {t.name for t in now.tests if t.outcome == "passed"} if reached else set()
    broken = len(before - after)
    comp["regressions"] = float(broken)
    penalty = weights.regression_penalty * broken / len(before)
    comp["regression_penalty"] = penalty
    return penalty
