"""The regression gate: decide from a :class:`~sdk.eval.records.Comparison` whether an adapter ships.

Two rules, both from :class:`sdk.config.GateConfig`:

* at most ``max_regressions`` held-out + OOD tasks that the base model solved and the tuned
  model does not (train tasks are not counted: the model has seen them);
* held-out pass@1 of tuned minus base at least ``min_heldout_gain`` (point estimate; the
  bootstrap interval is quoted in the reason so a reader sees how sure the gain is).

A gate with nothing to judge fails: no held-out task means no evidence of gain. Tasks that
could not be judged on one side (sandbox failures) are not regressions, but they are named in
``notes`` because they could hide one. The pipeline turns a failed gate into
:class:`sdk.errors.GateError` (exit code 3) with :meth:`GateResult.raise_if_failed`.
"""

from __future__ import annotations

from sdk.eval.config import GateConfig
from sdk.errors import GateError
from sdk.eval.records import Comparison
from sdk.types import Frozen

GATED_SPLITS = ("heldout", "ood")


class GateResult(Frozen):
    """Verdict of the gate.

    Attributes:
        passed: True when every rule holds (always True when the gate is disabled).
        enabled: ``GateConfig.enabled``.
        reasons: one sentence per broken rule (empty when every rule holds; filled even when the
            gate is disabled, which then still passes).
        notes: things a reader should know that do not fail the gate.
        regressions: held-out + OOD regressions counted.
        heldout_gain: tuned minus base held-out pass@1, ``None`` when there is no held-out task.
    """

    passed: bool
    enabled: bool
    reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    regressions: int = 0
    heldout_gain: float | None = None

    def raise_if_failed(self) -> None:
        """Raise :class:`GateError` when the gate is enabled and failed."""
        if self.enabled and not self.passed:
            raise GateError("the regression gate refused the adapter: " + "; ".join(self.reasons),
                            "inspect the regressions in report.html, then retrain or relax `gate:` in the config")


def check_gate(cfg: GateConfig, comparison: Comparison) -> GateResult:
    """Apply ``cfg`` to ``comparison``.

    Args:
        cfg: the gate settings; when ``cfg.enabled`` is False the result passes but still
            carries the counts and reasons (so the report can show what the gate *would* say).
    Returns:
        A :class:`GateResult`.
    """
    reasons: list[str] = []
    notes: list[str] = []
    regs = comparison.regressions(GATED_SPLITS)
    if len(regs) > cfg.max_regressions:
        shown = ", ".join(f"{d.task_id} ({d.domain})" for d in regs[:5]) + (" ..." if len(regs) > 5 else "")
        reasons.append(f"{len(regs)} held-out/OOD regressions, at most {cfg.max_regressions} allowed: {shown}")
    unjudged = comparison.outcome_counts(GATED_SPLITS)["unjudged"]
    if unjudged:
        notes.append(f"{unjudged} held-out/OOD tasks could not be judged for one model (infrastructure "
                     "failures); they may hide regressions")
    held = comparison.by_split.get("heldout")
    gain = held.delta.get(1) if held else None
    if gain is None:
        reasons.append("no held-out task was judged for both models, so no gain can be shown")
    elif gain.value < cfg.min_heldout_gain:
        reasons.append(f"held-out pass@1 gain {gain.value:+.3f} (95% CI {gain.low:+.3f}..{gain.high:+.3f}, "
                       f"n={gain.n}) is below the required {cfg.min_heldout_gain:+.3f}")
    elif gain.low < cfg.min_heldout_gain:
        notes.append(f"held-out gain {gain.value:+.3f} meets the bar but its interval reaches {gain.low:+.3f}: "
                     "evaluate more held-out tasks to be sure")
    return GateResult(passed=not reasons or not cfg.enabled, enabled=cfg.enabled, reasons=tuple(reasons),
                      notes=tuple(notes), regressions=len(regs),
                      heldout_gain=None if gain is None else gain.value)
