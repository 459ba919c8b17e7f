"""Canary decisions on live feedback, by a rule fixed when the canary starts (issue 16, item 4).

Metrics per version (:func:`version_metrics`): the positive-rating rate (ratings at or above
their scale's good threshold, over ratings) and the correction rate (corrections over served
interactions), each with a 95 % Wilson score interval.

The rule (:class:`CanaryRule`) is stored with the canary (``adapter_heads.canary_rule_json``),
so it cannot be tuned after seeing the data: wait until both production and canary have
``min_samples`` ratings; then promote when the canary's positive rate is at most ``max_drop``
below production's (point estimates; the intervals are reported beside them) and its correction
rate at most ``max_correction_rise`` above, otherwise roll the canary back. The decision and its
numbers go into the audit log (:func:`decide_and_apply`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

from sqlalchemy.orm import Session

from feedback.attribution import feedback_by_version, served_counts
from feedback.registry import get_head
from feedback.transitions import end_canary, promote


@dataclass(frozen=True)
class CanaryRule:
    """The decision rule, fixed in advance.

    Attributes:
        min_samples: ratings each of production and canary needs before a decision.
        max_drop: largest allowed drop of the positive-rating rate (absolute, 0..1).
        max_correction_rise: largest allowed rise of the correction rate (absolute, 0..1).
    """

    min_samples: int = 50
    max_drop: float = 0.05
    max_correction_rise: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        """The rule as stored with the canary."""
        return asdict(self)


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion (95 % by default); ``(0, 1)`` when ``n`` is 0."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class VersionMetrics:
    """Live metrics of one version.

    Attributes:
        number: version number. served: interactions it answered. ratings: ratings of them.
        positive_rate, positive_interval: share of good ratings and its 95 % Wilson interval.
        correction_rate, correction_interval: corrections per served interaction, same.
    """

    number: int
    served: int
    ratings: int
    positive_rate: float | None
    positive_interval: tuple[float, float]
    correction_rate: float | None
    correction_interval: tuple[float, float]


def version_metrics(session: Session, application: str, name: str) -> dict[int, VersionMetrics]:
    """:class:`VersionMetrics` of every version of ``name`` that served something."""
    items, served = feedback_by_version(session, application, name), served_counts(session, application, name)
    out = {}
    for number in sorted(set(items) | set(served)):
        rows = items.get(number, [])
        good = sum(1 for r in rows if r.kind == "rating" and r.good)
        rated = sum(1 for r in rows if r.kind == "rating")
        corrected = len({r.interaction_id for r in rows if r.kind == "correction"})
        n = served.get(number, 0)
        out[number] = VersionMetrics(number, n, rated, good / rated if rated else None, wilson(good, rated),
                                     corrected / n if n else None, wilson(corrected, n))
    return out


@dataclass(frozen=True)
class Decision:
    """What the rule says now: ``wait``, ``promote`` or ``rollback``, why, and the numbers."""

    action: Literal["wait", "promote", "rollback", "none"]
    reason: str
    production: VersionMetrics | None
    canary: VersionMetrics | None


def decide(rule: CanaryRule, production: VersionMetrics | None, canary: VersionMetrics | None) -> Decision:
    """Apply ``rule`` to the two versions' metrics (pure)."""
    if production is None or canary is None or min(production.ratings, canary.ratings) < rule.min_samples:
        have = (production.ratings if production else 0, canary.ratings if canary else 0)
        return Decision("wait", f"ratings so far: production {have[0]}, canary {have[1]}; the rule needs "
                                f"{rule.min_samples} each", production, canary)
    drop = production.positive_rate - canary.positive_rate
    rise = (canary.correction_rate or 0.0) - (production.correction_rate or 0.0)
    numbers = (f"positive rate {canary.positive_rate:.3f} {_ci(canary.positive_interval)} vs production "
               f"{production.positive_rate:.3f} {_ci(production.positive_interval)}; correction rate "
               f"{canary.correction_rate or 0:.3f} vs {production.correction_rate or 0:.3f}")
    if drop > rule.max_drop:
        return Decision("rollback", f"positive rate dropped {drop:.3f} > max_drop {rule.max_drop}: {numbers}",
                        production, canary)
    if rise > rule.max_correction_rise:
        return Decision("rollback", f"correction rate rose {rise:.3f} > {rule.max_correction_rise}: {numbers}",
                        production, canary)
    return Decision("promote", f"within the rule (drop {drop:.3f} <= {rule.max_drop}): {numbers}", production, canary)


def _ci(interval: tuple[float, float]) -> str:
    return f"[{interval[0]:.3f}, {interval[1]:.3f}]"


def decide_and_apply(session: Session, application: str, name: str, actor: str = "canary-rule") -> Decision:
    """Judge the running canary of ``name`` by its stored rule; promote it or roll it back (audited,
    the numbers in the event's details); nothing is changed while the rule says ``wait``."""
    head = get_head(session, application, name)
    if head.canary is None:
        return Decision("none", f"{name} has no canary running", None, None)
    rule = CanaryRule(**(head.canary_rule or {}))
    metrics = version_metrics(session, application, name)
    decision = decide(rule, metrics.get(head.production), metrics.get(head.canary))
    details = {"rule": rule.to_dict(), "production": asdict(decision.production) if decision.production else None,
               "canary": asdict(decision.canary) if decision.canary else None}
    if decision.action == "promote":
        promote(session, application, name, head.canary, actor=actor, reason=decision.reason, details=details)
    elif decision.action == "rollback":
        end_canary(session, application, name, actor=actor, reason=decision.reason, details=details)
    return decision
