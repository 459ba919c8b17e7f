"""build_report / write_report / print_summary, and the cost-benefit rules."""

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from sdk.eval.cost import Checkpoint, falloff, marginal_returns, recommendation
from sdk.eval.records import Estimate
from sdk.eval.report import EvalReport, build_report, print_summary, write_report


def test_build_report_sections(report_inputs):
    rep = build_report(**report_inputs)
    assert isinstance(rep, EvalReport) and rep.schema_ == "tuneloop.report/1"
    assert set(rep.summary) == {"heldout", "ood"}
    held = rep.summary["heldout"]
    assert held.n_tasks == 11
    assert rep.pass_at("heldout", "base") == pytest.approx(3 / 11)
    assert rep.pass_at("heldout", "tuned", k=1) == pytest.approx(7 / 11)
    assert rep.pass_at("heldout", "delta") == pytest.approx(4 / 11)
    assert rep.pass_at("heldout", "tuned", k=5) is None and rep.pass_at("nosuchsplit", "base") is None
    assert rep.heldout_pass_at_1() == {"base": pytest.approx(3 / 11), "tuned": pytest.approx(7 / 11)}
    assert [d["task_id"] for d in rep.diff["regressions"]] == ["heldout-8"]
    assert rep.diff["gated_counts"]["unjudged"] == 1 and rep.regressions == 1
    assert rep.gate.passed is False and rep.gate.regressions == 1
    assert rep.gate_verdict == "failed" and rep.promotable is False
    assert rep.tasks["quarantined_total"] == 3 and rep.tasks["totals"]["heldout"] == 11
    sft = rep.training["sft"]
    assert list(sft)[0] == "loss" and len(sft["loss"]) == 10 and "train_loss" not in sft
    assert rep.training["grpo"]["reward"][0] == [1.0, 0.25] and "kl" not in rep.training["grpo"]
    assert rep.flags["tuned"] == {"exit_zero": 1} and rep.flags["base"] == {}
    assert rep.cost["totals"]["wall_s"] == pytest.approx(284.0)
    assert rep.cost["totals"]["tokens_trained"] == 49_000
    pts = rep.cost_benefit["points"]
    assert [p["label"] for p in pts] == ["base", "tuned"] and pts[1]["compute_s"] == pytest.approx(420.0)
    assert rep.meta["<script>"] == "x<y"
    assert rep.recommendation == rep.cost_benefit["recommendation"] != ""
    json.dumps(rep.to_json(), allow_nan=False)  # strictly serialisable


GOLDEN = Path(__file__).parent / "golden"
SCHEDULE = {"verdict": "the arms tie", "arms": {"rl": {"label": "rl", "curve": [[1, 0.5], [2, 0.6]]}},
            "path": Path("/x")}
KEYS = ["schema", "created", "meta", "summary", "overall", "n_samples", "ks", "by_split", "by_domain", "diff",
        "gate", "tasks", "training", "schedule_comparison", "flags", "side_effects", "cost", "cost_benefit"]
NEW_KEYS = ["rl_vs_sft", "honesty", "retry", "per_task"]  # issue 15: new keys only, after the old ones


@pytest.mark.parametrize("full", [True, False])
def test_report_json_is_the_dict_report_of_before(report_inputs, full):
    """The record's JSON is key for key what build_report returned as a dict before EvalReport
    (golden files written by the dict version, ``created`` left out), in the same key order."""
    if full:
        rep = build_report(**report_inputs, training_flags={"grpo step 1": {"exit_zero": 2}},
                           schedule_comparison=SCHEDULE)
    else:
        rep = build_report(report_inputs["comparison"])
    doc = rep.model_dump(mode="json")
    assert doc == rep.to_json() and list(doc) == KEYS + NEW_KEYS
    golden = json.loads((GOLDEN / f"report_{'full' if full else 'min'}.json").read_text())
    old = {k: v for k, v in doc.items() if k not in ("created", *NEW_KEYS)}
    knee = old["cost_benefit"].pop("knee")  # a new key inside an old section
    assert old == golden and knee["at"] is None and "cannot show" in knee["text"]
    assert EvalReport.model_validate(golden | {"created": "x"}).rl_vs_sft is None, "an old report.json still reads"
    assert EvalReport.model_validate(doc).to_json() == doc  # report.json reads back to the same record


def test_write_report_is_self_contained_and_escaped(tmp_path, report_inputs):
    rep = build_report(**report_inputs)
    jpath, hpath = write_report(tmp_path / "run", rep)
    assert json.loads(jpath.read_text()) == rep.to_json()
    assert list(json.loads(jpath.read_text())) == KEYS + NEW_KEYS
    page = hpath.read_text()
    assert not re.search(r"(src|href)=\"(https?:)?//", page) and "http://" not in page and "https://" not in page
    assert "<script" not in page and "&lt;script&gt;" in page
    for sid in ("summary", "domains", "regressions", "tasks", "training", "flags", "cost", "cost-benefit"):
        assert f'<section id="{sid}">' in page
    plots = re.findall(r'data-plot="([\w-]+)"[^>]*src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert {name for name, _ in plots} == {"summary", "training-sft", "training-grpo", "benefit"}
    assert all(len(b64) > 1000 for _, b64 in plots)
    assert "heldout-8" in page  # the regression is listed
    assert "reference fails its tests" in page


def test_report_without_optional_inputs_still_renders(tmp_path, report_inputs):
    rep = build_report(report_inputs["comparison"])
    assert rep.gate is None and rep.training == {} and rep.cost["stages"] == []
    assert rep.gate_verdict == "none" and rep.promotable is None
    _, hpath = write_report(tmp_path, rep)
    page = hpath.read_text()
    assert "no training logs given" in page and "no costs recorded" in page


def test_disabled_gate_decides_nothing(report_inputs):
    from sdk.eval.config import GateConfig
    from sdk.eval.gate import check_gate

    gate = check_gate(GateConfig(enabled=False, max_regressions=0), report_inputs["comparison"])
    rep = build_report(**{**report_inputs, "gate": gate})
    assert rep.gate_verdict == "disabled" and rep.promotable is None and rep.gate.reasons


def test_print_summary_mentions_decision(report_inputs):
    buf = io.StringIO()
    print_summary(build_report(**report_inputs), Console(file=buf, width=80, color_system=None))
    out = buf.getvalue()
    assert "heldout" in out and "0.27 [0.00,0.55]" in out and "+0.36 [" in out and "…" not in out
    assert "FAILED" in out and "1 regressed" in out
    assert "Review before shipping" in out or "Not proven" in out


def pts(*vals):
    return [Checkpoint(label=name, compute_s=c, heldout_pass_at_1=p) for name, c, p in vals]


def test_marginal_returns_and_falloff():
    segs = marginal_returns(pts(("base", 0, 0.10), ("sft", 3600, 0.30), ("grpo", 7200, 0.32),
                                ("skipped", 9000, None)))
    assert [(s["from"], s["to"]) for s in segs] == [("base", "sft"), ("sft", "grpo")]
    assert segs[0]["pp_per_hour"] == pytest.approx(20.0) and segs[1]["gain_pp"] == pytest.approx(2.0)
    assert falloff(segs) == "grpo"                                   # 2 pp/h <= 25% of 20 pp/h
    assert falloff(marginal_returns(pts(("a", 0, 0.1), ("b", 10, 0.2), ("c", 20, 0.28)))) is None
    assert falloff(marginal_returns(pts(("a", 0, 0.1), ("b", 10, 0.2), ("c", 20, 0.19)))) == "c"


def est(v, lo, hi, n=40):
    return Estimate(value=v, low=lo, high=hi, n=n)


@pytest.mark.parametrize("gain,regs,start", [
    (est(0.2, 0.05, 0.35), 0, "Ship"),
    (est(0.2, 0.05, 0.35), 2, "Review before shipping"),
    (est(0.05, -0.05, 0.15), 0, "Not proven"),
    (est(-0.05, -0.15, 0.05), 0, "Do not ship"),
    (None, 0, "No held-out task"),
])
def test_recommendation_sentences(gain, regs, start):
    assert recommendation(gain, regs, [], None).startswith(start)


def test_recommendation_names_the_falloff_point():
    segs = marginal_returns(pts(("base", 0, 0.1), ("sft", 100, 0.3), ("grpo", 300, 0.3)))
    text = recommendation(est(0.2, 0.1, 0.3), 0, segs, falloff(segs))
    assert "fall off at 'grpo'" in text and "stop at 'sft'" in text


def test_stage_cost_from_pipeline_stats_infers_kind():
    from sdk.eval.cost import stage_cost
    c = stage_cost({"stage": "rl", "wall_s": 10.0, "cpu_s": 18.5, "tokens_trained": 7, "extra": {"x": 1}})
    assert (c.kind, c.compute_s, c.tokens_trained) == ("train", 18.5, 7)
    assert stage_cost({"stage": "tasks"}).kind == "data" and stage_cost({"stage": "eval"}).kind == "eval"
    assert stage_cost({"stage": "sft", "cpu_s": 5.0, "gpu_s": 2.0}).compute_s == 2.0


def test_checkpoint_from_rows_counts_heldout_and_flags():
    from eval_rows import make_rows
    from sdk.eval.cost import checkpoint_from_rows
    from sdk.tasks.records import Split
    rows = make_rows("sft", ["11", "10", "--", "H0"]) + make_rows("sft", ["00"], Split.OOD)
    cp = checkpoint_from_rows("sft", rows, 120.0)
    assert cp.heldout_pass_at_1 == pytest.approx((1 + 0.5 + 0) / 3) and cp.flags == {"exit_zero": 1}


def test_side_effects_section_from_components(tmp_path, report_inputs):
    rep = build_report(**report_inputs)
    reg = rep.side_effects["tuned"]["regressions"]
    assert reg == {"mean": 1.0, "nonzero": 3, "samples": 3}
    assert rep.side_effects["base"] == {}
    page = write_report(tmp_path, rep)[1].read_text()
    assert '<section id="side-effects">' in page and "1.000 (3/3)" in page


def test_training_flags_order_in_flags_table(report_inputs):
    rep = build_report(**report_inputs, training_flags={"grpo step 1": {"exit_zero": 2}, "grpo step 2": {}})
    assert list(rep.flags) == ["base", "grpo step 1", "grpo step 2", "tuned"]


def test_verifier_strength_goes_into_the_tasks_section_and_html(tmp_path, report_inputs):
    strength = {"0:pytest:py": {"scored": 4, "killed": 30, "total": 32, "score": 0.9375, "weak_tests": 1, "skipped": 0}}
    rep = build_report(**report_inputs, task_strength=strength)
    assert rep.tasks["strength"] == strength and rep.mutation_scores == {"0:pytest:py": 0.9375}
    assert EvalReport.model_validate(rep.to_json()).mutation_scores == rep.mutation_scores
    html = write_report(tmp_path, rep)[1].read_text()
    assert 'id="strength-table"' in html and "30/32" in html and "94%" in html
    # without it (and in report.json files written before), no key and nothing rendered
    old = build_report(**report_inputs)
    assert "strength" not in old.tasks and old.mutation_scores == {}
    assert "strength-table" not in write_report(tmp_path / "old", old)[1].read_text()
