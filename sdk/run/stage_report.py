"""The report stage: compare base and tuned rows, apply the gate, write ``report.json``/``report.html``,
print the summary, and record the gate's verdict in the evaluated adapter's lineage.

The report itself is built by :mod:`sdk.eval` (through :func:`sdk.run.finished.report_from_run`);
this module adds what only the run knows (model, sources, quarantine, config, the schedule
comparison) and what the verdict means for the adapter.
"""

from __future__ import annotations

from typing import Any

from sdk.run.bookkeeping import StageStats, read_marker
from sdk.run.context import StageContext, adapter_for_eval
from sdk.run.lineage import read_lineage, write_lineage
from sdk.run.stage_rl import rl_compare_enabled


def report_meta(ctx: StageContext) -> dict[str, Any]:
    """The report header's facts from the run: model, per-source counts, quarantine reasons, config path."""
    counts = ctx.inputs.counts()
    sources = "; ".join(f"{k.split(':', 1)[1]}: {v.get('tasks', 0)} tasks, {v.get('sft_examples', 0)} SFT examples"
                        for k, v in counts.get("sources", {}).items())
    reasons = ", ".join(f"{k}: {v}" for k, v in (counts.get("quarantine_reasons") or {}).items()) or "none"
    adapter = adapter_for_eval(ctx.cfg, ctx.layout)
    return {"model": ctx.cfg.model.name, "sources": sources, "sft_examples": counts.get("sft_examples"),
            "preference_pairs": counts.get("preference_pairs"), "quarantine_reasons": reasons,
            "config": str(ctx.layout.config_json), "adapter": str(adapter) if adapter else "none (base only)",
            "settings": key_settings(ctx.cfg), "tuneloop_version": _version()}


def key_settings(cfg) -> str:
    """The settings a reader needs to judge the numbers, in one line (LoRA, SFT, RL, evaluation)."""
    sft, rl, ev = cfg.sft, cfg.rl, cfg.eval
    parts = [f"LoRA r={sft.lora.r} alpha={sft.lora.alpha}"]
    if sft.enabled:
        parts.append(f"SFT lr={sft.learning_rate:g} epochs={sft.epochs:g} max_steps={sft.max_steps}")
    if rl.enabled:
        parts.append(f"RL {getattr(rl, 'algorithm', 'grpo')} max_steps={rl.max_steps} lr={rl.learning_rate:g} "
                     f"generations={rl.num_generations}")
    parts.append(f"eval samples={ev.n_samples} temperature={ev.temperature:g} max_new_tokens={ev.max_new_tokens}")
    return "; ".join(parts)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tuneloop")
    except PackageNotFoundError:
        return "unknown"


def schedule_comparison(ctx: StageContext) -> dict[str, Any] | None:
    """The ``schedule_comparison`` section from ``rl/`` and ``rl_compare/`` when ``rl.compare`` is on
    (None otherwise: a comparison left on disk by an earlier run is not reported)."""
    from sdk.eval.schedule import load_arm, schedule_section

    if not rl_compare_enabled(ctx.cfg):
        return None
    main, alt = (load_arm(ctx.layout.heldout_curve(s), s) if s in ctx.complete else
                 {"stage": s, "label": s, "skipped": f"the {s} stage is not complete", "evaluations": []}
                 for s in ("rl", "rl_compare"))
    stats = (read_marker(ctx.layout.marker("rl_compare")) or {}).get("stats", {})
    cost = {k: v for k, v in stats.items() if k in ("wall_s", "cpu_s")}
    return schedule_section(main, alt, cost, seed=ctx.cfg.seed)


def stage_report(ctx: StageContext) -> StageStats:
    """Compare, gate, write the report; the report is the returned stats' ``output``.

    Raises:
        EvalError: the eval stage has not written base and tuned rows.
        GateError: the gate is on and failed (after the report and the verdict are on disk).
    """
    from sdk.eval.report import print_summary
    from sdk.run.finished import report_from_run

    base_only = not (ctx.cfg.sft.enabled or ctx.cfg.rl.enabled)  # a clean run whose report says so, not exit 2
    report, gate, json_path, html_path = report_from_run(
        ctx.layout.root, ctx.cfg.gate, meta=report_meta(ctx), seed=ctx.cfg.seed,
        schedule_comparison=schedule_comparison(ctx), base_only=base_only)
    print_summary(report, ctx.console)
    ctx.console.print(f"  report: {html_path}\n          {json_path}")
    gate = gate if ctx.cfg.gate.enabled and not base_only else None  # nothing trained: nothing to gate
    record_verdict(ctx, report, gate)
    if gate is not None:
        gate.raise_if_failed()
    return StageStats("report", output=report)


def record_verdict(ctx: StageContext, report, gate) -> None:
    """Write the gate verdict and held-out pass@1 into the evaluated adapter's ``lineage.json``:
    a failed gate marks the adapter not promotable (None: the gate is off)."""
    adapter = adapter_for_eval(ctx.cfg, ctx.layout)
    lineage = read_lineage(adapter) if adapter is not None else None
    if lineage is None:
        return
    scores = {side: value for side in ("base", "tuned")
              if (value := report.pass_at("heldout", side, 1)) is not None}
    write_lineage(adapter, lineage.model_copy(update={
        "promotable": None if gate is None else bool(gate.passed),
        "gate_reasons": tuple(gate.reasons) if gate is not None else (), "heldout_pass_at_1": scores}))
