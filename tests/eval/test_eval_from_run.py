"""report_from_run reads the pipeline's run-folder layout and writes the report there."""

import json

import pytest

from eval_rows import make_rows
from sdk.config import GateConfig
from sdk.run.finished import report_from_run
from sdk.eval.records import EvalError, save_rows
from sdk.tasks.records import Split


def write_json(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_report_from_run_folder(tmp_path):
    base = make_rows("base", ["0", "0", "1"]) + make_rows("base", ["1"], Split.OOD)
    tuned = make_rows("tuned", ["1", "1", "1"]) + make_rows("tuned", ["1"], Split.OOD)
    save_rows(tmp_path / "eval" / "base.jsonl", base)
    save_rows(tmp_path / "eval" / "tuned.jsonl", tuned)
    write_json(tmp_path / "tasks" / "counts.json", {"version": "abc123", "splits": {
        "train": {"python/billing": 9}, "heldout": {"python/billing": 3}, "quarantined": {"reference fails": 2}}})
    write_json(tmp_path / "sft" / "log_history.json", [{"loss": 1.0, "step": 1}, {"loss": 0.5, "step": 2}])
    write_json(tmp_path / "state" / "sft.json", {"fingerprint": "f", "stats": {
        "stage": "sft", "wall_s": 50.0, "cpu_s": 90.0, "tokens_trained": 1000, "tokens_generated": 0, "rows": 9}})
    write_json(tmp_path / "state" / "eval.json", {"fingerprint": "f", "stats": {
        "stage": "eval", "wall_s": 20.0, "cpu_s": 30.0, "tokens_generated": 400, "tasks": 4}})
    report, gate, jpath, hpath = report_from_run(tmp_path, GateConfig(enabled=True, min_heldout_gain=0.5),
                                                 meta={"model": "tiny"}, n_resamples=100)
    assert jpath == tmp_path / "report.json" and hpath.is_file()
    assert report.meta == {"run_dir": str(tmp_path), "task_set": "abc123", "model": "tiny"}
    assert [s["stage"] for s in report.cost["stages"]] == ["sft", "eval"]
    assert report.cost_benefit["points"][1]["compute_s"] == 90.0
    assert report.training["sft"]["loss"] == [[1.0, 1.0], [2.0, 0.5]]
    assert report.tasks["quarantined"] == {"reference fails": 2}
    assert gate.passed and gate.heldout_gain == pytest.approx(2 / 3)


def test_report_from_run_needs_both_row_files(tmp_path):
    save_rows(tmp_path / "eval" / "base.jsonl", make_rows("base", ["0"]))
    with pytest.raises(EvalError, match="tuned.jsonl is missing"):
        report_from_run(tmp_path, GateConfig())
    save_rows(tmp_path / "eval" / "tuned.jsonl", make_rows("tuned", ["0"]))
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "counts.json").write_text("{broken")
    with pytest.raises(EvalError, match="not valid JSON"):
        report_from_run(tmp_path, GateConfig())


def test_training_flags_per_step(tmp_path):
    from sdk.run.finished import training_flags
    log = tmp_path / "rewards.jsonl"
    lines = [{"step": 1, "flags": ["exit_zero"]}, {"step": 1, "flags": []},
             {"step": 2, "flags": ["conftest", "exit_zero"]}, {"step": 2, "flags": ["exit_zero", "exit_zero"]}]
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    assert training_flags(log) == {"grpo log": {"unreadable_log_line": 1}, "grpo step 1": {"exit_zero": 1},
                                   "grpo step 2": {"conftest": 1, "exit_zero": 2}}
    assert training_flags(tmp_path / "missing.jsonl") == {}


def test_grpo_steps_without_learning_signal_are_flagged():
    """Issue 20.9: a GRPO step whose groups all had equal rewards was shown like any other."""
    from sdk.run.finished import no_signal_steps

    history = [{"step": 1, "loss": 0.0, "frac_reward_zero_std": 1.0}, {"step": 2, "loss": 0.1, "frac_reward_zero_std": 0.5},
               {"step": 3, "loss": 0.0, "frac_reward_zero_std": 1.0}, {"train_loss": 0.0, "step": 3}]
    flags = no_signal_steps({"grpo step 2": {"prompt_copy": 1}}, history)
    assert list(flags) == ["grpo step 1", "grpo step 2", "grpo step 3"]
    assert flags["grpo step 1"] == {"no_learning_signal": 1} and flags["grpo step 2"] == {"prompt_copy": 1}


def test_evaluation_prints_plain_progress_lines_without_a_live_bar(caplog):
    """Issue 20.7: eval printed nothing until it finished when stderr was not a terminal."""
    import logging

    from sdk.eval.run import evaluate
    from sdk.rewards.result import RewardResult, RewardStatus
    from sdk.tasks.records import AnswerVerifier, Message, Source, Split, Task

    tasks = [Task(domain="d", prompt=(Message(role="user", content=f"q{i}"),), verifier=AnswerVerifier(expected="1"),
                  source=Source(connector="t"), split=Split.HELDOUT) for i in range(3)]
    with caplog.at_level(logging.INFO, logger="tuneloop.progress"):
        evaluate(tasks, lambda prompts, n: [[("1", 1)] * n for _ in prompts],
                 lambda ts, cs: [RewardResult(score=1.0, status=RewardStatus.OK)] * len(ts), "base", 1,
                 progress=False, batch_size=2)
    lines = [r.getMessage() for r in caplog.records if r.name == "tuneloop.progress"]
    assert lines[0].startswith("eval base: 2/3 tasks") and lines[-1].startswith("eval base: 3/3 tasks")
