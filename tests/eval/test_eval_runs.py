"""Comparison across runs from their report.json files."""

import io
import json

import pytest
from rich.console import Console

from sdk.eval.records import EvalError
from sdk.eval.report import build_report, write_report
from sdk.eval.runs import compare_runs, load_report, print_runs


def test_compare_two_runs(tmp_path, report_inputs):
    write_report(tmp_path / "a", build_report(**report_inputs))
    write_report(tmp_path / "b", build_report(report_inputs["comparison"]))   # no gate, no costs
    rows = compare_runs({"a": load_report(tmp_path / "a"), "b": load_report(tmp_path / "b" / "report.json")})
    a, b = rows
    assert a["run"] == "a" and a["heldout_tasks"] == 11 and a["regressions"] == 1 and a["gate"] == "failed"
    assert a["gain"]["value"] == pytest.approx(4 / 11) and a["train_compute_s"] == pytest.approx(420.0)
    assert a["pp_per_hour"] == pytest.approx(100 * 4 / 11 / (420 / 3600))
    assert b["gate"] == "none" and b["pp_per_hour"] is None
    buf = io.StringIO()
    print_runs(rows, Console(file=buf, width=120, color_system=None))
    assert "failed" in buf.getvalue() and "+0.36" in buf.getvalue()


def test_load_report_rejects_other_files(tmp_path):
    with pytest.raises(EvalError, match="cannot read report"):
        load_report(tmp_path)
    (tmp_path / "report.json").write_text(json.dumps({"schema": "other"}))
    with pytest.raises(EvalError, match="is not a tuneloop.report/1 report"):
        load_report(tmp_path)
