"""Change completion (issue 17): the rate base vs tuned with intervals, the per-task tests left failing or
broken, and the report section present only for change tasks. Hand-built rows: no model, no sandbox."""

from __future__ import annotations

import json

import pytest

from sdk.eval.change import (
    change_completion_section,
    completion_counts,
    sample_completed,
)
from sdk.eval.html import render_html
from sdk.eval.records import EvalRow
from sdk.eval.report import build_report, print_summary
from sdk.eval.run import compare, evaluate
from sdk.rewards.result import RewardResult, RewardStatus
from sdk.tasks.change import ChangeVerifier
from sdk.tasks.records import Message, Source, Split, Task

NEW = "tests/test_ops.py::test_mul"
OLD = "tests/test_text.py::test_concat"
DIFF = "--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1 +1,2 @@\n def add(a, b):\n+<script>alert(1)</script>\n"


def change_row(model: str, i: int, outcome: str, split: Split = Split.HELDOUT, diff: str = DIFF) -> EvalRow:
    """One change-task row with one sample. ``outcome``: ``done`` (all fail-to-pass pass, nothing broken),
    ``f2p`` (a fail-to-pass test still fails), ``p2p`` (fail-to-pass pass, a pass-to-pass test broken),
    ``flag`` (everything passes but the diff edited tests), ``none`` (not judged)."""
    frac, broken = {"done": (1.0, 0.0), "f2p": (0.0, 0.0), "p2p": (1.0, 1.0), "flag": (1.0, 0.0),
                    "none": (0.0, 0.0)}[outcome]
    ok = outcome in ("done", "flag")
    reward = None if outcome == "none" else (1.0 if ok else 0.5)
    return EvalRow(task_id=f"change-{i}", domain="calc/changes", split=split, model=model, completions=(diff,),
                   rewards=(reward,), passed=(ok,), statuses=("ok" if ok else "failed",),
                   flags=(("edits_tests",) if outcome == "flag" else (),),
                   components=({"applies": 1.0, "f2p_frac": frac, "regressions": broken},),
                   verifier_kind="change",
                   fail_to_pass_failing=((NEW,) if outcome == "f2p" else (),),
                   pass_to_pass_broken=((OLD,) if outcome == "p2p" else (),))


def rows_of(model: str, outcomes: list[str], split: Split = Split.HELDOUT, start: int = 0) -> list[EvalRow]:
    return [change_row(model, i, o, split) for i, o in enumerate(outcomes, start)]


BASE = rows_of("base", ["f2p", "f2p", "done", "p2p", "none"]) + rows_of("base", ["done", "f2p"], Split.OOD, 10)
TUNED = rows_of("tuned", ["done", "p2p", "done", "flag", "done"]) + rows_of("tuned", ["done", "done"], Split.OOD, 10)


def test_a_sample_completes_only_with_every_fail_to_pass_passing_nothing_broken_and_no_flag():
    assert [sample_completed(change_row("m", 0, o), 0) for o in ("done", "f2p", "p2p", "flag", "none")] == [
        True, False, False, False, None]
    assert completion_counts(change_row("m", 0, "none")) == (0, 0)


def test_rate_base_vs_tuned_per_split_with_intervals_and_a_paired_difference():
    sec = change_completion_section({"base": BASE, "tuned": TUNED}, n_resamples=300)
    held = sec["by_split"]["heldout"]
    assert held["n_tasks"] == 4  # change-4 has no judged base sample: left out, as for pass@k
    assert held["base"]["value"] == pytest.approx(1 / 4) and held["tuned"]["value"] == pytest.approx(2 / 4)
    assert held["delta"]["value"] == pytest.approx(1 / 4)
    for est in (held["base"], held["tuned"], held["delta"]):
        assert est["low"] <= est["value"] <= est["high"] and est["high"] > est["low"] and est["n"] == 4
    ood = sec["by_split"]["ood"]
    assert ood["base"]["value"] == pytest.approx(0.5) and ood["tuned"]["value"] == 1.0
    assert ood["tuned"]["method"] == "wilson" and ood["tuned"]["low"] < 1.0  # no spread: not a point
    assert sec["by_split"]["all"]["n_tasks"] == 6 and sec["tasks_total"] == 6


def test_per_task_rows_name_the_tests_left_failing_and_broken_and_carry_the_diff():
    sec = change_completion_section({"base": BASE, "tuned": TUNED}, n_resamples=100)
    tasks = {t["task_id"]: t for t in sec["tasks"]}
    assert [t["split"] for t in sec["tasks"]][:4] == ["heldout"] * 4  # held-out first
    assert tasks["change-0"]["base"]["fail_to_pass_failing"] == [NEW] and tasks["change-0"]["tuned"]["completed"]
    assert tasks["change-1"]["tuned"]["pass_to_pass_broken"] == [OLD]
    assert tasks["change-1"]["tuned"]["fail_to_pass_failing"] == [] and not tasks["change-1"]["tuned"]["completed"]
    assert tasks["change-3"]["tuned"]["flags"] == ["edits_tests"] and tasks["change-3"]["tuned"]["completed"] is False
    assert tasks["change-0"]["tuned"]["diff"] == DIFF and tasks["change-0"]["tuned"]["diff_truncated"] is False
    long = change_completion_section({"base": [change_row("base", 0, "f2p", diff=DIFF * 50)],
                                      "tuned": [change_row("tuned", 0, "done")]}, max_chars=100)
    side = long["tasks"][0]["base"]
    assert len(side["diff"]) == 100 and side["diff_truncated"] and side["diff_chars"] == len(DIFF) * 50


def test_the_report_shows_the_section_escaped_and_truncation_said():
    base = BASE + [change_row("base", 20, "f2p", diff=DIFF * 200)]
    tuned = TUNED + [change_row("tuned", 20, "done")]
    rep = build_report(compare(base, tuned, n_resamples=100), rows=base + tuned,
                       checkpoint_rows={"base": base, "tuned": tuned})
    doc = json.loads(rep.to_json_str())
    assert doc["change_completion"]["by_split"]["heldout"]["n_tasks"] == 5
    page = render_html(rep)
    section = page.split('<section id="change-completion">')[1].split("</section>")[0]
    assert "fail-to-pass" in section.lower() and "pass-to-pass" in section.lower()
    assert f"<code>{NEW}</code>" in section and f"<code>{OLD}</code>" in section
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in section
    assert 'data-truncated="true"' in section and "diff truncated" in section
    assert render_html(doc) == render_html(rep)  # report.json read back renders the same page
    from io import StringIO

    from rich.console import Console

    out = StringIO()
    print_summary(rep, Console(file=out, width=200))
    assert "change completion rate (heldout, 5 tasks)" in out.getvalue()


def test_no_change_tasks_no_section(report_inputs):
    rows = report_inputs["rows"]
    by_label = {m: [r for r in rows if r.model == m] for m in ("base", "tuned")}
    rep = build_report(**report_inputs, checkpoint_rows=by_label)
    assert rep.change_completion is None and "change_completion" not in rep.to_json()
    assert 'id="change-completion"' not in render_html(rep)


def test_evaluate_records_the_verifier_kind_and_the_change_rewards_test_names():
    verifier = ChangeVerifier(files={"calc/ops.py": "def add(a, b):\n    return a + b\n"},
                              tests={"tests/test_ops.py": "def test_mul():\n    pass\n"}, fail_to_pass=(NEW,))
    task = Task(domain="calc/changes", prompt=(Message(role="user", content="Add mul"),), verifier=verifier,
                reference=DIFF, source=Source(connector="git_history"), split=Split.HELDOUT)
    result = RewardResult(score=0.5, status=RewardStatus.FAILED, components={"f2p_frac": 1.0, "regressions": 1.0},
                          fail_to_pass_failing=(), pass_to_pass_broken=(OLD,))
    rows = evaluate([task], lambda prompts, n: [[(DIFF, 5)] * n for _ in prompts],
                    lambda ts, cs: [result] * len(cs), "tuned", 2, progress=False)
    assert rows[0].verifier_kind == "change" and rows[0].pass_to_pass_broken == ((OLD,), (OLD,))
    assert rows[0].fail_to_pass_failing == ((), ()) and completion_counts(rows[0]) == (2, 0)
