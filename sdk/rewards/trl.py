"""The sandboxed reward as a TRL ``GRPOTrainer`` reward function.

:class:`SandboxReward` is a plain picklable callable (TRL's ``trl/rewards`` shape): pass it in
``reward_funcs``. TRL calls it with ``prompts``, ``completions``, ``completion_ids`` and every
dataset column as a keyword list; our dataset (``TaskSet.to_dataset``) carries ``task_json``,
the full :class:`~sdk.tasks.records.Task`. All sandbox requests of a call (a whole GRPO group,
visible and hidden tests) go to one ``sandbox.run`` so they execute concurrently.

What TRL 1.16 does with ``None`` (read in ``trl/trainer/grpo_trainer.py``):
``_calculate_rewards`` turns each ``None`` into NaN in ``rewards_per_func``; a row where *every*
reward function returned ``None`` is logged with a warning ("All reward functions returned
None..."). In ``_generate_and_score_completions`` such a row is *unscorable*: its weighted
reward (``nansum``) is set back to NaN, it is left out of the group's ``nanmean``/``nanstd``
baseline, and ``nan_to_num`` sets its advantage to 0, so it does not move the policy; it is also
excluded from the logged reward mean. A sample only *some* functions judged gets the
``nansum`` of the others. So ``None`` here (infrastructure failure, a task with no verifier, an
exception while scoring) masks the sample instead of teaching the model that it failed (R1, R2).
TRL does *not* catch exceptions raised by a reward function (the step fails), which is why
``__call__`` contains every per-sample error and never raises for one bad sample.

Every :class:`~sdk.rewards.result.RewardResult` is appended to a JSONL log (one line per sample:
step, task id, score, status, components, flags, completion) for the report's per-checkpoint
hacking flags; the fraction of samples per hacking flag (``hacking/<flag>``, ``hacking/any``) and
of unjudged samples (``reward/unjudged_frac``) go to TRL's ``log_metric`` on every call.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdk.rewards.config import RewardConfig
from sdk.rewards.extract import extract_code
from sdk.rewards.integrity import HACKING_FLAGS
from sdk.rewards.result import RewardResult, RewardStatus
from sdk.rewards.tiered import build_request, run_with_retries, score_batch
from sdk.sandbox.config import SandboxConfig
from sdk.sandbox.contract import ExecRequest, ExecResult, Sandbox
from sdk.tasks.records import Task, UnitTestVerifier

log = logging.getLogger(__name__)


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string, or chat messages (the assistant turns joined).

    Content given as a list of parts (``[{"type": "text", "text": ...}]``) is flattened.
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    parts: list[str] = []
    for msg in completion or []:
        if not isinstance(msg, dict) or msg.get("role", "assistant") != "assistant":
            continue
        content = msg.get("content") or ""
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(str(content))
    return "\n".join(parts)


class _Lazy(Sandbox):
    """Reaches the reward's sandbox (:attr:`SandboxReward.sandbox`) only when a request needs it,
    so a batch of answer-checked tasks never builds one. A sandbox that cannot be built raises
    out of :meth:`run` and :meth:`run_one`; :func:`~sdk.rewards.tiered.run_with_retries` turns
    that into a ``SANDBOX_ERROR`` result per request, i.e. not-judged (masked) samples, not a crash."""

    def __init__(self, owner: SandboxReward) -> None:
        self.owner = owner

    def run_one(self, request: ExecRequest) -> ExecResult:
        """Run one request on the reward's sandbox (built on first use)."""
        return self.owner.sandbox.run_one(request)

    def run(self, requests: list[ExecRequest]) -> list[ExecResult]:
        """Run ``requests`` as one batch on the reward's sandbox (built on first use); an empty
        batch returns ``[]`` without touching the sandbox."""
        return self.owner.sandbox.run(requests) if requests else []


class SandboxReward:
    """TRL reward function: run each completion's code against its task's tests in the sandbox.

    Which sandbox scores: ``sandbox`` when given (the run's own, shared with probes and the
    difficulty filter, so one set of slots serves the whole run); it is used in this process
    and never closed here (its owner closes it). A pickled copy (a TRL or Ray worker process)
    carries only ``sandbox_config`` and ``sandbox_factory``, never a live sandbox, and builds
    its own on first use. Without ``sandbox``, this process builds one lazily the same way.

    Args:
        weights: tier weights (``RunConfig.reward``).
        sandbox_config: how to build a sandbox (``RunConfig.sandbox``) where none is given or
            after unpickling; used by the default factory.
        log_path: JSONL file that every scored sample is appended to (created with its folder);
            ``None`` logs nothing.
        sandbox_factory: a picklable zero-argument callable building the sandbox (default:
            ``sdk.sandbox.make_sandbox(sandbox_config)``); called lazily on first use, in the
            process that scores, only when no ``sandbox`` is at hand.
        retries: re-runs of infrastructure failures before ``None``.
        judge: optional picklable reward model / LLM judge ``(task, completion) -> float | None``
            for reference-only tasks (logged as ``judged_unverified``, flag ``not_verifiable``).
        reference_baseline: run each unit-test task's ``reference`` once (cached by task id) and
            use it as the regression baseline: tests the reference passes that a completion
            breaks cost ``regression_penalty``.
        sandbox: an existing sandbox to score with in this process (see above).
        self_test: before the first call scores anything (in each process), :meth:`self_test`
            scores known-correct samples of the batch's kinds through the same path; a broken
            path raises ``RewardError`` and stops the run instead of scoring every sample 0
            or ``None`` (W1).
    Call:
        ``reward(prompts, completions, completion_ids=None, task_json=[...], trainer_state=..., log_metric=...)``
        -> B floats or ``None`` (not judged). Raises only ``RewardError`` for a missing ``task_json``
        column (a wiring error, not a sample's fault).
    """

    __name__ = "sandbox_reward"  # TRL names the reward column after it

    def __init__(self, weights: RewardConfig | None = None, sandbox_config: SandboxConfig | None = None,
                 log_path: str | Path | None = None, sandbox_factory: Callable[[], Sandbox] | None = None,
                 retries: int = 1, judge: Callable[[Task, str], float | None] | None = None,
                 reference_baseline: bool = True, sandbox: Sandbox | None = None, self_test: bool = True) -> None:
        self.weights = weights or RewardConfig()
        self.sandbox_config = sandbox_config or SandboxConfig()
        self.log_path = Path(log_path) if log_path is not None else None
        self.sandbox_factory = sandbox_factory
        self.retries = retries
        self.judge = judge
        self.reference_baseline = reference_baseline
        self._baselines: dict[str, ExecResult | None] = {}
        self.calls = 0
        self._sandbox: Sandbox | None = sandbox
        self._owns_sandbox = sandbox is None  # a given sandbox belongs to the caller
        self._lock = threading.Lock()
        self.check_at_start = self_test
        self._tested: set[str] = set()  # verifier kinds already self-tested in this process

    # ----- pickling: no live sandbox or lock crosses a process boundary ------------------
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_sandbox"] = None
        state["_owns_sandbox"] = True  # the copy builds (and owns) its own from the config
        state["_lock"] = None
        state["_tested"] = set()  # a copy self-tests again, in its own process
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def sandbox(self) -> Sandbox:
        """The given sandbox, or the one built from the factory/config on first use."""
        if self._sandbox is None:
            self._owns_sandbox = True
            if self.sandbox_factory is not None:
                self._sandbox = self.sandbox_factory()
            else:
                from sdk.sandbox import make_sandbox

                self._sandbox = make_sandbox(self.sandbox_config)
        return self._sandbox

    def close(self) -> None:
        """Release the sandbox this reward built (a new one is built if it scores again); a
        sandbox given to the constructor is left open and kept (its owner closes it)."""
        if self._sandbox is not None and self._owns_sandbox:
            self._sandbox.close()
            self._sandbox = None

    def __call__(self, prompts: list[Any], completions: list[Any], completion_ids: Any = None,
                 **kwargs: Any) -> list[float | None]:
        results, ids = self._score(completions, kwargs)
        self._report(results, ids, completions, kwargs)
        return [r.score for r in results]

    def score(self, completions: list[Any], **kwargs: Any) -> list[RewardResult]:
        """The full :class:`RewardResult` per completion (what ``__call__`` reduces to scores)."""
        return self._score(completions, kwargs)[0]

    def _score(self, completions: list[Any], kwargs: dict[str, Any]) -> tuple[list[RewardResult], list[str | None]]:
        from sdk.errors import RewardError

        raw = kwargs.get("task_json")
        if raw is None or len(raw) != len(completions):
            raise RewardError("the reward function needs a `task_json` column with one task per completion",
                              "build the GRPO dataset with TaskSet.to_dataset() (it adds `task_json`)")
        results: list[RewardResult | None] = [None] * len(completions)
        tasks, texts, index = [], [], []
        ids: list[str | None] = [None] * len(completions)
        for i, (row, comp) in enumerate(zip(raw, completions)):
            try:
                task = row if isinstance(row, Task) else Task.model_validate_json(row)
                tasks.append(task)
                ids[i] = task.id
                texts.append(completion_text(comp))
                index.append(i)
            except Exception as exc:  # noqa: BLE001 - a bad row costs one sample
                results[i] = RewardResult.not_judged(RewardStatus.ERROR, f"bad task_json: {type(exc).__name__}: {exc}")
        if self.check_at_start:
            self.self_test({"answer" if t.verifier.kind == "reference" else t.verifier.kind for t in tasks})
        try:
            baselines = self._reference_baselines(tasks) if self.reference_baseline else None
            scored = score_batch(tasks, texts, _Lazy(self), self.weights, baselines=baselines, retries=self.retries,
                                 judge=self.judge)
        except RewardError:
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. the sandbox cannot start: nothing judged
            log.warning("sandbox reward failed for the whole batch: %s", exc)
            scored = [RewardResult.not_judged(RewardStatus.INFRASTRUCTURE, f"{type(exc).__name__}: {exc}")] * len(tasks)
        for i, res in zip(index, scored):
            results[i] = res
        return [r for r in results if r is not None], ids

    def self_test(self, kinds: set[str] | None = None) -> None:
        """Score known-correct samples through :func:`~sdk.rewards.tiered.score_batch` with this
        reward's sandbox, weights and verifier workers (the exact path of ``__call__``): an
        answer task (verifier workers; judges run in the same workers) for kind ``answer``, a
        Python pytest task (the sandbox) for ``unit_tests``; each kind once per process.

        Raises:
            RewardError: a sample did not score full marks; the message names the path, its
                status and detail, and the fix.
        """
        from sdk.errors import RewardError

        todo = sorted((kinds if kinds is not None else set(_KNOWN_GOOD)) & set(_KNOWN_GOOD) - self._tested)
        if not todo:
            return
        samples = [_KNOWN_GOOD[k]() for k in todo]
        got = score_batch([t for t, _ in samples], [c for _, c in samples], _Lazy(self), self.weights,
                          retries=self.retries, judge=self.judge)
        for kind, res in zip(todo, got):
            if res.score is None or res.score < 1.0 - 1e-9:
                raise RewardError(f"reward self-test failed: a known-correct {kind} sample scored {res.score} "
                                  f"({res.status.value}: {res.detail[:300]})", _FIXES[kind])
            self._tested.add(kind)

    def _reference_baselines(self, tasks: list[Task]) -> list[ExecResult | None]:
        """Baseline runs of the tasks' references (one batch for the ones not cached yet)."""
        todo = {t.id: t for t in tasks if t.id not in self._baselines}
        runnable = {i: t for i, t in todo.items() if isinstance(t.verifier, UnitTestVerifier) and t.reference}
        requests = []
        for task in runnable.values():
            code = extract_code(task.reference or "", task.verifier.entry_point, task.verifier.language).code
            requests.append(build_request(task.verifier, code or task.reference or ""))
        for task_id, result in zip(runnable, run_with_retries(_Lazy(self), requests, self.retries)):
            if not result.status.is_infrastructure:  # an infrastructure failure is retried next call
                self._baselines[task_id] = result
        for task_id in todo.keys() - runnable.keys():
            self._baselines[task_id] = None
        return [self._baselines.get(t.id) for t in tasks]

    def _report(self, results: list[RewardResult], ids: list[str | None], completions: list[Any], kwargs: dict[str, Any]) -> None:
        state = kwargs.get("trainer_state")
        step = getattr(state, "global_step", None)
        with self._lock:
            self.calls += 1
            call = self.calls
        counts: dict[str, int] = {}
        for r in results:
            for flag in r.flags if r.status == RewardStatus.SUSPECTED_HACKING else ():
                counts[flag] = counts.get(flag, 0) + 1
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):  # every flag every call, so TRL's per-step means are not biased
            n = max(len(results), 1)
            for flag in sorted(HACKING_FLAGS):
                log_metric(f"hacking/{flag}", counts.get(flag, 0) / n)
            log_metric("hacking/any", sum(r.status == RewardStatus.SUSPECTED_HACKING for r in results) / n)
            log_metric("reward/unjudged_frac", sum(r.score is None for r in results) / n)
        if self.log_path is None:
            return
        lines = []
        for i, (r, comp) in enumerate(zip(results, completions)):
            lines.append(json.dumps({
                "time": time.time(), "step": step, "call": call, "task_id": ids[i],
                "score": r.score, "status": r.status.value, "components": r.components, "flags": list(r.flags),
                "exec_status": r.exec_status.value if r.exec_status else None, "detail": r.detail[:500],
                "completion": completion_text(comp),
            }, ensure_ascii=False))
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, self.log_path.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


def _answer_sample() -> tuple[Task, str]:
    from sdk.tasks.records import AnswerVerifier, Message, Source

    task = Task(domain="selftest/answer", source=Source(connector="selftest"), verifier=AnswerVerifier(expected="4"),
                prompt=(Message(role="user", content="What is 2 + 2? Reply as <answer>4</answer>."),))
    return task, "<answer>4</answer>"


def _unit_sample() -> tuple[Task, str]:
    from sdk.tasks.records import Message, Source

    tests = {"test_selftest.py": "from solution import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"}
    task = Task(domain="selftest/python", source=Source(connector="selftest"),
                verifier=UnitTestVerifier(tests=tests, entry_point="add", timeout_s=30.0),
                prompt=(Message(role="user", content="Write `add(a, b)`."),))
    return task, "```python\ndef add(a, b):\n    return a + b\n```"


_KNOWN_GOOD = {"answer": _answer_sample, "unit_tests": _unit_sample}
_FIXES = {"answer": "answer checks run in verifier worker processes (`python -m sdk.rewards._verifier_worker`): "
                    "check that it starts here, and that reward.answer_* options still read `<answer>4</answer>`",
          "unit_tests": "the sandbox did not pass a correct solution: check `sandbox.backend` (is bubblewrap "
                        "usable here?) or set `sandbox.allow_unisolated` for the process backend, then re-run"}
