"""bench/tool_agent.py's own logic: the budget stop of training and the printed table from fixed rows."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

from sdk.eval.records import EvalError, EvalRow

BENCH = Path(__file__).resolve().parents[2] / "bench" / "tool_agent.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("tool_agent_bench", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(task: str, passed: bool, calls: int, valid: int, reward: float) -> EvalRow:
    comps = {"answer": float(passed), "task_success": float(passed), "tool_calls": float(calls),
             "valid_tool_calls": float(valid), "used_tools": float(calls > 0)}
    return EvalRow(task_id=task, domain="tools/inventory", split="heldout", model="m", completions=("{}",),
                   rewards=(reward,), passed=(passed,), statuses=("ok" if passed else "failed",), flags=((),),
                   components=(comps,))


def test_deadline_stops_training_at_the_first_step_past_it(bench):
    now = [0.0]
    cb = bench.Deadline(10.0, clock=lambda: now[0])
    seen = []
    for step in range(1, 6):
        now[0] = step * 4.0  # steps end at 4, 8, 12, 16, 20 s
        control = SimpleNamespace(should_training_stop=False)
        out = cb.on_step_end(None, SimpleNamespace(global_step=step), control)
        seen.append(out.should_training_stop)
        if out.should_training_stop:
            break
    assert seen == [False, False, True] and cb.stopped_at == 3
    control = SimpleNamespace(should_training_stop=False)
    assert cb.on_train_begin(None, None, control) is control and not control.should_training_stop


def test_deadline_stops_a_real_trainer_loop(bench):
    """The callback works through transformers' own CallbackHandler (what GRPOTrainer uses)."""
    from transformers import TrainerControl, TrainerState, TrainingArguments
    from transformers.trainer_callback import CallbackHandler

    now = [0.0]
    cb = bench.Deadline(5.0, clock=lambda: now[0])
    handler = CallbackHandler([cb], None, None, None, None)
    state, control = TrainerState(), TrainerControl()
    args = TrainingArguments(output_dir="/tmp/unused-tool-agent-bench", report_to=[])
    for step in range(1, 10):
        now[0] = float(step * 2)
        state.global_step = step
        control = handler.on_step_end(args, state, control)
        if control.should_training_stop:
            break
    assert state.global_step == 3 and cb.stopped_at == 3


def test_grpo_callback_appends_to_run_grpo_calls_and_restores_it(bench, monkeypatch):
    import sdk.train.grpo as grpo

    got = []
    monkeypatch.setattr(grpo, "run_grpo", lambda *a, callbacks=(), **kw: got.append(list(callbacks)))
    original = grpo.run_grpo
    marker = object()
    with bench.grpo_callback(marker):
        from sdk.train.grpo import run_grpo  # the rl stage imports it at call time

        run_grpo("model", callbacks=["probe"])
    assert got == [["probe", marker]] and grpo.run_grpo is original


def test_table_from_fixed_rows_pairs_tasks_and_says_when_tuned_is_no_better(bench):
    base = [_row("t0", True, 1, 1, 1.0), _row("t1", False, 2, 1, 0.2), _row("t2", False, 0, 0, 0.0),
            _row("t3", False, 0, 0, 0.0)]
    tuned = [_row("t0", True, 1, 1, 1.0), _row("t1", False, 1, 1, 0.4), _row("t2", False, 1, 0, 0.1),
             _row("t3", False, 1, 1, 0.3)]
    stages = {"base eval": {"wall_s": 60.0, "cpu_s": 100.0}, "train (GRPO)": {"wall_s": 500.0, "cpu_s": 900.0}}
    training = {"max_steps": 12, "steps": 7, "stopped_by_budget": True, "stopped_at": 7, "train_deadline_s": 800.0,
                "zero_std": {"groups": 7, "zero_std_groups": 5}}
    result = bench.summarise(base, tuned, stages, training)
    b, t = result["models"]["base"], result["models"]["tuned"]
    assert (b["passed"], b["tasks"], t["passed"]) == (1, 4, 1)
    assert b["valid_tool_call_rate"] == pytest.approx(2 / 3) and t["valid_tool_call_rate"] == pytest.approx(3 / 4)
    assert (b["tool_use_rate"], t["tool_use_rate"]) == (0.5, 1.0) and t["calls_per_sample"] == 1.0
    assert result["delta"]["value"] == 0.0 and result["delta"]["n"] == 4
    text = bench.table(result)
    lines = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]] for ln in text.splitlines()
             if ln.startswith("| ")}
    assert lines["base"] == ["1/4 (25.0 %)", "0.67", "0.50", "0.75", "0.300"]
    assert lines["tuned"] == ["1/4 (25.0 %)", "0.75", "1.00", "1.00", "0.450"]
    assert lines["train (GRPO)"] == ["500.0", "900.0"]
    assert "tuned is no better than base" in text and "+0.0 pp" in text
    assert "training stopped by the budget after step 7 of 12" in text
    assert "no variance (no gradient): 5 of 7" in text and "all-zero" not in text


def test_verdict_follows_the_interval_and_rows_must_share_tasks(bench):
    base = [_row(f"t{i}", False, 0, 0, 0.0) for i in range(10)]
    tuned = [_row(f"t{i}", i < 8, 1, 1, 1.0 if i < 8 else 0.2) for i in range(10)]
    done = {"max_steps": 4, "steps": 4, "stopped_by_budget": False, "stopped_at": None, "train_deadline_s": 1.0}
    better = bench.summarise(base, tuned, {}, done)
    assert better["delta"]["low"] > 0 and better["verdict"].startswith("tuned is better")
    assert "training finished its steps (4 of 4) within the budget" in bench.table(better)
    zeros = bench.table(bench.summarise(base, base, {}, done))
    assert "all-zero: neither model answered any held-out task right" in zeros and "no variance" not in zeros
    worse = bench.summarise(tuned, base, {}, done)
    assert worse["verdict"] == "tuned is worse than base on task success"
    assert bench.verdict(0.1, -0.05).startswith("tuned is not proven better")
    with pytest.raises(EvalError):
        bench.summarise(base, [_row("other", True, 1, 1, 1.0)], {}, done)


def test_sft_only_checkpoint_is_a_third_model_with_its_own_paired_deltas(bench):
    base = [_row(f"t{i}", False, 0, 0, 0.0) for i in range(10)]
    sft = [_row(f"t{i}", i < 6, 1, 1, 1.0 if i < 6 else 0.5) for i in range(10)]
    tuned = [_row(f"t{i}", i < 5, 1, 1, 1.0 if i < 5 else 0.5) for i in range(10)]
    done = {"max_steps": 4, "steps": 4, "stopped_by_budget": False, "stopped_at": None, "train_deadline_s": 1.0}
    result = bench.summarise(base, tuned, {}, done, sft=sft)
    assert list(result["models"]) == ["base", "sft", "tuned"] and result["models"]["sft"]["passed"] == 6
    assert result["deltas"]["sft - base"]["value"] == pytest.approx(0.6)
    assert result["deltas"]["tuned - sft"]["value"] == pytest.approx(-0.1)
    assert result["delta"] == result["deltas"]["tuned - base"] and result["delta"]["value"] == pytest.approx(0.5)
    text = bench.table(result)
    assert "| sft | 6/10 (60.0 %) |" in text and "sft − base task success: +60.0 pp" in text
    assert "tuned − sft task success: -10.0 pp" in text
