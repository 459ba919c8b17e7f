"""Reading a finished run: build, gate and write the report from a run folder's files, in one call.

Reads what the stages wrote (paths from :class:`sdk.run.layout.RunLayout`): ``eval/base.jsonl`` and
``eval/tuned.jsonl`` (rows with raw completions), ``tasks/counts.json``, the trainers' log histories,
``rl/rewards.jsonl`` and the stage markers ``state/<stage>.json`` (``{"stats": {...}}``). Every input
but the two rows files is optional: a missing one leaves its report section empty. Usable on any run
folder, without a config beyond the gate's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from sdk.eval.checkpoints import checkpoint_curve, demote_flagged, task_name
from sdk.eval.config import GateConfig
from sdk.eval.cost import stage_cost
from sdk.eval.gate import GateResult, check_gate
from sdk.eval.records import EvalError, load_rows
from sdk.eval.report import build_report, write_report
from sdk.eval.run import compare
from sdk.run.layout import RunLayout

COST_STAGES = ("tasks", "sft", "rl", "eval")
CHECKPOINT_LABELS = ("sft", "rl_midway", "rl", "reference")  # optional eval rows besides base and tuned
TRAIN_LOGS = {"sft": "sft", "grpo": "rl"}  # report label → training stage


BASE_ONLY = ("Base only: no adapter was trained (sft.enabled and rl.enabled are false), so these are the base "
             "model's scores on both sides; enable sft or rl to tune and compare.")


def report_from_run(run_dir: str | Path, gate_cfg: GateConfig, meta: Mapping[str, Any] | None = None,
                    n_resamples: int = 2000, seed: int = 0, schedule_comparison: Mapping[str, Any] | None = None,
                    cost_stages: Sequence[str] = COST_STAGES, base_only: bool = False) -> tuple[Any, GateResult, Path, Path]:
    """Compare base and tuned rows of ``run_dir``, apply the gate, write report.json/.html there.

    Args:
        run_dir: the run folder.
        gate_cfg: ``cfg.gate``.
        meta: extra facts for the report header (model, config path ...).
        n_resamples, seed: bootstrap settings.
        schedule_comparison: the section from :func:`sdk.eval.schedule.schedule_section` (the
            pipeline passes it when ``rl.compare`` is on).
        cost_stages: the stages whose markers give the cost table, in order.
        base_only: the run trains no adapter (``sft`` and ``rl`` off): without ``eval/tuned.jsonl``
            the base rows stand on both sides, and the header and recommendation say "base only".
    Returns:
        ``(report, gate, json_path, html_path)`` with the report an
        :class:`sdk.eval.report.EvalReport`; the caller decides what a failed gate does
        (``gate.raise_if_failed()`` after the report is on disk).
    Raises:
        EvalError: ``eval/base.jsonl`` or ``eval/tuned.jsonl`` is missing or unreadable, or a JSON
            input is corrupt.
    """
    layout = RunLayout(Path(run_dir))
    rows = {}
    for label in ("base", "tuned"):
        path = layout.eval_rows(label)
        if label == "tuned" and base_only and not path.is_file():
            rows["tuned"], meta = rows["base"], {**dict(meta or {}), "base_only": BASE_ONLY}
            continue
        if not path.is_file():
            raise EvalError(f"{path} is missing, so there is nothing to compare",
                            "run the eval stage with an adapter (enable sft or rl) before the report")
        rows[label] = load_rows(path)
    rows["tuned"] = demote_flagged(rows["tuned"])  # issue 15: a flagged pass is not a gain
    extra = {label: load_rows(p) for label in CHECKPOINT_LABELS if (p := layout.eval_rows(label)).is_file()}
    comparison = compare(rows["base"], rows["tuned"], n_resamples=n_resamples, seed=seed)
    gate = check_gate(gate_cfg, comparison)
    counts = _read_json(layout.counts_json) or {}
    markers = {s: stats for s in cost_stages if (stats := (_read_json(layout.marker(s)) or {}).get("stats"))}
    costs = [stage_cost({**stats, "stage": s}) for s, stats in markers.items()]
    logs = {name: hist for name, stage in TRAIN_LOGS.items() if (hist := _read_json(layout.log_history(stage)))}
    header = {"run_dir": str(layout.root), **({"task_set": counts["version"]} if counts.get("version") else {}),
              **dict(meta or {})}
    by_label = {"base": rows["base"], **{k: v for k, v in extra.items() if k != "reference"}, "tuned": rows["tuned"]}
    selection = ((_read_json(layout.marker("eval")) or {}).get("stats") or {}).get("selection")
    compute = checkpoint_compute(markers, costs, (selection or {}).get("chosen"))
    curve = checkpoint_curve(by_label, compute) if len(by_label) > 2 else None
    report = build_report(comparison, gate=gate, task_counts=counts.get("splits"), train_logs=logs, costs=costs,
                          checkpoints=curve, rows=rows["base"] + rows["tuned"],
                          training_flags=no_signal_steps(training_flags(layout.rewards_jsonl("rl")), logs.get("grpo")),
                          meta=header, schedule_comparison=schedule_comparison,
                          task_strength=counts.get("strength"), checkpoint_rows={**by_label, **extra},
                          task_names=task_names(layout), validation=(markers.get("rl") or {}).get("validation"),
                          selection=selection, seed=seed)
    if header.get("base_only"):
        report = report.model_copy(update={"cost_benefit": {**report.cost_benefit, "recommendation": BASE_ONLY}})
    json_path, html_path = write_report(layout.root, report)
    return report, gate, json_path, html_path


def checkpoint_compute(markers: Mapping[str, Mapping[str, Any]], costs: Sequence[Any],
                       shipped: str | None = None) -> dict[str, float]:
    """Cumulative training compute (seconds) per evaluated label: ``sft`` after the SFT stage,
    ``rl_midway`` after it plus the RL stage's compute at the midway save (``rl`` marker's
    ``midway.compute_s``; half the RL compute when unrecorded), ``rl`` (the RL end) after every
    training stage; ``tuned`` as the ``shipped`` label (the validation choice), else as ``rl``."""
    by_stage = {c.stage: c.compute_s for c in costs if c.kind == "train"}
    sft, rl = by_stage.get("sft", 0.0), by_stage.get("rl", 0.0)
    mid = ((markers.get("rl") or {}).get("midway") or {}).get("compute_s")
    out = {"base": 0.0, "sft": sft, "rl_midway": sft + (float(mid) if mid is not None else rl / 2),
           "rl": sum(by_stage.values())}
    return {**out, "tuned": out.get(shipped or "rl", out["rl"])}


def task_names(layout: RunLayout) -> dict[str, dict[str, str]]:
    """``{task id: {"name", "file"}}`` from the task set's ``source.locator`` (``{}`` without a task set)."""
    from sdk.tasks.taskset import TaskSet

    if not layout.tasks_jsonl.is_file():
        return {}
    return {t.id: task_name(t.source.locator, t.id) for t in TaskSet.load(layout.tasks_jsonl)}


def no_signal_steps(flags: dict[str, dict[str, int]], history: Sequence[Mapping[str, Any]] | None,
                    prefix: str = "grpo step") -> dict[str, dict[str, int]]:
    """``flags`` plus ``no_learning_signal`` on every GRPO step whose groups all had rewards with no
    variance (TRL's ``frac_reward_zero_std`` = 1: zero advantages, so the step taught nothing), so the
    report does not show such a step like any other."""
    out = {k: dict(v) for k, v in flags.items()}
    for entry in history or ():
        if isinstance(entry, Mapping) and "loss" in entry and float(entry.get("frac_reward_zero_std", 0) or 0) >= 1.0:
            out.setdefault(f"{prefix} {int(entry.get('step', 0))}", {})["no_learning_signal"] = 1
    return dict(sorted(out.items(), key=lambda kv: int(kv[0].rsplit(" ", 1)[-1]) if kv[0].startswith(prefix) else -1))


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
