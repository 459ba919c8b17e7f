"""Gather a run's outputs (eval rows, task counts, training logs, stage costs) into the report.

The report itself (JSON, HTML, terminal summary) is built by :mod:`sdk.eval.report`; this module
only reads the run folder written by the pipeline's stages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sdk.eval.gate import GateResult
    from sdk.pipeline import Pipeline


def _read_json(path: Path, default: Any) -> Any:
    return json.loads(path.read_text()) if path.is_file() else default


def make_report(p: "Pipeline") -> tuple[dict[str, Any], "GateResult | None"]:
    """Compare base and tuned rows, apply the gate, write ``report.json``/``report.html``.

    When only the base model was evaluated (SFT and RL disabled), the base rows stand on both
    sides, so every delta is zero and the report still renders.

    Returns:
        ``(report dict, gate result or None when the gate is disabled)``.
    Raises:
        SourceError: the eval stage has not run.
    """
    from sdk.errors import SourceError
    from sdk.eval import build_report, check_gate, compare, load_rows, print_summary, stage_cost, write_report

    eval_dir = p.run_dir / "eval"
    if not (eval_dir / "base.jsonl").is_file():
        raise SourceError(f"no evaluation in {eval_dir}", "run `tuneloop eval CONFIG` (or `tuneloop run CONFIG`) first")
    base = load_rows(eval_dir / "base.jsonl")
    tuned = load_rows(eval_dir / "tuned.jsonl") if (eval_dir / "tuned.jsonl").is_file() else base
    comparison = compare(base, tuned, ks=_ks(p.cfg.eval.n_samples), seed=p.cfg.seed)
    gate = check_gate(p.cfg.gate, comparison) if p.cfg.gate.enabled else None
    counts = _read_json(p.run_dir / "tasks" / "counts.json", {})
    logs = {stage: _read_json(p.run_dir / stage / "log_history.json", []) for stage in ("sft", "rl")}
    costs = [stage_cost({"stage": s, **p.stats(s)}) for s in ("tasks", "sft", "rl", "eval") if p.stats(s)]
    meta = {"run_dir": str(p.run_dir), "model": p.cfg.model.name, "task_set": counts.get("version"),
            "sources": counts.get("sources", {}), "sft_examples": counts.get("sft_examples"),
            "preference_pairs": counts.get("preference_pairs"), "quarantine_reasons": counts.get("quarantine_reasons"),
            "config": json.loads(p.cfg.model_dump_json())}
    report = build_report(comparison, gate=gate, task_counts=counts.get("splits"),
                          train_logs={k: v for k, v in logs.items() if v}, costs=costs, rows=[*base, *tuned],
                          meta=meta)
    json_path, html_path = write_report(p.run_dir, report)
    print_summary(report, p.console)
    p.console.print(f"  report: {html_path}\n          {json_path}")
    return report, gate


def _ks(n: int) -> list[int]:
    return sorted({1, n})
