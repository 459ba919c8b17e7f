"""What ``export`` and ``serve`` check before an adapter leaves the run: it is current, and the gate
did not refuse it (or the user overrode the refusal, which is recorded).

The verdict comes from the adapter's own ``lineage.json`` (written by the report stage, see
:func:`sdk.run.stage_report.record_verdict`); retraining rewrites the lineage, so an old verdict can
never vouch for a new adapter.
"""

from __future__ import annotations

import getpass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sdk.errors import ConfigError, GateError, ModelError
from sdk.run.lineage import read_lineage
from sdk.run.shipped import newest_adapter


def check_release(pipe, override: str | None = None) -> tuple[Path, dict[str, Any]]:
    """The adapter to release and the record of why it may go.

    Args:
        pipe: the run's :class:`sdk.run.pipeline.Pipeline`.
        override: a reason to release an adapter the gate refused (recorded with who and when).
    Returns:
        ``(adapter folder, release record)``; the record holds the stage, the gate verdict and
        reasons, and the override.
    Raises:
        ModelError: the run has no trained adapter.
        ConfigError: the adapter's stage is out of date (its config or an earlier stage changed
            since it trained), the adapter was chosen on validation and the eval stage is out of date,
            or the gate is on and the report has not judged this adapter.
        GateError: the gate refused the adapter and no ``override`` was given.
    """
    adapter = pipe.adapter_for_eval()
    if adapter is None:
        raise ModelError(f"no trained adapter in {pipe.run_dir}", "run `tuneloop run CONFIG` first")
    stage = adapter.relative_to(pipe.layout.root).parts[0]  # sft/adapter, rl/adapter, rl/midway/adapter
    if adapter != newest_adapter(pipe.cfg, pipe.layout) and not pipe.is_complete("eval"):
        raise ConfigError(f"{adapter} ships by the eval stage's choice on the validation split, and that stage is "
                          "out of date: its config or an earlier stage changed since it chose",
                          "run `tuneloop run CONFIG` (same --set options) to re-evaluate and choose again")
    if not pipe.is_complete(stage):
        raise ConfigError(f"the {stage} adapter in {adapter} is out of date: {_why_stale(pipe, stage)}",
                          "run `tuneloop run CONFIG` (same --set options) to retrain and re-evaluate it")
    lineage = read_lineage(adapter)
    promotable = lineage.promotable if lineage is not None else None
    reasons = list(lineage.gate_reasons) if lineage is not None else []
    if pipe.cfg.gate.enabled and promotable is None:
        raise ConfigError(f"the gate is on but no report has judged the adapter in {adapter}",
                          "run `tuneloop report CONFIG` (same --set options) first")
    if promotable is False and not pipe.cfg.gate.enabled:
        # the refusal came from a report run with the gate on; this config turns the gate off
        record_note = "an earlier report with the gate on refused it: " + "; ".join(reasons)
        promotable, reasons = None, [record_note]
    if promotable is False and not override:
        raise GateError("the regression gate refused this adapter: " + "; ".join(reasons or ["(no reason recorded)"]),
                        "improve the adapter and re-run, or release it anyway with --override-gate 'WHY' "
                        "(recorded in the export's tuneloop_export.json)")
    record = {"stage": stage, "adapter": str(adapter), "gate": "passed" if promotable else
              "failed" if promotable is False else "not applied", "gate_reasons": reasons,
              "heldout_pass_at_1": dict(lineage.heldout_pass_at_1) if lineage is not None else {}}
    if (warning := _ungated_warning(promotable, record["heldout_pass_at_1"])) is not None:
        record["warning"] = warning
    if promotable is False:
        record["override"] = {"reason": override, "by": _user(),
                              "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    return adapter, record


def _ungated_warning(promotable: bool | None, heldout: dict[str, float]) -> str | None:
    """A warning for an adapter no gate judged (``gate.enabled: false``, the default) whose report shows no
    held-out gain: tuned pass@1 at or below base (new-user trial: ``export`` merged an adapter the report
    said not to ship, silently). None when a gate passed it or the report has no held-out figures."""
    if promotable is not None or "base" not in heldout or "tuned" not in heldout:
        return None
    base, tuned = heldout["base"], heldout["tuned"]
    if tuned > base:
        return None
    return (f"no gate judged this adapter (gate.enabled is false) and its report shows no held-out gain: "
            f"pass@1 base {base:.3f}, tuned {tuned:.3f}; set gate.enabled: true to refuse such adapters")


def _why_stale(pipe, stage: str) -> str:
    """Why ``stage`` is out of date, naming the settings that differ (``rl.max_steps 2 → 10``) for it and
    each stale stage above it, as the stage refusals do (a new user exported without the run's ``--set``)."""
    from sdk.run.bookkeeping import read_marker
    from sdk.run.spec import Stage

    if not hasattr(pipe, "stale_inputs"):
        return f"the {stage} stage's config or an earlier stage changed since it trained"
    marker = read_marker(pipe.layout.marker(stage))
    own = "has not run" if marker is None else pipe._why_changed(Stage(stage), marker)
    parts = [f"{stage} {own}"] + [f"{up.value} {why}" for up, why in pipe.stale_inputs(stage)]
    return "; ".join(parts)


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry in some containers
        return "unknown"
