"""Report plots: matplotlib with the Agg backend, returned as base64 PNG for embedding.

Every function takes plain report data (see :func:`sdk.eval.report.build_report`) and returns
a ``data:image/png;base64,...`` URI, or ``None`` when there is nothing to draw. Nothing is
written to disk and no display is needed.
"""

from __future__ import annotations

import base64
import io
from typing import Any

import matplotlib

matplotlib.use("Agg")  # must precede pyplot: no display on servers
import matplotlib.pyplot as plt  # noqa: E402

BASE, TUNED = "#8c8c8c", "#1f77b4"


def _to_uri(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def summary_bars(summary: dict[str, dict]) -> str | None:
    """Base vs tuned pass@1 per split with CI error bars. ``summary``: ``split -> slice dict``."""
    names = [s for s, sl in summary.items() if "1" in sl["base"] and "1" in sl["tuned"]]
    if not names:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    width = 0.38
    for j, (side, color) in enumerate((("base", BASE), ("tuned", TUNED))):
        ests = [summary[s][side]["1"] for s in names]
        xs = [i + (j - 0.5) * width for i in range(len(names))]
        vals = [e["value"] for e in ests]
        err = [[max(0.0, e["value"] - e["low"]) for e in ests], [max(0.0, e["high"] - e["value"]) for e in ests]]
        ax.bar(xs, vals, width, yerr=err, capsize=4, color=color, label=side)
    ax.set_xticks(range(len(names)), [f"{s}\n(n={summary[s]['n_tasks']})" for s in names])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("pass@1")
    ax.legend(frameon=False)
    ax.set_title("pass@1 with 95% CI")
    return _to_uri(fig)


def curves(series: dict[str, list[list[float]]], title: str) -> str | None:
    """Training curves: ``{metric: [[step, value], ...]}``, one panel per metric (at most 4)."""
    keys = [k for k, v in series.items() if v][:4]
    if not keys:
        return None
    fig, axes = plt.subplots(1, len(keys), figsize=(3.4 * len(keys), 2.8), squeeze=False, layout="constrained")
    for ax, key in zip(axes[0], keys):
        steps, vals = zip(*series[key])
        ax.plot(steps, vals, marker="." if len(steps) < 40 else None, color=TUNED)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("step")
    fig.suptitle(title)
    return _to_uri(fig)


def benefit(points: list[dict]) -> str | None:
    """Held-out pass@1 against cumulative training compute, one marker per checkpoint."""
    pts = [p for p in points if p["heldout_pass_at_1"] is not None]
    if len(pts) < 2:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    xs = [p["compute_s"] / 3600.0 for p in pts]
    ys = [p["heldout_pass_at_1"] for p in pts]
    ax.plot(xs, ys, marker="o", color=TUNED)
    for x, y, p in zip(xs, ys, pts):
        ax.annotate(p["label"], (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xlabel("training compute (hours)")
    ax.set_ylabel("held-out pass@1")
    ax.set_ylim(0, max(1.0, max(ys)) * 1.05)
    ax.set_title("benefit vs compute")
    return _to_uri(fig)


def arm_curves(arms: dict[str, list[list[float]]], title: str, ylabel: str = "mean held-out reward") -> str | None:
    """Several runs' curves on one axis: ``{label: [[step, value], ...]}`` (the schedule comparison)."""
    drawn = {k: v for k, v in arms.items() if v}
    if not drawn:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    for (label, pts), color in zip(drawn.items(), (TUNED, "#d62728", "#2ca02c", BASE)):
        steps, vals = zip(*pts)
        ax.plot(steps, vals, marker="o", color=color, label=label)
    ax.set_xlabel("GRPO step")
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False, fontsize=8)
    ax.set_title(title)
    return _to_uri(fig)
