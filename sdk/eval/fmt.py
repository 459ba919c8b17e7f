"""Formatting an estimate for a terminal or a page (shared by the summary, the HTML and ``runs``)."""

from __future__ import annotations

from collections.abc import Mapping

from sdk.eval.records import Estimate


def fmt_est(est: Mapping[str, float] | Estimate, signed: bool = False, sep: str = ", ") -> str:
    """``0.40 [0.25, 0.55]`` (signed: ``+0.10 [-0.05, +0.25]``); ``sep`` between the bounds.

    ``est``: an :class:`~sdk.eval.records.Estimate` or its JSON form (keys ``value``, ``low``, ``high``).
    """
    if isinstance(est, Estimate):
        est = est.model_dump()
    f = "{:+.2f}" if signed else "{:.2f}"
    return f"{f.format(est['value'])} [{f.format(est['low'])}{sep}{f.format(est['high'])}]"
