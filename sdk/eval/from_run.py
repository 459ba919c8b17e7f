"""Build, gate and write the report from a run folder's files, in one call.

Reads the layout the pipeline writes (``sdk/stages.py``): ``eval/base.jsonl`` and
``eval/tuned.jsonl`` (rows with raw completions), ``tasks/counts.json``, ``sft/log_history.json``,
``rl/log_history.json`` and ``state/<stage>.json`` (``{"stats": {...}}`` per stage). Every input
but the two rows files is optional: a missing one leaves its report section empty.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from sdk.config import GateConfig
from sdk.eval.cost import stage_cost
from sdk.eval.gate import GateResult, check_gate
from sdk.eval.records import EvalError, load_rows
from sdk.eval.report import build_report, write_report
from sdk.eval.run import compare

COST_STAGES = ("tasks", "sft", "rl", "eval")
LOGS = {"sft": "sft/log_history.json", "grpo": "rl/log_history.json"}


def report_from_run(run_dir: str | Path, gate_cfg: GateConfig, meta: Mapping[str, Any] | None = None,
                    n_resamples: int = 2000, seed: int = 0, schedule_comparison: Mapping[str, Any] | None = None
                    ) -> tuple[dict[str, Any], GateResult, Path, Path]:
    """Compare base and tuned rows of ``run_dir``, apply the gate, write report.json/.html there.

    Args:
        run_dir: the run folder.
        gate_cfg: ``cfg.gate``.
        meta: extra facts for the report header (model, config path ...).
        n_resamples, seed: bootstrap settings.
        schedule_comparison: the section from :func:`sdk.eval.schedule.schedule_section` (the
            pipeline passes it when ``rl.compare`` is on).
    Returns:
        ``(report, gate, json_path, html_path)``; the caller decides what a failed gate does
        (``gate.raise_if_failed()`` after the report is on disk).
    Raises:
        EvalError: ``eval/base.jsonl`` or ``eval/tuned.jsonl`` is missing or unreadable.
    """
    run_dir = Path(run_dir)
    rows = {}
    for label in ("base", "tuned"):
        path = run_dir / "eval" / f"{label}.jsonl"
        if not path.is_file():
            raise EvalError(f"{path} is missing, so there is nothing to compare",
                            "run the eval stage with an adapter (enable sft or rl) before the report")
        rows[label] = load_rows(path)
    comparison = compare(rows["base"], rows["tuned"], n_resamples=n_resamples, seed=seed)
    gate = check_gate(gate_cfg, comparison)
    counts = _read_json(run_dir / "tasks" / "counts.json") or {}
    costs = [stage_cost({**stats, "stage": s}) for s in COST_STAGES
             if (stats := (_read_json(run_dir / "state" / f"{s}.json") or {}).get("stats"))]
    logs = {name: hist for name, rel in LOGS.items() if (hist := _read_json(run_dir / rel))}
    rl_flags = training_flags(run_dir / "rl" / "rewards.jsonl")
    header = {"run_dir": str(run_dir), **({"task_set": counts["version"]} if "version" in counts else {}),
              **dict(meta or {})}
    report = build_report(comparison, gate=gate, task_counts=counts.get("splits"), train_logs=logs, costs=costs,
                          rows=rows["base"] + rows["tuned"], training_flags=rl_flags, meta=header,
                          schedule_comparison=schedule_comparison)
    json_path, html_path = write_report(run_dir, report)
    return report, gate, json_path, html_path


def training_flags(rewards_jsonl: str | Path, prefix: str = "grpo step") -> dict[str, dict[str, int]]:
    """Flags raised during GRPO, per trainer step, from the reward log (``rl/rewards.jsonl``).

    Each line is one scored completion with ``step`` and ``flags``. Returns
    ``{"grpo step N": {flag: samples}}`` in step order, only steps that logged samples; a missing
    file gives ``{}``; unreadable lines are counted under ``unreadable_log_line`` (never dropped
    silently).
    """
    path = Path(rewards_jsonl)
    if not path.is_file():
        return {}
    by_step: dict[int, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            step, flags = int(rec.get("step") or 0), [str(f) for f in rec.get("flags") or ()]
        except (ValueError, TypeError, AttributeError):
            step, flags = -1, ["unreadable_log_line"]
        counts = by_step.setdefault(step, {})
        for f in set(flags):
            counts[f] = counts.get(f, 0) + 1
    return {(f"{prefix} {s}" if s >= 0 else "grpo log"): dict(sorted(c.items())) for s, c in sorted(by_step.items())}


def _read_json(path: Path) -> Any:
    """The parsed file, or ``None`` when it is missing; a corrupt file is an :class:`EvalError`."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise EvalError(f"{path} is not valid JSON: {exc}", "rerun the stage that writes it") from exc
