"""Evaluation records: one :class:`EvalRow` per (task, model), and the aggregates built from them.

Rows keep the raw completions so a run can be rescored without generating again (a lesson of
the measured trial in shared/DESIGN.md). Every record is frozen; the math that fills the
aggregates lives in :mod:`sdk.eval.metrics`, the comparison in :mod:`sdk.eval.run`.

Counting rule used everywhere: a sample whose reward is ``None`` was *not judged* (an
infrastructure failure: sandbox error, unavailable toolchain, crashed scorer). It is neither a
pass nor a failure; it is left out of ``n`` and counted in :attr:`EvalRow.n_unjudged`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Literal

from pydantic import Field, model_validator

from sdk.errors import TuneloopError
from sdk.tasks.records import Split
from sdk.types import Frozen


DETAIL_CHARS = 1500  # scorer detail kept per sample (test output for the report and the retry prompt)


class EvalError(TuneloopError, ValueError):
    """Evaluation inputs are inconsistent (wrong counts from a callable, bad k, unpaired rows)."""


class EvalRow(Frozen):
    """The samples of one model on one task.

    Attributes:
        task_id: :attr:`sdk.tasks.records.Task.id`.
        domain: the task's domain, e.g. ``python/billing``.
        split: train, heldout or ood.
        model: label of the model, e.g. ``base`` or ``tuned`` (or a checkpoint name).
        completions: the raw completions, length ``n_samples``.
        rewards: score per completion in [0, 1]; ``None`` = not judged (infrastructure failure).
        passed: per completion: judged, status ok and full marks.
        statuses: per completion, the reward's status as a string (e.g. ``ok``, ``failed``,
            ``timeout``, ``sandbox_error``, ``score_error``).
        flags: per completion, the reward-hacking / integrity flags raised (may be empty).
        gen_tokens: tokens generated for this task, summed over the samples.
        components: per completion, the reward's named components (``parses``, ``hidden_gap``,
            ``regressions``, ...); empty when the scorer gives none. Side effects are read here.
        stop_reasons: per completion, why generation stopped: ``stop`` (the closing code fence),
            ``eos`` (end of sequence), ``length`` (``max_new_tokens``), or ``unknown``; empty in
            rows written before issue 15 (field case E1: recorded apart from correctness).
        details: per completion, the scorer's reason text (error, failing test output), cut to
            :data:`DETAIL_CHARS`; empty in rows written before issue 15.
        retry: after one retry with execution feedback (``eval.retry_with_feedback``): per
            completion, whether the sample passed on its first or its second attempt; empty when
            no retry was made.
        verifier_kind: the task's verifier kind (``unit_tests``, ``answer``, ``change`` ...); empty
            in rows written before issue 17.
        fail_to_pass_failing, pass_to_pass_broken: change tasks only (``verifier_kind == "change"``),
            per completion: the fail-to-pass tests still failing and the pass-to-pass tests broken
            (:class:`~sdk.rewards.result.RewardResult`); empty for other tasks.
    """

    task_id: str
    domain: str
    split: Split
    model: str
    completions: tuple[str, ...]
    rewards: tuple[float | None, ...]
    passed: tuple[bool, ...]
    statuses: tuple[str, ...]
    flags: tuple[tuple[str, ...], ...]
    gen_tokens: int = Field(0, ge=0)
    components: tuple[dict[str, float], ...] = ()
    stop_reasons: tuple[str, ...] = ()
    details: tuple[str, ...] = ()
    retry: tuple[bool, ...] = ()
    verifier_kind: str = ""
    fail_to_pass_failing: tuple[tuple[str, ...], ...] = ()
    pass_to_pass_broken: tuple[tuple[str, ...], ...] = ()

    @model_validator(mode="after")
    def _aligned(self) -> "EvalRow":
        n = len(self.completions)
        lengths = {"rewards": len(self.rewards), "passed": len(self.passed),
                   "statuses": len(self.statuses), "flags": len(self.flags)}
        for name in ("components", "stop_reasons", "details", "retry", "fail_to_pass_failing",
                     "pass_to_pass_broken"):
            if getattr(self, name):
                lengths[name] = len(getattr(self, name))
        bad = {k: v for k, v in lengths.items() if v != n}
        if bad:
            raise ValueError(f"EvalRow for task {self.task_id}: {n} completions but {bad}; "
                             "every per-sample field needs one entry per completion")
        for r, p in zip(self.rewards, self.passed):
            if p and r is None:
                raise ValueError(f"EvalRow for task {self.task_id}: a sample without a reward cannot pass")
        return self

    def __hash__(self) -> int:  # dict components are not hashable by default
        return hash((self.task_id, self.model, self.completions, self.rewards))

    @property
    def n(self) -> int:
        """Judged samples (reward not ``None``): the ``n`` of pass@k."""
        return sum(r is not None for r in self.rewards)

    @property
    def c(self) -> int:
        """Passing samples among the judged: the ``c`` of pass@k."""
        return sum(self.passed)

    @property
    def n_unjudged(self) -> int:
        """Samples that got no verdict (infrastructure failures)."""
        return len(self.rewards) - self.n

    @property
    def mean_reward(self) -> float | None:
        """Mean reward over judged samples, ``None`` when none was judged."""
        judged = [r for r in self.rewards if r is not None]
        return sum(judged) / len(judged) if judged else None

    @property
    def pass_rate(self) -> float | None:
        """``c / n``, or ``None`` when no sample was judged."""
        return self.c / self.n if self.n else None

    @property
    def retry_pass_rate(self) -> float | None:
        """Judged samples passing on the first attempt or after one retry with feedback, over
        judged samples; ``None`` when no retry was recorded or nothing was judged."""
        if not self.retry or not self.n:
            return None
        return sum(ok for r, ok in zip(self.rewards, self.retry) if r is not None) / self.n


class Estimate(Frozen):
    """A point estimate with a percentile bootstrap interval.

    Attributes:
        value: the mean over tasks (a rate in [0, 1], or a difference in [-1, 1]).
        low, high: interval bounds at ``confidence``.
        n: number of tasks it is computed from.
        confidence: e.g. 0.95.
        method: ``percentile`` (bootstrap) or ``wilson`` (used when every task has the same
            value and the bootstrap would collapse to a point; see :mod:`sdk.eval.metrics`).
    """

    value: float
    low: float
    high: float
    n: int
    confidence: float = 0.95
    method: Literal["percentile", "wilson"] = "percentile"


class SliceComparison(Frozen):
    """Base vs tuned on one slice (a split, a domain, or ``all``), keyed by k of pass@k.

    ``delta[k]`` is tuned minus base over the same tasks, with a paired bootstrap interval.
    ``n_tasks`` counts the paired tasks of the slice; a k is missing when no task had k judged
    samples for both models. ``mean_reward`` (keys ``base``, ``tuned``, ``delta``) is the mean
    judged reward per task, averaged over tasks: partial credit (tests passed, steps completed)
    that pass@k hides; empty when no task was judged on both sides.
    """

    name: str
    n_tasks: int
    base: dict[int, Estimate]
    tuned: dict[int, Estimate]
    delta: dict[int, Estimate]
    mean_reward: dict[str, Estimate] = Field(default_factory=dict)


Outcome = Literal["regression", "gain", "both", "neither", "unjudged"]


class TaskDiff(Frozen):
    """One task, base vs tuned.

    ``outcome``: ``regression`` (base solved, tuned did not), ``gain`` (the reverse), ``both``,
    ``neither``, or ``unjudged`` (one side had no judged sample). A model *solves* a task when
    its judged pass rate is at least the comparison's ``solve_threshold`` (0.5 by default; with
    one greedy sample this is simply "passed").
    """

    task_id: str
    domain: str
    split: Split
    base_pass_rate: float | None
    tuned_pass_rate: float | None
    outcome: Outcome


class Comparison(Frozen):
    """Everything :func:`sdk.eval.run.compare` finds.

    Attributes:
        n_samples: samples per task (the smallest over all rows).
        ks: the k of pass@k reported (1 and ``n_samples`` when it is above 1).
        by_split: ``split -> SliceComparison``.
        by_domain: ``domain -> SliceComparison``.
        overall: the slice of every paired task.
        diffs: one :class:`TaskDiff` per paired task, sorted by split, domain, id.
        unpaired: task ids evaluated for only one of the two models.
        solve_threshold: see :class:`TaskDiff`.
    """

    n_samples: int
    ks: tuple[int, ...]
    by_split: dict[str, SliceComparison]
    by_domain: dict[str, SliceComparison]
    overall: SliceComparison
    diffs: tuple[TaskDiff, ...]
    unpaired: tuple[str, ...] = ()
    solve_threshold: float = 0.5

    def outcome_counts(self, splits: Iterable[str] | None = None) -> dict[str, int]:
        """``{outcome: n}`` over the diffs, optionally only those in ``splits``."""
        keep = None if splits is None else {str(Split(s).value) for s in splits}
        out = {k: 0 for k in ("regression", "gain", "both", "neither", "unjudged")}
        for d in self.diffs:
            if keep is None or d.split.value in keep:
                out[d.outcome] += 1
        return out

    def regressions(self, splits: Iterable[str] | None = None) -> list[TaskDiff]:
        """Tasks the base solved and the tuned model does not (optionally only in ``splits``)."""
        keep = None if splits is None else {str(Split(s).value) for s in splits}
        return [d for d in self.diffs if d.outcome == "regression" and (keep is None or d.split.value in keep)]


def save_rows(path: str | Path, rows: Iterable[EvalRow]) -> Path:
    """Write rows as JSONL (one row per line, raw completions included); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row.model_dump(mode="json"), ensure_ascii=False) + "\n")
    return path


def load_rows(path: str | Path) -> list[EvalRow]:
    """Read rows written by :func:`save_rows`.

    Raises:
        EvalError: the file is missing or a line is not a valid row (the line number is named).
    """
    from sdk.jsonl import read_models

    return read_models(path, EvalRow, EvalError, "regenerate the file with sdk.eval.records.save_rows "
                       "(a previous evaluation writes it)")
