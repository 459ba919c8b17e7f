"""Issue 15: the run ships the adapter chosen on the validation split (eval.select), by a rule fixed
in advance, and held-out rows never steer the choice."""

import io

import pytest
from pydantic import ValidationError
from rich.console import Console

from eval_rows import make_rows
from sdk.config import EvalConfig, GateConfig, RunConfig
from sdk.eval.records import load_rows
from sdk.eval.select import choose_adapter, selection_section, validation_figures
from sdk.run.bookkeeping import write_marker
from sdk.run.context import RunInputs, StageContext, adapter_for_eval
from sdk.run.layout import RunLayout
from sdk.tasks.records import Message, Source, Split, Task, UnitTestVerifier
from sdk.tasks.taskset import TaskSet

TR = Split.TRAIN


def val(model, outcomes, reward=None):
    """Validation rows (train split); ``reward`` overrides every judged sample's reward."""
    rows = make_rows(model, outcomes, split=TR)
    if reward is None:
        return rows
    return [r.model_copy(update={"rewards": tuple(None if x is None else reward for x in r.rewards)}) for r in rows]


# ----- the rule ------------------------------------------------------------------------------
def test_higher_validation_pass_at_1_ships():
    sel = choose_adapter({"sft": val("sft", ["1", "0", "0"]), "rl_midway": val("rl_midway", ["1", "1", "0"]),
                          "rl": val("rl", ["1", "0", "0"])})
    assert (sel["chosen"], sel["decided_by"]) == ("rl_midway", "pass_at_1")
    assert sel["candidates"]["rl_midway"]["pass_at_1"] == pytest.approx(2 / 3)
    assert "rl_midway 2/3 (66.7%)" in sel["reason"] and sel["validation_tasks"] == 3


def test_a_tie_on_pass_at_1_goes_to_the_higher_mean_reward():
    sel = choose_adapter({"sft": val("sft", ["1", "0"], reward=None),
                          "rl": [r.model_copy(update={"rewards": (0.6,) if not r.passed[0] else (1.0,)})
                                 for r in val("rl", ["1", "0"])]})
    assert (sel["chosen"], sel["decided_by"]) == ("rl", "mean_reward")
    assert sel["candidates"]["rl"]["mean_reward"] == pytest.approx(0.8)


@pytest.mark.parametrize("labels, expect", [(("sft", "rl_midway", "rl"), "sft"), (("rl_midway", "rl"), "rl_midway"),
                                            (("rl", "sft"), "sft")])
def test_a_full_tie_goes_to_less_training_compute(labels, expect):
    sel = choose_adapter({lb: val(lb, ["1", "0"]) for lb in labels})
    assert (sel["chosen"], sel["decided_by"]) == (expect, "compute")


def test_without_a_midway_checkpoint_sft_and_rl_end_compete():
    sel = choose_adapter({"sft": val("sft", ["1", "1"]), "rl": val("rl", ["1", "0"])})
    assert sel["chosen"] == "sft" and set(sel["candidates"]) == {"sft", "rl"}
    assert "No RL checkpoint beat SFT-only on validation at this budget" in sel["reason"]


def test_no_validation_task_ships_the_rl_end_and_says_so():
    sel = choose_adapter({"sft": [], "rl_midway": [], "rl": []})
    assert (sel["chosen"], sel["decided_by"], sel["validation_tasks"]) == ("rl", "no_validation", 0)
    assert "No validation task was judged" in sel["reason"] and "RL end adapter ships" in sel["reason"]
    unjudged = choose_adapter({"sft": val("sft", ["-"]), "rl": val("rl", ["-"])})
    assert unjudged["decided_by"] == "no_validation"


def test_a_flagged_pass_does_not_count():
    flagged = make_rows("rl", ["H"], split=TR, flag_on="H")
    flagged = [flagged[0].model_copy(update={"passed": (True,), "rewards": (1.0,)})]
    assert validation_figures(flagged)["pass_at_1"] == 0.0


def test_held_out_and_ood_rows_are_refused():
    with pytest.raises(ValueError, match="validation"):
        choose_adapter({"sft": val("sft", ["1"]), "rl": make_rows("rl", ["1"], split=Split.HELDOUT)})
    with pytest.raises(ValueError, match="unknown candidate"):
        choose_adapter({"tuned": val("tuned", ["1"])})


def test_the_config_option():
    assert EvalConfig().select == "validation"
    assert EvalConfig(select="last").select == "last"
    with pytest.raises(ValidationError):
        EvalConfig(select="heldout")


# ----- the eval stage: choice, rows, shipped adapter -----------------------------------------
def _task(i: int, split: Split) -> Task:
    tests = {"test_f.py": f"from solution import f{i}\n\n\ndef test_f():\n    assert f{i}() == {i}\n"}
    return Task(domain="acme/x", prompt=(Message(role="user", content=f"Write f{i}."),), split=split,
                verifier=UnitTestVerifier(tests=tests, entry_point=f"f{i}", timeout_s=5.0),
                reference=f"def f{i}():\n    return {i}\n", source=Source(connector="t", locator=f"m.py::f{i}"))


def _run(tmp_path, fraction=0.3, **eval_opts):
    cfg = RunConfig.model_validate({
        "run_dir": str(tmp_path / "run"), "sources": [{"type": "jsonl", "domain": "acme/x"}],
        "tasks": {"validation_fraction": fraction}, "rl": {"eval_midway": True},
        "eval": {"self_test": False, **eval_opts}})
    layout = RunLayout(cfg.run_path)
    tasks = [_task(i, TR) for i in range(10)] + [_task(100 + i, Split.HELDOUT) for i in range(4)] + \
            [_task(200 + i, Split.OOD) for i in range(2)]
    TaskSet(tasks).save(layout.tasks_jsonl)
    for adapter in (layout.adapter("sft"), layout.midway_adapter("rl"), layout.adapter("rl")):
        adapter.mkdir(parents=True)
        (adapter / "adapter_config.json").write_text("{}")
        (adapter / "adapter_model.safetensors").write_text(str(adapter))
    console = Console(file=io.StringIO(), width=200)
    return StageContext(cfg, layout, RunInputs(layout), console, progress=False), console


def _fake_scoring(monkeypatch, table, calls):
    """text_rows faked: a sample passes when ``table[(label, split)]`` says so; every call recorded."""
    def fake(ctx, tasks, label, adapter):
        calls.append((label, adapter, [t.split.value for t in tasks]))
        return [make_rows(label, ["1" if table.get((label, t.split.value)) else "0"], split=t.split)[0]
                .model_copy(update={"task_id": t.id}) for t in tasks]

    monkeypatch.setattr("sdk.run.stage_eval.text_rows", fake)


@pytest.mark.parametrize("heldout_winner", ["sft", "rl"])
def test_held_out_rows_that_would_flip_the_choice_do_not(tmp_path, monkeypatch, heldout_winner):
    from sdk.run.stage_eval import stage_eval

    ctx, console = _run(tmp_path)
    calls = []
    loser = "rl" if heldout_winner == "sft" else "sft"
    _fake_scoring(monkeypatch, {("sft", "train"): True, (heldout_winner, "heldout"): True, ("rl", "ood"): True,
                                ("sft", "ood"): True}, calls)
    stats = stage_eval(ctx)
    sel = stats.extra["selection"]
    assert sel["chosen"] == "sft" and sel["decided_by"] == "pass_at_1", "validation alone decides"
    # one pass per candidate: its validation tasks and its held-out tasks together; the rule read the
    # validation rows only (above: the held-out winner did not win); the shipped one adds its OOD tasks
    assert [(c[0], c[2]) for c in calls] == [(lb, ["train"] * 3 + ["heldout"] * 4) for lb in ("sft", "rl_midway", "rl")] \
        + [("base", ["heldout"] * 4 + ["ood"] * 2), ("sft", ["ood"] * 2)]
    assert sel["candidates"][heldout_winner]["tasks"] == 3, "validation rows alone reach the rule"
    assert stats.extra["models"] == ["base", "sft", "rl_midway", "rl", "tuned"]
    layout = ctx.layout
    tuned, sft = load_rows(layout.eval_rows("tuned")), load_rows(layout.eval_rows("sft"))
    assert {r.split.value for r in tuned} == {"heldout", "ood"} and {r.split.value for r in sft} == {"heldout"}
    assert all(r.model == "tuned" for r in tuned)
    assert [r.passed for r in tuned if r.split == Split.HELDOUT] == [r.passed for r in sft]
    assert any(r.passed[0] for r in load_rows(layout.eval_rows(heldout_winner)))
    assert not any(r.passed[0] for r in load_rows(layout.eval_rows(loser)))
    assert adapter_for_eval(ctx.cfg, layout) == layout.adapter("sft")
    assert sorted(p.name for p in (layout.root / "eval" / "validation").iterdir()) == \
        ["rl.jsonl", "rl_midway.jsonl", "sft.jsonl"]
    assert "'sft' ships as tuned" in console.file.getvalue()


def test_a_retrained_candidate_voids_the_recorded_choice(tmp_path, monkeypatch):
    from sdk.run.stage_eval import stage_eval

    ctx, _ = _run(tmp_path)
    _fake_scoring(monkeypatch, {("sft", "train"): True}, [])
    stage_eval(ctx)
    assert adapter_for_eval(ctx.cfg, ctx.layout) == ctx.layout.adapter("sft")
    (ctx.layout.adapter("rl") / "adapter_model.safetensors").write_text("retrained, a different size")
    assert adapter_for_eval(ctx.cfg, ctx.layout) == ctx.layout.adapter("rl"), "stale choice: the newest stands"


def test_select_last_keeps_the_old_behaviour(tmp_path, monkeypatch):
    from sdk.run.stage_eval import stage_eval

    ctx, _ = _run(tmp_path, select="last")
    calls = []
    _fake_scoring(monkeypatch, {("sft", "train"): True, ("tuned", "heldout"): True}, calls)
    stats = stage_eval(ctx)
    assert "selection" not in stats.extra and not ctx.layout.selection_json.exists()
    assert [c[0] for c in calls] == ["base", "sft", "rl_midway", "tuned"] and calls[-1][1] == ctx.layout.adapter("rl")
    assert adapter_for_eval(ctx.cfg, ctx.layout) == ctx.layout.adapter("rl")
    assert not ctx.layout.eval_rows("rl").exists()


def test_an_empty_validation_split_ships_the_rl_end(tmp_path, monkeypatch):
    from sdk.run.stage_eval import stage_eval

    ctx, _ = _run(tmp_path, fraction=0.0)
    calls = []
    _fake_scoring(monkeypatch, {("rl", "heldout"): True}, calls)
    sel = stage_eval(ctx).extra["selection"]
    assert (sel["chosen"], sel["decided_by"]) == ("rl", "no_validation")
    assert [(c[0], c[2]) for c in calls] == [(lb, ["heldout"] * 4) for lb in ("sft", "rl_midway", "rl")] \
        + [("base", ["heldout"] * 4 + ["ood"] * 2), ("rl", ["ood"] * 2)], "no validation: held-out once each"
    assert adapter_for_eval(ctx.cfg, ctx.layout) == ctx.layout.adapter("rl")
    assert all(r.passed[0] for r in load_rows(ctx.layout.eval_rows("tuned")) if r.split == Split.HELDOUT)


# ----- the report ------------------------------------------------------------------------------
def test_the_report_shows_which_adapter_shipped_and_the_comparison(tmp_path, monkeypatch):
    from sdk.eval.html import render_html
    from sdk.eval.report import print_summary
    from sdk.run.bookkeeping import StageStats
    from sdk.run.finished import report_from_run
    from sdk.run.stage_eval import stage_eval

    ctx, _ = _run(tmp_path)
    _fake_scoring(monkeypatch, {("sft", "train"): True, ("rl", "heldout"): True}, [])
    stats = stage_eval(ctx)
    write_marker(ctx.layout.marker("eval"), "f", StageStats("eval", extra=stats.extra))
    report, *_ = report_from_run(ctx.layout.root, GateConfig(), n_resamples=50)
    sel = report.selection
    assert sel["chosen"] == "sft" and sel["adapter"] == "sft/adapter"
    assert sel["candidates"]["sft"]["pass_at_1"] == 1.0 and sel["candidates"]["rl"]["heldout_pass_at_1"] == 1.0
    assert sel["candidates"]["sft"]["heldout_pass_at_1"] == 0.0, "held-out shown beside, after the choice"
    assert report.to_json()["selection"] == sel
    assert report.rl_vs_sft["sft_rl"]["value"] == 1.0, "RL vs SFT-only reads the RL end's own rows"
    assert [p["label"] for p in report.cost_benefit["points"]] == ["base", "sft", "rl_midway", "rl"]
    out = Console(file=io.StringIO(), width=300)
    print_summary(report, out)
    assert "shipped adapter (tuned): sft (sft/adapter); 'sft' ships as tuned" in out.file.getvalue()
    html = render_html(report)
    assert 'id="selection"' in html and "tuned = sft" in html and "sft (shipped)" in html


def test_a_report_without_a_choice_has_no_selection_key():
    assert selection_section(None, {}) is None
    rows = {"rl": make_rows("rl", ["1", "0"])}
    sec = selection_section({"chosen": "rl", "candidates": {"rl": {"pass_at_1": None}}}, rows)
    assert sec["candidates"]["rl"]["heldout_pass_at_1"] == 0.5


def test_export_takes_the_shipped_adapter_and_refuses_a_stale_choice(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from sdk.errors import ConfigError
    from sdk.run.lineage import Lineage, write_lineage
    from sdk.run.release import check_release
    from sdk.run.stage_eval import stage_eval

    ctx, _ = _run(tmp_path)
    _fake_scoring(monkeypatch, {("rl_midway", "train"): True}, [])
    stage_eval(ctx)
    rl = ctx.layout.adapter("rl")
    write_lineage(rl, Lineage(stage="rl", base_model="m"))
    stage_eval(ctx)  # the midway adapter ships: it gets the RL end's lineage
    complete = {"sft", "rl", "eval"}
    pipe = SimpleNamespace(cfg=ctx.cfg, layout=ctx.layout, run_dir=ctx.layout.root, is_complete=complete.__contains__,
                           adapter_for_eval=lambda: adapter_for_eval(ctx.cfg, ctx.layout))
    adapter, record = check_release(pipe)
    assert adapter == ctx.layout.midway_adapter("rl") and record["stage"] == "rl"
    assert (adapter / "lineage.json").is_file(), "the shipped midway adapter carries a lineage"
    complete.discard("eval")
    with pytest.raises(ConfigError, match="choice on the validation split, and that stage is out of date"):
        check_release(pipe)
