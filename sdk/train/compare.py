"""The schedule comparison (``rl.compare``): a second GRPO arm and the held-out probes of both arms.

The ``rl`` stage trains the configured arm; with ``rl.compare.enabled`` the ``rl_compare`` stage
trains a second arm from the same SFT adapter, seed, ``max_steps`` and GRPO settings, differing only
in ``rl.compare.order`` and ``rl.compare.difficulty`` (:func:`arm_config`). Both arms carry a
:class:`~sdk.train.monitor.HeldoutMonitor` on the same probe tasks (the first
``rl.heldout.per_domain`` held-out tasks of each domain) every :func:`probe_every` steps, plus the
last step; each probe is the mean greedy reward per domain, and :class:`ProbeScores` keeps every
probe task's own score so the report can pair the arms task by task. Each arm writes
``<stage>/heldout_curve.json`` (:func:`arm_record`); :mod:`sdk.eval.schedule` compares them.

Choices, and why: the plain arm is never trained twice (its curve comes from the ``rl`` stage's own
monitor, which therefore runs whenever the comparison is on); the monitor's rollback applies to
both arms only when the user asked for it (``rl.heldout.every`` > 0), otherwise both are only
observed (``threshold=inf``), so turning the comparison on does not change what the main arm
trains. Probes are greedy on a few tasks: a small-sample measurement, which the verdict states.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sdk.train.config import CompareConfig, RlConfig

CURVE_FILE = "heldout_curve.json"
DEFAULT_EVERY = 4


def probe_every(rc: RlConfig) -> int:
    """Steps between held-out probes of both arms: ``rl.compare.every``, else ``rl.heldout.every``
    when > 0, else 4 (:data:`DEFAULT_EVERY`)."""
    return rc.compare.every or rc.heldout.every or DEFAULT_EVERY


def monitor_settings(rc: RlConfig) -> tuple[int, float, bool] | None:
    """``(every, threshold, final)`` for an arm's :class:`~sdk.train.monitor.HeldoutMonitor`, or
    None when neither ``rl.heldout.every`` nor ``rl.compare`` asks for probes.

    With the comparison on: the shared interval, rollback only if ``rl.heldout.every`` > 0
    (else ``inf``: observe only), and a final probe at the last step.
    """
    if rc.enabled and rc.compare.enabled:
        return probe_every(rc), (rc.heldout.max_drop if rc.heldout.every else math.inf), True
    if rc.heldout.every:
        return rc.heldout.every, rc.heldout.max_drop, False
    return None


def arm_config(rc: RlConfig) -> RlConfig:
    """The comparison arm's GRPO config: ``rc`` with ``order`` and ``difficulty`` from
    ``rc.compare`` (everything else equal), and no comparison of its own."""
    return rc.model_copy(update={"order": rc.compare.order, "difficulty": rc.compare.difficulty,
                                 "compare": CompareConfig()})


def arm_label(rc: RlConfig) -> str:
    """A short human name of an arm's schedule, e.g. ``plain`` or ``easy_to_hard + difficulty filter``."""
    parts = []
    if rc.order.curriculum != "none":
        parts.append(f"{rc.order.curriculum} curriculum")
    if rc.order.mixing != "none":
        parts.append(f"{rc.order.mixing} mixing")
    if rc.difficulty.enabled:
        parts.append("difficulty filter")
    return " + ".join(parts) or "plain"


def arm_settings(rc: RlConfig, difficulty: dict | None, order_summary: dict | None, train_tasks: int) -> dict:
    """What distinguishes an arm, for the report: order, difficulty filter counts, the schedule's
    mean pass rate per quarter (``order_summary`` from :func:`sdk.train.curriculum.order_summary`)."""
    diff: dict[str, Any] = {"enabled": rc.difficulty.enabled}
    if rc.difficulty.enabled:
        d = difficulty or {}
        diff.update(k=rc.difficulty.k, max_tasks=rc.difficulty.max_tasks, measured=d.get("measured"),
                    kept=d.get("kept"), dropped=d.get("dropped"), not_sampled=d.get("not_sampled"),
                    dropped_by_reason=d.get("dropped_by_reason", {}))
    return {"curriculum": rc.order.curriculum, "phases": rc.order.phases, "mixing": rc.order.mixing,
            "difficulty": diff, "train_tasks": train_tasks, "schedule": order_summary or {}}


class ProbeScores:
    """A score function wrapper that keeps each call's per-task scores (one call per probe).

    Args:
        score: ``(tasks, completions) -> results with .score`` (e.g. ``sdk.rewards.tiered.score_batch``
            bound to a sandbox).
    Attributes:
        calls: per call, ``{task_id: score or None}`` (None: the sandbox could not judge it).
    """

    def __init__(self, score: Callable[[list, list[str]], list]) -> None:
        self.score = score
        self.calls: list[dict[str, float | None]] = []

    def __call__(self, tasks: list, completions: list[str]) -> list:
        """Score and remember the per-task scores."""
        results = self.score(tasks, completions)
        self.calls.append({t.id: r.score for t, r in zip(tasks, results)})
        return results


@dataclass
class Probe:
    """An arm's held-out monitor with its probe tasks and per-task scores.

    Attributes:
        monitor: the trainer callback.
        tasks: the probe tasks (fixed, the same for both arms).
        scores: the per-task score log, aligned with ``monitor.history``.
        every: steps between probes.
        max_new_tokens: tokens per greedy probe completion.
    """

    monitor: Any
    tasks: list
    scores: ProbeScores
    every: int
    max_new_tokens: int


def make_probe(rc: RlConfig, tasks: Sequence, score: Callable[[list, list[str]], list]) -> Probe | None:
    """A :class:`Probe` per :func:`monitor_settings`, or None when probes are off or ``tasks`` is empty."""
    from sdk.train.monitor import HeldoutMonitor, heldout_eval_fn

    settings = monitor_settings(rc)
    if settings is None or not tasks:
        return None
    every, threshold, final = settings
    scores = ProbeScores(score)
    monitor = HeldoutMonitor(heldout_eval_fn(list(tasks), scores, rc.heldout.max_new_tokens), every, threshold,
                             final=final)
    return Probe(monitor, list(tasks), scores, every, rc.heldout.max_new_tokens)


def arm_record(stage: str, label: str, settings: dict, probe: Probe, steps_trained: int, max_steps: int) -> dict:
    """The contents of ``<stage>/heldout_curve.json``: the arm's settings and every probe with its
    step, overall mean (over judged probe tasks), per-domain means and per-task scores."""
    per_domain: dict[str, int] = {}
    for t in probe.tasks:
        per_domain[t.domain] = per_domain.get(t.domain, 0) + 1
    evaluations = []
    for i, h in enumerate(probe.monitor.history):
        tasks = probe.scores.calls[i] if i < len(probe.scores.calls) else {}
        judged = [s for s in tasks.values() if s is not None]
        evaluations.append({"step": h["step"], "overall": sum(judged) / len(judged) if judged else None,
                            "by_domain": dict(sorted(h["scores"].items())), "tasks": tasks})
    rolled = probe.monitor.rolled_back_to
    return {"stage": stage, "label": label, "settings": settings, "every": probe.every,
            "probe": {"tasks": [t.id for t in probe.tasks], "per_domain": per_domain,
                      "max_new_tokens": probe.max_new_tokens},
            "evaluations": evaluations, "steps_trained": steps_trained, "max_steps": max_steps,
            "rolled_back_to": rolled, "stopped_at": evaluations[-1]["step"] if rolled is not None and evaluations
            else None, "regressed": probe.monitor.regressed}


def skipped_record(stage: str, label: str, reason: str) -> dict:
    """``heldout_curve.json`` of an arm that did not train, with the reason."""
    return {"stage": stage, "label": label, "skipped": reason, "evaluations": []}
