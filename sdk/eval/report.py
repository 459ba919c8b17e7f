"""The run report: one JSON document for machines, one self-contained HTML page, a terminal summary.

:func:`build_report` turns plain data (the :class:`~sdk.eval.records.Comparison`, the gate
verdict, task-set counts, TRL log histories, stage costs) into one frozen
:class:`~sdk.eval.report_model.EvalReport` (its ``to_json()`` is ``report.json``);
:func:`write_report` writes ``report.json`` and ``report.html`` (plots embedded as base64 PNG, no
external URL, works offline; rendering in :mod:`sdk.eval.html`); :func:`print_summary` prints
the decision-relevant lines with rich. The report never reads a model or the sandbox.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from sdk.eval.cost import (
    Checkpoint,
    StageCost,
    default_checkpoints,
    falloff,
    knee,
    marginal_returns,
    recommendation,
)
from sdk.eval.gate import GATED_SPLITS, GateResult
from sdk.eval.metrics import component_stats, flag_counts
from sdk.eval.fmt import fmt_est
from sdk.eval.records import Comparison, EvalRow
from sdk.eval.report_model import SCHEMA, EvalReport
from sdk.eval.select import selection_section

__all__ = ["SCHEMA", "EvalReport", "build_report", "fmt_est", "print_summary", "write_report"]
SUMMARY_SPLITS = ("heldout", "ood")
# TRL log-history keys that are run summaries, not per-step curves
_NOT_CURVES = {"step", "epoch", "total_flos"}
_CURVE_ORDER = ("loss", "reward", "reward_std", "kl", "entropy", "grad_norm", "learning_rate")


def build_report(comparison: Comparison, *, gate: GateResult | None = None,
                 task_counts: Mapping[str, Mapping[str, int]] | None = None,
                 train_logs: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
                 costs: Sequence[StageCost] = (), checkpoints: Sequence[Checkpoint] | None = None,
                 rows: Sequence[EvalRow] = (), training_flags: Mapping[str, Mapping[str, int]] | None = None,
                 meta: Mapping[str, Any] | None = None, schedule_comparison: Mapping[str, Any] | None = None,
                 task_strength: Mapping[str, Mapping[str, Any]] | None = None,
                 checkpoint_rows: Mapping[str, Sequence[EvalRow]] | None = None,
                 task_names: Mapping[str, Mapping[str, str]] | None = None,
                 validation: Mapping[str, Any] | None = None, seed: int = 0,
                 selection: Mapping[str, Any] | None = None) -> EvalReport:
    """Assemble the report.

    Args:
        comparison: base vs tuned, from :func:`sdk.eval.run.compare`.
        gate: the gate verdict, from :func:`sdk.eval.gate.check_gate` (omitted: no gate section).
        task_counts: :meth:`sdk.tasks.taskset.TaskSet.counts` — ``{split: {domain: n},
            "quarantined": {reason: n}}``.
        train_logs: ``{stage: trainer.state.log_history}`` e.g. ``{"sft": [...], "grpo": [...]}``;
            every numeric per-step key becomes a curve ``[[step, value], ...]``.
        costs: one :class:`StageCost` per stage.
        checkpoints: points of the benefit curve; default: base at 0 and tuned at all training
            compute, with held-out pass@1 from ``comparison``.
        rows: the evaluation rows of any models; their reward-hacking flags and reward components
            (side effects) are summarised per ``EvalRow.model`` label.
        training_flags: flags raised while training, ``{checkpoint label: {flag: samples}}`` (e.g. per
            GRPO step, :func:`sdk.run.finished.training_flags`); listed between base and tuned.
        meta: run facts shown at the top (run dir, model, task-set version, config ...).
        schedule_comparison: two GRPO arms' curves and verdict (:func:`sdk.eval.schedule.schedule_section`).
        task_strength: verifier strength per source (``counts.json["strength"]``); becomes
            ``tasks["strength"]`` when non-empty (omitted: no key, so older reports read the same).
        checkpoint_rows, task_names, validation, seed: rows per model label, task names, validation facts
            and bootstrap seed of the issue-15 sections (:func:`_issue15_sections`) and of change completion
            (:mod:`sdk.eval.change`, from ``checkpoint_rows``, else ``rows``).
        selection: the eval marker's choice of the shipped adapter (:func:`sdk.eval.select.selection_section`).
    Returns: an :class:`EvalReport` (its fields are the keys of ``to_json()``, i.e. report.json).
    """
    row_flags = _flags_by_model(rows)
    points = list(checkpoints) if checkpoints else default_checkpoints(comparison, costs, row_flags)
    return EvalReport(
        schema_=SCHEMA,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        meta=_jsonable(dict(meta or {})),
        summary={s: comparison.by_split[s] for s in SUMMARY_SPLITS if s in comparison.by_split},
        overall=comparison.overall,
        n_samples=comparison.n_samples, ks=list(comparison.ks),
        by_split=dict(comparison.by_split), by_domain=dict(comparison.by_domain),
        diff=_diff_section(comparison),
        gate=gate,
        tasks=_task_section(task_counts, task_strength),
        training={stage: _curves(hist) for stage, hist in (train_logs or {}).items()},
        schedule_comparison=_jsonable(dict(schedule_comparison)) if schedule_comparison else None,
        flags=_ordered_flags(row_flags, training_flags or {}, points),
        side_effects={m: component_stats([r for r in rows if r.model == m]) for m in sorted({r.model for r in rows})},
        cost=_cost_section(costs),
        cost_benefit=_cost_benefit_section(comparison, points),
        **_issue15_sections(comparison, dict(checkpoint_rows or {}), task_names or {}, validation, seed),
        change_completion=_change_section(checkpoint_rows or {}, rows, seed),
        selection=_jsonable(selection_section(selection, checkpoint_rows or {})),
    )


def _issue15_sections(comparison: Comparison, by_label: dict[str, Sequence[EvalRow]],
                      names: Mapping[str, Mapping[str, str]], validation: Mapping[str, Any] | None,
                      seed: int) -> dict[str, Any]:
    """``rl_vs_sft``, ``honesty``, ``retry`` and ``per_task`` (:mod:`sdk.eval.checkpoints`) from the rows
    of every evaluated model (``base``, ``sft``, ``rl_midway``, ``tuned``, ``reference``), the task
    names (``{id: {"name", "file"}}``) and the validation split's record."""
    from sdk.eval.checkpoints import honesty_section, per_task_section, retry_section, rl_vs_sft

    rl_end = by_label.get("rl") or by_label.get("tuned", ())  # own rows when the shipped adapter was chosen
    return {"rl_vs_sft": rl_vs_sft(by_label.get("sft", ()), rl_end, seed=seed),
            "honesty": _jsonable(honesty_section(comparison, by_label, validation)),
            "retry": retry_section(by_label, seed=seed),
            "per_task": _jsonable(per_task_section(comparison, by_label, names)) if by_label else []}


def _change_section(by_label: Mapping[str, Sequence[EvalRow]], rows: Sequence[EvalRow], seed: int
                    ) -> dict[str, Any] | None:
    """``change_completion`` (:mod:`sdk.eval.change`) from the rows per model label (``rows`` grouped
    by :attr:`EvalRow.model` when none are given); None without change tasks."""
    from sdk.eval.change import change_completion_section

    labels = dict(by_label) or {m: [r for r in rows if r.model == m] for m in {r.model for r in rows}}
    section = change_completion_section(labels, seed=seed)
    return _jsonable(section) if section else None


def write_report(run_dir: str | Path, report: EvalReport) -> tuple[Path, Path]:
    """Write ``report.json`` (:meth:`EvalReport.to_json`) and ``report.html`` into ``run_dir``
    (created if missing).

    Returns:
        ``(json_path, html_path)``.
    """
    from sdk.eval.html import render_html  # matplotlib is imported only when writing

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    json_path, html_path = run_dir / "report.json", run_dir / "report.html"
    json_path.write_text(report.to_json_str(indent=2), encoding="utf-8")
    html_path.write_text(render_html(report), encoding="utf-8")
    return json_path, html_path


def print_summary(report: EvalReport, console: Console | None = None) -> None:
    """Print pass@1 per split (base, tuned, delta with CIs), regressions, gate and recommendation."""
    console = console or Console()
    table = Table(title="tuneloop: base vs tuned (pass@1, 95% CI)")
    for col in ("split", "tasks", "base", "tuned", "delta"):
        table.add_column(col, justify="left" if col == "split" else "right", no_wrap=True)
    for name, sl in report.by_split.items():
        if 1 not in sl.base:
            table.add_row(name, str(sl.n_tasks), "-", "-", "-")
            continue
        table.add_row(name, str(sl.n_tasks), fmt_est(sl.base[1], sep=","),
                      fmt_est(sl.tuned[1], sep=","), fmt_est(sl.delta[1], signed=True, sep=","))
    console.print(table)
    for name, sl in (report.change_completion or {}).get("by_split", {}).items():
        console.print(f"change completion rate ({name}, {sl['n_tasks']} tasks): base {_pct(sl['base'])}, "
                      f"tuned {_pct(sl['tuned'])}, tuned - base {_pct(sl['delta'], signed=True)}", markup=False)
    counts = report.diff["gated_counts"]
    console.print(f"held-out/OOD tasks: {counts['gain']} gained, {counts['regression']} regressed, "
                  f"{counts['both']} solved by both, {counts['neither']} by neither, {counts['unjudged']} unjudged")
    gate = report.gate
    if gate and gate.enabled:
        verdict = "[green]PASSED[/]" if gate.passed else "[red]FAILED[/]"
        console.print(f"gate: {verdict}" + "".join(f"\n  - {r}" for r in gate.reasons))
    elif gate:  # a disabled gate decides nothing: never show it as a green PASSED
        would = "pass" if gate.passed else "fail"
        console.print(f"gate: not applied (gate.enabled is false; its checks would {would})"
                      + "".join(f"\n  - {r}" for r in gate.reasons))
    totals = report.cost["totals"]
    if not report.cost["stages"]:
        console.print("cost: not recorded")
    else:
        console.print(f"cost: {totals['wall_s']:.0f} s wall, {totals['cpu_s']:.0f} s CPU, {totals['gpu_s']:.0f} s GPU, "
                      f"{totals['tokens_generated']} tokens generated, {totals['tokens_trained']} trained")
    if report.schedule_comparison:
        console.print(f"schedule comparison: {report.schedule_comparison['verdict']}", markup=False)
    if report.rl_vs_sft:
        console.print(report.rl_vs_sft["verdict"], markup=False)
    if sel := report.selection:
        console.print(f"shipped adapter (tuned): {sel['chosen']} ({sel.get('adapter', '')}); {sel['reason']}",
                      markup=False)
    for warning in report.honesty.get("warnings", ()):
        console.print(f"[yellow]warning:[/] {warning}")
    if knee_text := (report.cost_benefit.get("knee") or {}).get("text"):
        console.print(knee_text, markup=False)
    console.print(f"[bold]{report.recommendation}[/]")


def _pct(e: Mapping[str, Any], signed: bool = False) -> str:
    """An estimate's JSON form as ``value [low, high]`` in percent."""
    f = "+.1f" if signed else ".1f"
    return f"{100 * e['value']:{f}}% [{100 * e['low']:{f}}, {100 * e['high']:{f}}]"


def _cost_benefit_section(comparison: Comparison, points: Sequence[Checkpoint]) -> dict[str, Any]:
    """Benefit-curve points, marginal return per segment, where it falls off, and the recommendation."""
    segments = marginal_returns(points)
    held = comparison.by_split.get("heldout")
    falls = falloff(segments)
    return {"points": [p.model_dump(mode="json") for p in points], "segments": segments, "falloff_at": falls,
            "recommendation": recommendation(held.delta.get(1) if held else None,
                                             len(comparison.regressions(GATED_SPLITS)), segments, falls),
            "knee": knee(points, segments, falls)}


def _diff_section(comparison: Comparison) -> dict[str, Any]:
    """Per-task outcome counts (all and gated splits) and the regressions, gains, unjudged and unpaired tasks."""
    def of(outcome: str) -> list[dict]:
        return [d.model_dump(mode="json") for d in comparison.diffs if d.outcome == outcome]

    return {"counts": comparison.outcome_counts(), "gated_counts": comparison.outcome_counts(GATED_SPLITS),
            "solve_threshold": comparison.solve_threshold, "regressions": of("regression"), "gains": of("gain"),
            "unjudged": of("unjudged"), "unpaired": list(comparison.unpaired)}


def _flags_by_model(rows: Sequence[EvalRow]) -> dict[str, dict[str, int]]:
    models = sorted({r.model for r in rows})
    return {m: flag_counts([r for r in rows if r.model == m]) for m in models}


def _ordered_flags(row_flags: Mapping[str, dict[str, int]], training: Mapping[str, Mapping[str, int]],
                   points: Sequence[Checkpoint]) -> dict[str, dict[str, int]]:
    """Flags per checkpoint in run order: base, training checkpoints, other eval labels, tuned."""
    merged = {p.label: dict(p.flags) for p in points if p.flags}
    merged.update({k: dict(v) for k, v in training.items()})
    merged.update(row_flags)
    head = [k for k in ("base",) if k in merged]
    middle = [k for k in merged if k not in ("base", "tuned")]
    tail = [k for k in ("tuned",) if k in merged]
    return {k: merged[k] for k in head + middle + tail}


def _task_section(counts: Mapping[str, Mapping[str, int]] | None,
                  strength: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    counts = {k: dict(v) for k, v in (counts or {}).items()}
    quarantined = counts.pop("quarantined", {})
    out = {"by_split": counts, "totals": {s: sum(d.values()) for s, d in counts.items()},
           "quarantined": dict(sorted(quarantined.items(), key=lambda kv: -kv[1])),
           "quarantined_total": sum(quarantined.values())}
    if strength:
        out["strength"] = _jsonable({src: dict(row) for src, row in strength.items()})
    return out


def _curves(history: Sequence[Mapping[str, Any]]) -> dict[str, list[list[float]]]:
    """``{metric: [[step, value], ...]}`` from a TRL ``log_history``; run summaries are skipped."""
    out: dict[str, list[list[float]]] = {}
    for i, entry in enumerate(history):
        step = entry.get("step", i)
        for key, val in entry.items():
            if key in _NOT_CURVES or key.startswith("train_") or isinstance(val, bool):
                continue
            if isinstance(val, (int, float)) and math.isfinite(val):
                out.setdefault(key, []).append([float(step), float(val)])
    rank = {k: i for i, k in enumerate(_CURVE_ORDER)}
    return dict(sorted(out.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))


def _cost_section(costs: Sequence[StageCost]) -> dict[str, Any]:
    stages = [c.model_dump(mode="json") | {"compute_s": c.compute_s} for c in costs]
    keys = ("wall_s", "cpu_s", "gpu_s", "tokens_generated", "tokens_trained")
    return {"stages": stages, "totals": {k: sum(getattr(c, k) for c in costs) for k in keys}}


def _jsonable(value: Any) -> Any:
    """Round-trip through JSON so paths, enums and dates become strings."""
    return json.loads(json.dumps(value, default=str))
