"""The report's ``schedule_comparison`` section: two GRPO arms' held-out curves and a verdict.

Input: each arm's ``<stage>/heldout_curve.json`` (:func:`sdk.train.compare.arm_record`): per probe
step the mean greedy reward over the probe tasks, per domain, and per task. :func:`schedule_section`
sets the arms side by side; :func:`verdict` states one result, decided by a rule fixed in advance
so no step is picked after the fact: the paired difference (comparison arm minus main arm) over the
probe tasks at the **last step both arms evaluated**, with a 95 % paired bootstrap interval
(:func:`sdk.eval.metrics.paired_bootstrap_ci`). An interval that contains 0 reads "no clear
difference at this scale", with the number of probe tasks and steps, since a few greedy probes
on a small model rarely separate two schedules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

ARMS = ("main", "compare")


def load_arm(path: str | Path, stage: str) -> dict[str, Any]:
    """An arm's curve file, or a ``skipped`` record saying why it is missing or unreadable."""
    path = Path(path)
    if not path.is_file():
        return {"stage": stage, "label": stage, "skipped": f"{stage} wrote no held-out curve ({path.name} missing: "
                f"the stage has not run with rl.compare on, or found no held-out task)", "evaluations": []}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        return {"stage": stage, "label": stage, "skipped": f"{path} is not valid JSON ({exc})", "evaluations": []}


def _arm_view(arm: Mapping[str, Any]) -> dict[str, Any]:
    """The report's view of one arm: everything but the per-task scores."""
    evals = [{k: e[k] for k in ("step", "overall", "by_domain")} for e in arm.get("evaluations", [])]
    out = {k: arm.get(k) for k in ("stage", "label", "settings", "every", "probe", "steps_trained", "max_steps",
                                   "rolled_back_to", "stopped_at", "skipped") if k in arm}
    return {**out, "evaluations": evals, "final": evals[-1] if evals else None}


def _paired(main: Mapping[str, Any], alt: Mapping[str, Any], step: int) -> tuple[list[float], list[float]]:
    """Scores of the probe tasks judged in both arms at ``step``, aligned (main, alt)."""
    m = next(e for e in main["evaluations"] if e["step"] == step).get("tasks") or {}
    a = next(e for e in alt["evaluations"] if e["step"] == step).get("tasks") or {}
    ids = sorted(t for t in m if t in a and m[t] is not None and a[t] is not None)
    return [float(m[t]) for t in ids], [float(a[t]) for t in ids]


def last_step_difference(main: Mapping[str, Any], alt: Mapping[str, Any], seed: int = 0) -> dict[str, Any] | None:
    """The comparison at the last step both arms evaluated: ``{"step", "n_tasks", "difference"
    (an Estimate dict, alt minus main), "ahead", "behind", "tied"}`` (task counts), or None when the
    arms share no evaluated step or no task judged in both."""
    from sdk.eval.metrics import paired_bootstrap_ci

    common = sorted({e["step"] for e in main.get("evaluations", [])} & {e["step"] for e in alt.get("evaluations", [])})
    if not common:
        return None
    base, other = _paired(main, alt, common[-1])
    if not base:
        return None
    est = paired_bootstrap_ci(base, other, seed=seed)
    diffs = [b - a for a, b in zip(base, other)]
    return {"step": common[-1], "n_tasks": len(base), "difference": est.model_dump(mode="json"),
            "ahead": sum(d > 1e-9 for d in diffs), "behind": sum(d < -1e-9 for d in diffs),
            "tied": sum(abs(d) <= 1e-9 for d in diffs)}


def verdict(main: Mapping[str, Any], alt: Mapping[str, Any], last: Mapping[str, Any] | None) -> str:
    """One honest line from the numbers (see the module docstring for the rule).

    Args:
        main, alt: the arms (curve records); ``label`` names them.
        last: :func:`last_step_difference` of the two (None: not comparable).
    """
    for arm in (main, alt):
        if arm.get("skipped"):
            return f"no comparison: the {arm.get('label', arm.get('stage'))} arm did not run ({arm['skipped']})"
    if last is None:
        return "no comparison: the two arms share no evaluated step with a judged probe task"
    d, step = last["difference"], last["step"]
    steps = max(int(main.get("steps_trained") or 0), int(alt.get("steps_trained") or 0))
    scale = f"{last['n_tasks']} probe tasks, {steps} GRPO steps"
    ci = f"95% CI {d['low']:+.3f} to {d['high']:+.3f}"
    where = f"at step {step}"
    stops = [f"{a['label']} stopped at step {a['stopped_at']} (held-out rollback)" for a in (main, alt)
             if a.get("stopped_at") is not None]
    tail = f" ({ci}; {scale}" + "".join(f"; {s}" for s in stops) + ")"
    if d["low"] > 0:
        return f"{alt['label']} ahead of {main['label']} by {d['value']:.3f} held-out reward {where}{tail}"
    if d["high"] < 0:
        return f"{alt['label']} behind {main['label']} by {-d['value']:.3f} held-out reward {where}{tail}"
    return (f"no clear difference at this scale: {alt['label']} minus {main['label']} = {d['value']:+.3f} "
            f"held-out reward {where}{tail}")


def schedule_section(main: Mapping[str, Any], alt: Mapping[str, Any], cost: Mapping[str, float] | None = None,
                     seed: int = 0) -> dict[str, Any]:
    """The ``schedule_comparison`` section of report.json.

    Args:
        main, alt: the ``rl`` and ``rl_compare`` curve records (:func:`load_arm`).
        cost: the comparison arm's stage cost (``wall_s``, ``cpu_s``), shown beside the result.
    Returns:
        ``{"arms": {"main": ..., "compare": ...}, "steps": [steps both evaluated], "last_step",
        "verdict", "notes", "cost"}``; each arm holds its settings, every evaluation (step, overall,
        by_domain) and ``final`` (its last evaluation).
    """
    ok = not main.get("skipped") and not alt.get("skipped")
    last = last_step_difference(main, alt, seed) if ok else None
    steps = sorted({e["step"] for e in main.get("evaluations", [])} & {e["step"] for e in alt.get("evaluations", [])})
    notes = []
    first = {a["stage"]: a["evaluations"][0] for a in (main, alt) if a.get("evaluations")}
    if ok and len(first) == 2 and all(e["step"] == 0 for e in first.values()):
        m, a = (first[s]["overall"] for s in (main["stage"], alt["stage"]))
        if m is not None and a is not None and abs(m - a) > 1e-9:
            notes.append(f"the arms differ already at step 0 ({m:.3f} vs {a:.3f}): they should start from the "
                         "same adapter with greedy probes, so the probe is not deterministic here")
    if ok and [e["step"] for e in main["evaluations"]] != [e["step"] for e in alt["evaluations"]]:
        notes.append("the arms were evaluated at different steps; the verdict uses the last step both reached")
    return {"arms": {"main": _arm_view(main), "compare": _arm_view(alt)}, "steps": steps, "last_step": last,
            "verdict": verdict(main, alt, last), "notes": notes, "cost": dict(cost or {})}
