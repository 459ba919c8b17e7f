"""The reward of a change task (:class:`~sdk.tasks.change.ChangeVerifier`): a diff, judged by tests.

Tiers (the weights of :class:`~sdk.rewards.config.RewardConfig`, reused so one config tunes
every task kind; normalised by ``parses + runs + tests``):

- ``applies`` (weight ``parses``): the diff, less its sections that edit test-side or CI/runner
  files, applies to the repository at the parent (:mod:`sdk.rewards.patch`);
- ``collects`` (weight ``runs``): every test module holding a fail-to-pass test collects and
  the run reached the tests;
- ``f2p_frac`` (weight ``tests``): the fraction of fail-to-pass tests that pass (every id
  counted once; a missing or duplicated result fails);
- minus ``regression_penalty`` x (pass-to-pass tests broken / pass-to-pass tests): each broken
  one costs ``regression_penalty / len(pass_to_pass)``, all broken cost ``regression_penalty``
  (the meaning the config field already has for repair-task baselines).

The result names the fail-to-pass tests still failing and the pass-to-pass tests broken
(``fail_to_pass_failing``, ``pass_to_pass_broken``): the report's change completion reads them
(:mod:`sdk.eval.change`).

Sections of the diff that edit test-side files (``edits_tests``) or CI / runner configuration
(``edits_ci``) are dropped before applying and flagged (component ``flag_<name>``, and in
``flags``); they never score. A diff with nothing else left earns nothing (status ``no_code``).

Sandbox runs per completion: the test modules holding fail-to-pass tests, then the modules
holding only pass-to-pass tests (each split further where two modules share a file name), so a
module the diff breaks at collection costs only the tests of its run. The harness's tampering flags force 0 (``suspected_hacking``), as for every task.

Verdicts out of the candidate's reach: the whole patched snapshot is the candidate (sandbox
framework ``pytest_repo``). The tests run in a process of their own (``_runner/tl_repo.py``, a
fresh ``python -I -S``: no ``sitecustomize``/``.pth``, no entry-point plugin of the repository),
and the harness re-derives every outcome from that process's nonce-tagged pipe
(``_runner/tl_repohost.py``): a pass needs the evidence that the genuine test function
(fingerprinted before any repository code ran) returned normally, written only by an audit hook
that alone holds the nonce and decides from the live interpreter stack (``_runner/tl_witness.py``),
never from a function object repository code can reach: patching pytest's runner, reports, hooks
or test functions, registering plugins, rewriting the closure cells, code or defaults of the
runner's own functions, ``os._exit``, forged lines, result files and ``atexit`` hooks earn nothing,
and a pass pytest reports without that evidence is flagged ``runner_tampering`` (score 0). Files
that load themselves (:data:`~sdk.tasks.change.LOADER_GLOBS`) are dropped and flagged ``edits_ci``
like CI files. Not covered (``tl_witness.py`` says it in full): the evidence proves a normal
return, not a pass (unittest ``subTest``; a test called with other fixture or parameter values, or
an item's node id rewritten, with pytest's reports forged too; ``pytest.raises`` or ``==`` made to
lie). The static scans
of :mod:`sdk.rewards.integrity` read every patched ``.py`` file, and a hacking finding its parent
version lacks (``import _pytest``, a ``pytest_*`` hook, ...) forces 0 (``suspected_hacking``)
before anything runs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from sdk.rewards.config import RewardConfig
from sdk.rewards.integrity import scan_solution
from sdk.rewards.patch import PatchError, apply_diff, extract_diff, split_diff
from sdk.rewards.result import RewardResult, RewardStatus
from sdk.sandbox.contract import ExecRequest, ExecResult, ExecStatus, Limits
from sdk.sandbox.languages.goguard import unguarded_go
from sdk.tasks.change import ChangeVerifier, exempt_sites, module_groups
from sdk.tasks.records import Task
from sdk.types import Framework, Language

_NOT_REACHED = (ExecStatus.COMPILE_ERROR, ExecStatus.RUNTIME_ERROR, ExecStatus.TIMEOUT,
                ExecStatus.MEMORY_LIMIT, ExecStatus.OUTPUT_LIMIT)
HACKING_FLAGS = ("exit_trick", "always_equal", "runner_tampering", "reads_tests")


@dataclass
class ChangePlan:
    """One change completion between preparation and scoring."""

    done: RewardResult | None = None
    requests: list[ExecRequest] = field(default_factory=list)
    components: dict[str, float] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)


def run_request(verifier: ChangeVerifier, files: dict[str, str], test_files: list[str],
                limits: Limits | None = None) -> ExecRequest:
    """The sandbox request that runs ``test_files`` (paths in ``verifier.tests``) against ``files``
    (a source snapshot) with the verifier's pristine support files; the candidate module is empty.
    pytest runs as ``pytest_repo``: the whole snapshot is the candidate (see the module docstring)."""
    base = (limits or Limits()).model_copy(update={"timeout_s": verifier.timeout_s})
    framework = Framework.PYTEST_REPO if verifier.framework == Framework.PYTEST else verifier.framework
    return ExecRequest(language=verifier.language, framework=framework, solution="",
                       tests={p: verifier.tests[p] for p in test_files}, files={**files, **verifier.support},
                       target_path=verifier.target_path, limits=base, requirements=verifier.requirements,
                       shadow_exempt=verifier.shadow_exempt)


def test_groups(verifier: ChangeVerifier) -> list[tuple[list[str], bool]]:
    """The runs of one completion: ``(test modules, holds fail-to-pass tests)``; modules holding
    fail-to-pass tests first, then those holding only pass-to-pass tests, each split so that no
    run has two modules of one file name (:func:`~sdk.tasks.change.module_groups`). Go: one run of
    every test file (the files of a package build together)."""
    if verifier.language == Language.GO:   # a Go package builds with all its test files: one run
        return [(sorted(verifier.tests), True)]
    f2p = sorted({t.split("::")[0] for t in verifier.fail_to_pass})
    p2p = sorted({t.split("::")[0] for t in verifier.pass_to_pass} - set(f2p))
    return [(g, True) for g in module_groups(f2p)] + [(g, False) for g in module_groups(p2p)]


def prepare(task: Task, completion: str, limits: Limits | None = None) -> ChangePlan:
    """Extract and apply the diff; the sandbox requests to run, or a final result without any."""
    verifier = task.verifier
    assert isinstance(verifier, ChangeVerifier)
    plan = ChangePlan()
    diff = extract_diff(completion)
    if diff is None:
        plan.done = RewardResult(score=0.0, status=RewardStatus.NO_CODE, components={"applies": 0.0},
                                 detail="no unified diff in the completion",
                                 fail_to_pass_failing=verifier.fail_to_pass)
        return plan
    kept = []
    for section in split_diff(diff):
        why = next((verifier.protected(p) for p in section.paths if verifier.protected(p)), None)
        if why:
            plan.flags.append(why)
            plan.components[f"flag_{why}"] = plan.components.get(f"flag_{why}", 0.0) + 1.0
        else:
            kept.append(section)
    plan.flags = list(dict.fromkeys(plan.flags))
    if not kept:
        plan.done = RewardResult(score=0.0, status=RewardStatus.NO_CODE, components={**plan.components, "applies": 0.0},
                                 flags=tuple(plan.flags), detail="the diff changes no source file (test-side and CI "
                                 "edits are ignored)", fail_to_pass_failing=verifier.fail_to_pass)
        return plan
    try:
        applied = apply_diff(verifier.files, kept)
    except PatchError as exc:
        plan.done = RewardResult(score=0.0, status=RewardStatus.COMPILE_ERROR,
                                 components={**plan.components, "applies": 0.0}, flags=tuple(plan.flags),
                                 detail=f"the diff does not apply: {exc}",
                                 fail_to_pass_failing=verifier.fail_to_pass)
        return plan
    plan.components.update(applies=1.0, files_changed=float(len(applied.changed) + len(applied.deleted)))
    hacks = tampering(verifier, applied.files)
    if hacks:
        plan.done = RewardResult(score=0.0, status=RewardStatus.SUSPECTED_HACKING, components=plan.components,
                                 flags=tuple(dict.fromkeys(plan.flags + [f for f, _ in hacks])),
                                 detail="the diff adds " + "; ".join(f"{p}: {h}" for _, (p, h) in hacks)[:500],
                                 fail_to_pass_failing=verifier.fail_to_pass)
        return plan
    for group, _ in test_groups(verifier):
        plan.requests.append(run_request(verifier, applied.files, group, limits))
    return plan


def tampering(verifier: ChangeVerifier, files: dict[str, str]) -> list[tuple[str, tuple[str, str]]]:
    """``(flag, (path, what))`` for each hacking finding of :func:`~sdk.rewards.integrity.scan_solution`
    in a patched ``.py`` file that the parent's version of the file does not already have (model code
    shares the test process with pytest, see the module docstring: a layer before the run's own).
    Go: ``runner_tampering`` for each changed file that could step out of Go's memory safety
    (:func:`~sdk.sandbox.languages.goguard.unguarded_go`: ``unsafe``, ``reflect``, ``syscall``,
    ``//go:linkname``, assembly...), which the verdict channel of ``go_repo`` rests on."""
    out = []
    for path, text in files.items():
        old = verifier.files.get(path)
        if text != old and verifier.language == Language.GO and unguarded_go(path, text):
            out.append(("runner_tampering", (path, unguarded_go(path, text) or "")))
        if not path.endswith(".py") or text == old:
            continue
        before = {(f.flag, h) for f in scan_solution(old or "", test_sources=verifier.tests) for h in f.detail.split("; ")}
        for f in scan_solution(text, test_sources=verifier.tests):
            out += [(f.flag, (path, h)) for h in f.detail.split("; ") if f.hacking and (f.flag, h) not in before]
    return out


def outcomes(result: ExecResult, ids: tuple[str, ...]) -> dict[str, bool]:
    """``id -> passed`` for ``ids``: passed exactly once in a run that reached its end; a missing,
    duplicated or other outcome is a failure."""
    if result.status in _NOT_REACHED:
        return {i: False for i in ids}
    seen = Counter(t.name for t in result.tests)
    passed = {t.name for t in result.tests if t.outcome == "passed"}
    return {i: i in passed and seen[i] == 1 for i in ids}


def finish(task: Task, plan: ChangePlan, results: list[ExecResult], weights: RewardConfig) -> RewardResult:
    """Score the runs of :func:`prepare`'s requests (see the module docstring)."""
    verifier = task.verifier
    assert isinstance(verifier, ChangeVerifier)
    infra = next((r for r in results if r.status.is_infrastructure), None)
    if infra is not None:
        return RewardResult.not_judged(RewardStatus.INFRASTRUCTURE, f"{infra.status.value}: {infra.detail}",
                                       exec_status=infra.status)
    comp, main = plan.components, results[0]
    hacks = [f for r in results for f in r.flags if f in HACKING_FLAGS]
    if hacks:
        return RewardResult(score=0.0, components=comp, status=RewardStatus.SUSPECTED_HACKING,
                            flags=tuple(dict.fromkeys(plan.flags + hacks)), exec_status=main.status,
                            detail="; ".join(dict.fromkeys(r.detail for r in results if r.detail and
                                                           set(r.flags) & set(HACKING_FLAGS))) or main.detail,
                            fail_to_pass_failing=verifier.fail_to_pass)
    f2p: dict[str, bool] = {}
    p2p: dict[str, bool] = {}
    collected = True
    for r, (group, has_f2p) in zip(results, test_groups(verifier)):
        mine = set(group)
        f2p.update(outcomes(r, tuple(t for t in verifier.fail_to_pass if t.split("::")[0] in mine)))
        p2p.update(outcomes(r, tuple(t for t in verifier.pass_to_pass if t.split("::")[0] in mine)))
        if has_f2p:
            collected = collected and r.status not in _NOT_REACHED and bool(r.tests) \
                and not r.detail.startswith("test collection failed")
            if verifier.language == Language.GO:   # other packages may run while the tests' package does not build
                collected = collected and set(verifier.fail_to_pass) <= {t.name for t in r.tests}
    comp["collects"] = 1.0 if collected else 0.0
    comp["f2p_total"], comp["f2p_passed"] = float(len(f2p)), float(sum(f2p.values()))
    comp["f2p_frac"] = comp["f2p_passed"] / comp["f2p_total"]
    broken = [t for t, ok in p2p.items() if not ok]
    comp["p2p_total"], comp["regressions"] = float(len(p2p)), float(len(broken))
    comp["regression_penalty"] = weights.regression_penalty * len(broken) / len(p2p) if p2p else 0.0
    comp["all_passed"] = float(comp["f2p_frac"] == 1.0 and not broken)
    total = weights.parses + weights.runs + weights.tests
    score = (weights.parses * comp["applies"] + weights.runs * comp["collects"] + weights.tests * comp["f2p_frac"]) / total
    score -= comp["regression_penalty"]
    status = RewardStatus.OK if comp["all_passed"] else RewardStatus.FAILED
    detail = f"{int(comp['f2p_passed'])}/{len(f2p)} fail-to-pass pass; {len(broken)}/{len(p2p)} pass-to-pass broken" \
        + (f" ({', '.join(broken[:3])})" if broken else "")
    return RewardResult(score=score, components=comp, status=status, flags=tuple(plan.flags),
                        exec_status=main.status, detail=detail,
                        fail_to_pass_failing=tuple(t for t, ok in f2p.items() if not ok),
                        pass_to_pass_broken=tuple(broken))


def calibrate(tasks: list[Task], results: list[RewardResult], rescore, rounds: int = 4) -> tuple[list[Task], list[RewardResult]]:
    """Tasks whose reference is flagged only by a shadow comparison (an honest ``__eq__`` over some
    fields, a value equal to an int: ``_runner/tl_shadow.py``) get that site in their verifier's
    ``shadow_exempt`` and are scored again (``rescore(tasks) -> results``), up to ``rounds`` times
    (every site the flags' details name: up to 8 per run and round); the others are kept as they are."""
    tasks, results = list(tasks), list(results)
    for _ in range(rounds):
        redo = {}
        for i, (task, res) in enumerate(zip(tasks, results)):
            sites = exempt_sites(res.detail) if set(res.flags) == {"always_equal"} else ()
            new = tuple(s for s in sites if s not in getattr(task.verifier, "shadow_exempt", sites))
            if new and isinstance(task.verifier, ChangeVerifier):
                redo[i] = task.with_(verifier=task.verifier.model_copy(   # with_: a new content-hash id
                    update={"shadow_exempt": (*task.verifier.shadow_exempt, *new)}))
        if not redo:
            break
        for i, res in zip(redo, rescore(list(redo.values()))):
            tasks[i], results[i] = redo[i], res
    return tasks, results
