"""The report stage's glue: :func:`sdk.eval.from_run.report_from_run` plus the run's metadata.

The report itself (JSON, HTML, terminal summary) is built by :mod:`sdk.eval`; this module only adds
what the pipeline knows (model, sources, quarantine, config) and prints the summary.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sdk.eval.gate import GateResult
    from sdk.pipeline import Pipeline


def make_report(p: "Pipeline") -> tuple[dict[str, Any], "GateResult | None"]:
    """Compare base and tuned rows, apply the gate, write ``report.json``/``report.html``.

    Returns:
        ``(report dict, gate result, or None when the gate is disabled)``.
    Raises:
        EvalError: the eval stage has not written base and tuned rows.
    """
    from sdk.eval import print_summary
    from sdk.eval.from_run import report_from_run

    counts_path = p.run_dir / "tasks" / "counts.json"
    counts = json.loads(counts_path.read_text()) if counts_path.is_file() else {}
    sources = "; ".join(f"{k.split(':', 1)[1]}: {v.get('tasks', 0)} tasks, {v.get('sft_examples', 0)} SFT examples"
                        for k, v in counts.get("sources", {}).items())
    meta = {"model": p.cfg.model.name, "sources": sources, "sft_examples": counts.get("sft_examples"),
            "preference_pairs": counts.get("preference_pairs"),
            "quarantine_reasons": ", ".join(f"{k}: {v}" for k, v in (counts.get("quarantine_reasons") or {}).items())
            or "none", "config": str(p.run_dir / "config.json")}
    report, gate, json_path, html_path = report_from_run(p.run_dir, p.cfg.gate, meta=meta, seed=p.cfg.seed,
                                                         schedule_comparison=_schedule_comparison(p))
    print_summary(report, p.console)
    p.console.print(f"  report: {html_path}\n          {json_path}")
    return report, gate if p.cfg.gate.enabled else None


def _schedule_comparison(p: "Pipeline") -> dict[str, Any] | None:
    """The ``schedule_comparison`` section from ``rl/`` and ``rl_compare/`` when ``rl.compare`` is on
    (None otherwise: a comparison left on disk by an earlier run is not reported)."""
    from sdk.eval.schedule import load_arm, schedule_section
    from sdk.train.compare import CURVE_FILE

    if not p.stage_enabled("rl_compare"):
        return None
    main, alt = (load_arm(p.run_dir / s / CURVE_FILE, s) if p.is_complete(s) else
                 {"stage": s, "label": s, "skipped": f"the {s} stage is not complete", "evaluations": []}
                 for s in ("rl", "rl_compare"))
    cost = {k: v for k, v in p.stats("rl_compare").items() if k in ("wall_s", "cpu_s")}
    return schedule_section(main, alt, cost, seed=p.cfg.seed)
