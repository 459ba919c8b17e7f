"""Issue 15: evaluated checkpoints (base, SFT, RL midway, RL end), the knee, RL vs SFT, and the
honesty checks of the report (flagged gains, all-zero baseline, grader self-test, task names)."""

import json

import pytest

from eval_rows import make_rows
from sdk.config import GateConfig
from sdk.eval.checkpoints import (
    checkpoint_curve,
    demote_flagged,
    grader_self_test,
    honesty_section,
    retry_section,
    rl_vs_sft,
    task_name,
)
from sdk.eval.cost import falloff, knee, marginal_returns
from sdk.eval.records import EvalRow, save_rows
from sdk.eval.run import compare
from sdk.run.finished import report_from_run
from sdk.tasks.records import Split

N = 20


def outcomes(passing: int, n: int = N) -> list[str]:
    return ["1"] * passing + ["0"] * (n - passing)


def test_four_points_and_the_knee():
    rows = {"base": make_rows("base", outcomes(1)), "sft": make_rows("sft", outcomes(9)),
            "rl_midway": make_rows("rl_midway", outcomes(10)), "tuned": make_rows("tuned", outcomes(10))}
    pts = checkpoint_curve(rows, {"base": 0, "sft": 100, "rl_midway": 300, "tuned": 500})
    assert [p.label for p in pts] == ["base", "sft", "rl_midway", "tuned"]
    assert [p.heldout_pass_at_1 for p in pts] == pytest.approx([0.05, 0.45, 0.5, 0.5])
    segs = marginal_returns(pts)
    at = falloff(segs)
    assert at == "rl_midway", "5 pp in 200 s after 40 pp in 100 s is under a quarter of the first rate"
    k = knee(pts, segs, at)
    assert k["at"] == "sft" and k["points"] == 4 and "after 'sft'" in k["text"]
    two = knee(pts[:2], segs[:1], None)
    assert two["at"] is None and "cannot show" in two["text"]


def test_rl_vs_sft_says_plainly_whether_rl_earned_its_place():
    sft = make_rows("sft", outcomes(5, 60))
    better = make_rows("tuned", outcomes(25, 60))
    same = make_rows("tuned", outcomes(5, 60))
    won = rl_vs_sft(sft, better, n_resamples=500)
    assert won["earned"] and won["delta"]["low"] > 0 and won["verdict"].startswith("RL earned its place")
    tie = rl_vs_sft(sft, same, n_resamples=500)
    assert not tie["earned"] and "did not earn its place" in tie["verdict"]
    assert rl_vs_sft([], better) is None


def test_flagged_gains_do_not_count():
    base = make_rows("base", outcomes(0, 4))
    tuned = make_rows("tuned", ["1", "1", "0", "0"])
    tuned = [tuned[0].model_copy(update={"flags": (("hardcoded_outputs",),)}), *tuned[1:]]
    raw = compare(base, tuned, n_resamples=100)
    h = honesty_section(raw, {"base": base, "tuned": tuned})
    assert h["flagged_gains"] == 1 and h["flagged_gain_ids"] == ["heldout-0"]
    honest = compare(base, demote_flagged(tuned), n_resamples=100)
    assert honest.by_split["heldout"].delta[1].value == pytest.approx(0.25), "only the clean gain counts"


def test_all_zero_baseline_and_grader_self_test_are_called_out():
    base = make_rows("base", outcomes(0, 5))
    tuned = make_rows("tuned", outcomes(2, 5))
    ref = make_rows("reference", ["1", "1", "1", "1", "0"])
    h = honesty_section(compare(base, tuned, n_resamples=100), {"base": base, "tuned": tuned, "reference": ref})
    assert h["all_zero_baseline"] and any("passed none of the 5" in w for w in h["warnings"])
    assert h["grader_self_test"] == {"passed": 4, "total": 5, "rate": 0.8, "failed": 1, "failed_ids": ["heldout-4"]}
    assert any("self-test is 80%" in w for w in h["warnings"])
    assert grader_self_test(make_rows("reference", outcomes(3, 3)))["rate"] == 1.0


def test_retry_section_counts_second_attempts():
    rows = [r.model_copy(update={"retry": (r.passed[0] or i < 2,)})
            for i, r in enumerate(make_rows("tuned", outcomes(1, 10)))]
    sec = retry_section({"tuned": rows}, n_resamples=100)
    assert sec["tuned"]["heldout"]["first"]["value"] == pytest.approx(0.1)
    assert sec["tuned"]["heldout"]["after_retry"]["value"] == pytest.approx(0.2)
    assert retry_section({"tuned": make_rows("tuned", outcomes(1, 3))}) is None


def test_task_names_from_locators():
    assert task_name("acme_ledger/money.py::round_cents", "x") == {"name": "round_cents",
                                                                    "file": "acme_ledger/money.py"}
    assert task_name("", "abc") == {"name": "abc", "file": ""}


def write_json(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_report_from_run_with_checkpoints(tmp_path):
    for label, passing in (("base", 0), ("sft", 6), ("rl_midway", 7), ("tuned", 7)):
        save_rows(tmp_path / "eval" / f"{label}.jsonl", make_rows(label, outcomes(passing, 10)))
    save_rows(tmp_path / "eval" / "reference.jsonl", make_rows("reference", outcomes(10, 10)))
    write_json(tmp_path / "state" / "sft.json", {"stats": {"stage": "sft", "cpu_s": 100.0}})
    write_json(tmp_path / "state" / "rl.json", {"stats": {"stage": "rl", "cpu_s": 400.0,
                                                          "midway": {"step": 4, "compute_s": 150.0},
                                                          "validation": {"tasks": 5}}})
    report, *_ , hpath = report_from_run(tmp_path, GateConfig(), n_resamples=200)
    pts = report.cost_benefit["points"]
    assert [(p["label"], p["compute_s"]) for p in pts] == [("base", 0.0), ("sft", 100.0), ("rl_midway", 250.0),
                                                           ("tuned", 500.0)]
    assert report.cost_benefit["knee"]["at"] == "sft"
    assert report.rl_earned is False and report.rl_vs_sft["verdict"].startswith("RL not proven")
    assert report.honesty["grader_self_test"]["rate"] == 1.0 and report.honesty["validation"] == {"tasks": 5}
    assert len(report.per_task) == 10 and report.per_task[0]["base"]["stop"] == "unknown"
    page = hpath.read_text()
    for sid in ("honesty", "rl-vs-sft", "per-task"):
        assert f'<section id="{sid}">' in page
    assert 'id="knee"' in page


def test_old_rows_still_load_and_new_fields_are_checked():
    row = make_rows("base", ["1"])[0]
    data = row.model_dump(mode="json")
    for key in ("stop_reasons", "details", "retry"):
        data.pop(key)
    assert EvalRow.model_validate(data).stop_reasons == ()
    with pytest.raises(ValueError, match="stop_reasons"):
        EvalRow.model_validate({**data, "stop_reasons": ["eos", "eos"]})
    assert Split.HELDOUT.value == "heldout"
