"""Rewards for tool tasks: the final answer's verifier plus process checks, as one TRL reward.

Components (each in [0, 1]; the score is their weighted mean over the components that apply,
weights from :class:`sdk.rollout.config.ToolRewardConfig`):

* ``answer``: the task's :class:`~sdk.tasks.records.AnswerVerifier` on the rollout's final
  assistant message (:func:`sdk.rewards.answers.score_answer`); a rollout that ends on a tool
  call or is cut off has no final answer and scores 0 here;
* ``right_tool``: share of the task's ``metadata["expected_tools"]`` that were called with valid
  arguments (skipped when the task names none);
* ``valid_args``: share of calls that were valid (name known, arguments normalised and matching
  the schema); skipped when no call was made and none was expected;
* ``no_waste``: 1 when no identical call was repeated and the number of calls is at most
  expected + ``spare_calls``, else ``needed / calls``.

A rollout without a trace or with an unreadable task is *not judged* (``None``), never 0
(field case R1). The class is a plain picklable callable (TRL's reward contract).
Process rewards in the spirit of "process supervision" (Lightman et al., 2023), kept to checks a
program can verify.
"""

from __future__ import annotations

import json
from typing import Any

from sdk.rollout.config import ToolRewardConfig
from sdk.tasks.records import AnswerVerifier, Task


def tool_components(task: Task, trace: dict[str, Any], spare_calls: int = 1) -> dict[str, float]:
    """The components that apply to one rollout (see module docstring)."""
    from sdk.rewards.answers import score_answer

    out: dict[str, float] = {}
    calls = trace.get("calls", [])
    if isinstance(task.verifier, AnswerVerifier):
        out["answer"] = float(score_answer(task.verifier, trace.get("final", "")).score or 0.0)
    expected = list(task.metadata.get("expected_tools", []))
    if expected:
        used = {c["name"] for c in calls if c.get("valid")}
        out["right_tool"] = sum(name in used for name in expected) / len(expected)
    if calls or expected:
        out["valid_args"] = sum(bool(c.get("valid")) for c in calls) / len(calls) if calls else 0.0
    if calls:
        keys = [json.dumps([c["name"], c.get("arguments")], sort_keys=True) for c in calls]
        needed = max(len(expected), 1)
        wasted = len(keys) != len(set(keys)) or len(calls) > needed + spare_calls
        out["no_waste"] = min(1.0, needed / len(calls)) if wasted else 1.0
    return out


class ToolTaskReward:
    """TRL reward ``(prompts, completions, tool_trace=[json...], task_json=[json...], **kw) -> [float | None]``.

    Args:
        weights: component weights.
    Logs each component's batch mean through TRL's ``log_metric`` as ``tools/<component>``.
    """

    __name__ = "tool_task_reward"

    def __init__(self, weights: ToolRewardConfig | None = None) -> None:
        self.weights = weights or ToolRewardConfig()

    def score(self, task: Task, trace: dict[str, Any]) -> tuple[float | None, dict[str, float]]:
        """``(score, components)`` for one rollout; score None when no weighted component applies."""
        comps = tool_components(task, trace, self.weights.spare_calls)
        w = self.weights.model_dump()
        total = sum(w[k] for k in comps)
        if total <= 0:
            return None, comps
        return sum(w[k] * v for k, v in comps.items()) / total, comps

    def __call__(self, prompts: list[Any], completions: list[Any], tool_trace: list[str] | None = None,
                 task_json: list[str] | None = None, **kwargs: Any) -> list[float | None]:
        n = len(completions)
        traces, tasks = tool_trace or [None] * n, task_json or [None] * n
        scores: list[float | None] = []
        sums: dict[str, list[float]] = {}
        for trace_s, task_s in zip(traces, tasks):
            try:
                task, trace = Task.model_validate_json(task_s), json.loads(trace_s)
            except Exception:  # noqa: BLE001 - a missing/bad row is not judged, never 0
                scores.append(None)
                continue
            value, comps = self.score(task, trace)
            scores.append(value)
            for k, v in comps.items():
                sums.setdefault(k, []).append(v)
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            for k, vals in sums.items():
                log_metric(f"tools/{k}", sum(vals) / len(vals))
        return scores
