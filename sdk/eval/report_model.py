"""The :class:`EvalReport` record: what ``report.json`` holds, as one frozen, typed value.

``report.to_json()`` (the same as ``report.model_dump(mode="json")``) is exactly the document
written to ``report.json``, key for key and in the same order; :meth:`EvalReport.model_validate`
reads one back. The slices (``summary``, ``overall``, ``by_split``, ``by_domain``) are
:class:`~sdk.eval.records.SliceComparison` records and ``gate`` a
:class:`~sdk.eval.gate.GateResult`; the sections only rendered (diff, tasks, training curves,
flags, side effects, cost, cost-benefit, schedule comparison) stay JSON mappings, documented at
:func:`sdk.eval.report.build_report`. Consumers read through the accessors (:meth:`pass_at`,
:attr:`promotable`, :attr:`gate_verdict` ...) rather than digging with string keys.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_serializer

from sdk.eval.gate import GateResult
from sdk.eval.records import Estimate, SliceComparison
from sdk.types import Frozen

SCHEMA = "tuneloop.report/1"
Side = Literal["base", "tuned", "delta"]


class EvalReport(Frozen):
    """One run's report (see the module docstring); built by :func:`sdk.eval.report.build_report`.

    Attributes:
        schema_: always ``tuneloop.report/1`` (``schema`` in JSON).
        created: ISO-8601 UTC time the report was built, seconds.
        meta: run facts for the header (run dir, model, task-set version, config ...).
        summary: the held-out and OOD slices (those present).
        overall: the slice of every paired task.
        n_samples: samples per task; ks: the k of pass@k reported.
        by_split, by_domain: ``name -> SliceComparison``.
        diff: per-task outcome counts (``counts``, ``gated_counts``), ``solve_threshold``, and the
            ``regressions``, ``gains``, ``unjudged`` task diffs and ``unpaired`` ids.
        gate: the gate verdict (None: no gate was applied).
        tasks: task counts ``by_split``, ``totals``, ``quarantined`` (reason -> n), ``quarantined_total``,
            and (runs since issue 13) ``strength``: verifier strength per source.
        training: ``{stage: {metric: [[step, value], ...]}}``.
        schedule_comparison: two GRPO arms side by side, or None.
        flags: reward-hacking flags per checkpoint in run order, ``{label: {flag: samples}}``.
        side_effects: reward components per model label, ``{label: {component: stats}}``.
        cost: ``stages`` (one dict per stage) and ``totals`` (wall/CPU/GPU seconds, tokens).
        cost_benefit: ``points``, ``segments``, ``falloff_at``, ``recommendation`` (and, since
            issue 15, ``knee``: the last point before returns fall off, with a sentence).
        rl_vs_sft: SFT+RL against the SFT-only checkpoint on held-out pass@1, paired interval and
            verdict (:func:`sdk.eval.checkpoints.rl_vs_sft`); None when no SFT checkpoint was evaluated.
        honesty: flagged gains, all-zero baseline, stop reasons, grader self-test, validation split
            (:func:`sdk.eval.checkpoints.honesty_section`); empty in older reports.
        retry: pass@1 after one retry with execution feedback (:func:`sdk.eval.checkpoints.retry_section`).
        per_task: per compared task its name, file, outcome and base/tuned first completions
            (:func:`sdk.eval.checkpoints.per_task_section`).
        change_completion: change tasks only (issue 17): change completion rate base vs tuned per
            split with intervals, and per task the model's diff and the fail-to-pass tests still
            failing / pass-to-pass tests broken (:func:`sdk.eval.change.change_completion_section`).
            None, and then absent from the JSON, when no change task was evaluated.
        selection: which adapter ships as ``tuned`` when the eval stage chose it on the validation
            split (``eval.select: validation``): rule, chosen label and folder, reason, and per
            candidate its validation figures and held-out pass@1 (read after the choice,
            :func:`sdk.eval.select.selection_section`). None, and then absent from the JSON, when no
            choice was made.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, serialize_by_alias=True)

    schema_: Literal["tuneloop.report/1"] = Field(SCHEMA, alias="schema")
    created: str
    meta: dict[str, Any] = Field(default_factory=dict)
    summary: dict[str, SliceComparison]
    overall: SliceComparison
    n_samples: int
    ks: list[int]
    by_split: dict[str, SliceComparison]
    by_domain: dict[str, SliceComparison]
    diff: dict[str, Any]
    gate: GateResult | None = None
    tasks: dict[str, Any]
    training: dict[str, dict[str, list[list[float]]]] = Field(default_factory=dict)
    schedule_comparison: dict[str, Any] | None = None
    flags: dict[str, dict[str, int]] = Field(default_factory=dict)
    side_effects: dict[str, dict[str, Any]] = Field(default_factory=dict)
    cost: dict[str, Any]
    cost_benefit: dict[str, Any]
    rl_vs_sft: dict[str, Any] | None = None
    honesty: dict[str, Any] = Field(default_factory=dict)
    retry: dict[str, Any] | None = None
    per_task: list[dict[str, Any]] = Field(default_factory=list)
    change_completion: dict[str, Any] | None = None
    selection: dict[str, Any] | None = None

    @model_serializer(mode="wrap")
    def _drop_absent_sections(self, handler: Any) -> dict[str, Any]:
        """Leave ``change_completion`` and ``selection`` out of the document when None (reports of
        other task sets and runs without a choice keep their keys)."""
        doc = handler(self)
        for key in ("change_completion", "selection"):
            if doc.get(key, 0) is None:
                doc.pop(key)
        return doc

    def __hash__(self) -> int:  # dict fields are not hashable; a report is identified by its JSON
        return hash((self.created, self.to_json_str()))

    def to_json(self) -> dict[str, Any]:
        """The ``report.json`` document (a plain JSON-able dict, keys in file order)."""
        return self.model_dump(mode="json")

    def to_json_str(self, indent: int | None = 2) -> str:
        """``report.json``'s text: :meth:`to_json` as JSON (non-ASCII kept, NaN refused)."""
        import json  # noqa: PLC0415

        return json.dumps(self.to_json(), indent=indent, ensure_ascii=False, allow_nan=False)

    def estimate(self, split: str, side: Side, k: int = 1) -> Estimate | None:
        """pass@``k`` of ``side`` (``base``, ``tuned`` or ``delta`` = tuned - base) on ``split``,
        with its interval; None when the split is absent or no task had ``k`` judged samples."""
        sl = self.by_split.get(split)
        return None if sl is None else getattr(sl, side).get(k)

    def pass_at(self, split: str, side: Side, k: int = 1) -> float | None:
        """The value of :meth:`estimate` (a rate in [0, 1]; a difference in [-1, 1] for ``delta``)."""
        est = self.estimate(split, side, k)
        return None if est is None else est.value

    def heldout_pass_at_1(self) -> dict[str, float]:
        """``{"base": p, "tuned": p}`` held-out pass@1, the sides that have one (for lineage)."""
        return {side: v for side in ("base", "tuned") if (v := self.pass_at("heldout", side)) is not None}

    @property
    def gate_verdict(self) -> Literal["passed", "failed", "disabled", "none"]:
        """``none`` (no gate applied), ``disabled`` (gate off: it only reports), ``passed`` or ``failed``."""
        if self.gate is None:
            return "none"
        if not self.gate.enabled:
            return "disabled"
        return "passed" if self.gate.passed else "failed"

    @property
    def promotable(self) -> bool | None:
        """Whether the tuned adapter may be promoted: the enabled gate's verdict; None when no
        gate decided (none applied, or disabled)."""
        return None if self.gate is None or not self.gate.enabled else self.gate.passed

    @property
    def regressions(self) -> int:
        """Held-out + OOD tasks the base solved and the tuned model does not."""
        return int(self.diff.get("gated_counts", {}).get("regression", 0))

    @property
    def mutation_scores(self) -> dict[str, float | None]:
        """Mutation score (killed / run mutants) per source; ``{}`` for reports without it."""
        return {src: row.get("score") for src, row in self.tasks.get("strength", {}).items()}

    @property
    def rl_earned(self) -> bool | None:
        """Whether SFT+RL beat SFT-only on held-out pass@1 with a paired interval above 0 (None:
        no SFT checkpoint evaluated)."""
        return None if self.rl_vs_sft is None else bool(self.rl_vs_sft.get("earned"))

    @property
    def recommendation(self) -> str:
        """The cost-benefit recommendation sentence."""
        return str(self.cost_benefit.get("recommendation", ""))
