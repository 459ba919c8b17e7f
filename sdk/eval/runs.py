"""Compare several runs from their ``report.json`` files (or report dicts from a lineage store).

One row per run: held-out pass@1 of base and tuned with the paired gain and its interval,
regressions, gate verdict, training compute and the marginal return. The lineage store (in
``feedback``) keeps the reports; this module only reads the report schema, so ``sdk`` stays
free of ``feedback`` imports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from rich.console import Console
from rich.table import Table

from sdk.eval.records import EvalError
from sdk.eval.fmt import fmt_est
from sdk.eval.report_model import SCHEMA, EvalReport


def load_report(path: str | Path) -> dict[str, Any]:
    """Read a ``report.json`` (or a run folder holding one).

    Raises:
        EvalError: missing, not JSON, or not a tuneloop report.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "report.json"
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise EvalError(f"cannot read report {path}: {exc}", "pass a run folder or its report.json") from exc
    if not isinstance(report, dict) or report.get("schema") != SCHEMA:
        raise EvalError(f"{path} is not a {SCHEMA} report", "pass a report.json written by tuneloop")
    return report


def compare_runs(reports: Mapping[str, Mapping[str, Any] | EvalReport]) -> list[dict[str, Any]]:
    """One summary row per run, in the order given.

    Args:
        reports: ``{run label: report}``, each an :class:`EvalReport` or its JSON form (a
            ``report.json`` read by :func:`load_report`, or a dict from a lineage store).
    Returns:
        Dicts with ``run, heldout_tasks, base, tuned, gain`` (estimate dicts or ``None``),
        ``regressions``, ``gate`` (``passed``/``failed``/``disabled``/``none``), ``train_compute_s``,
        ``pp_per_hour`` (whole run: base to tuned), ``recommendation``.
    """
    rows = []
    for label, rep in reports.items():
        rep = rep.to_json() if isinstance(rep, EvalReport) else rep
        held = rep.get("summary", {}).get("heldout", {})
        gate = rep.get("gate")
        points = rep.get("cost_benefit", {}).get("points", [])
        segs = rep.get("cost_benefit", {}).get("segments", [])
        gains = [s["gain_pp"] for s in segs]
        compute = sum(s["compute_s"] for s in segs)
        rows.append({
            "run": label, "heldout_tasks": held.get("n_tasks", 0),
            "base": held.get("base", {}).get("1"), "tuned": held.get("tuned", {}).get("1"),
            "gain": held.get("delta", {}).get("1"),
            "regressions": rep.get("diff", {}).get("gated_counts", {}).get("regression", 0),
            "gate": "none" if not gate else ("disabled" if not gate["enabled"] else
                                            "passed" if gate["passed"] else "failed"),
            "train_compute_s": points[-1]["compute_s"] if points else 0.0,
            "pp_per_hour": sum(gains) / (compute / 3600.0) if compute > 0 else None,
            "recommendation": rep.get("cost_benefit", {}).get("recommendation", ""),
        })
    return rows


def print_runs(rows: Sequence[Mapping[str, Any]], console: Console | None = None) -> None:
    """A rich table of :func:`compare_runs` rows."""
    table = Table(title="runs: held-out pass@1")
    for col in ("run", "tasks", "base", "tuned", "gain", "regr.", "gate", "compute s", "pp/h"):
        table.add_column(col, justify="left" if col in ("run", "gate") else "right", no_wrap=col != "run")
    est = lambda e, signed=False: "-" if e is None else fmt_est(e, signed, sep=",")  # noqa: E731
    for r in rows:
        table.add_row(r["run"], str(r["heldout_tasks"]), est(r["base"]), est(r["tuned"]), est(r["gain"], True),
                      str(r["regressions"]), r["gate"], f"{r['train_compute_s']:.0f}",
                      "-" if r["pp_per_hour"] is None else f"{r['pp_per_hour']:+.1f}")
    (console or Console()).print(table)
