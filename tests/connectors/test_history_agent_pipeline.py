"""Agentic change rollouts end to end on the tiny model (issue 17): the ``git_history`` source on the
generated 6-commit repository -> tasks -> GRPO with tool rollouts over each task's repository ->
eval with the same agent -> report, with ``examples/change_tasks/agent.yaml`` cut to a smoke-sized
run. The random tiny model rarely writes a well-formed tool call; the test checks the loop, the
traces, the masking bookkeeping and the scoring, not learning. ``slow``
(``pytest -m slow tests/connectors/test_history_agent_pipeline.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sdk.config import load_config
from sdk.run.pipeline import Pipeline
from tests.connectors.history_repo import build

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "change_tasks" / "agent.yaml"


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["grpo", "expert_iteration"])
def test_agentic_change_rollouts_train_and_evaluate_end_to_end(tiny_model_dir, tmp_path, algorithm):
    repo = tmp_path / "calc"
    build(repo)
    cfg = load_config(CONFIG, {"run_dir": str(tmp_path / "run"), "model.name": tiny_model_dir,
                               "sources.0.options.path": str(repo), "sources.0.options.reruns": 0,
                               "sources.0.options.heldout_fraction": 0.5, "rl.max_steps": 1,
                               "rl.max_completion_length": 256, "eval.max_new_tokens": 32,
                               "tools.change_agent.max_tokens": 256, "sft.max_steps": 1, "rl.algorithm": algorithm})
    report = Pipeline(cfg, progress=False).run()
    run = cfg.run_path
    tasks = [json.loads(x) for x in (run / "tasks" / "tasks.jsonl").read_text().splitlines()]
    assert all("Make the change with the tools" in t["prompt"][-1]["content"] for t in tasks)
    assert (run / "sft" / "adapter" / "adapter_config.json").is_file(), "SFT on the references' demonstrations"
    traces = [json.loads(x) for x in (run / "rl" / "traces.jsonl").read_text().splitlines()]
    assert traces and all({"calls", "change", "changed_files", "stop"} <= set(t) for t in traces)
    rewards = [json.loads(x) for x in (run / "rl" / "rewards.jsonl").read_text().splitlines()]
    assert len(rewards) == len(traces)
    assert all(r["status"] in ("no_code", "compile_error", "failed", "ok", "suspected_hacking") for r in rewards)
    for label in ("base", "tuned"):
        rows = [json.loads(x) for x in (run / "eval" / f"{label}.jsonl").read_text().splitlines()]
        assert len(rows) == 1 and "<tool_trace>" in rows[0]["completions"][0]
        assert {"tool_calls", "valid_tool_calls", "task_success"} <= set(rows[0]["components"][0])
        assert (run / "eval" / f"traces_{label}.jsonl").is_file()
    assert report.honesty["grader_self_test"]["rate"] == 1.0, "the held-out change's own diff earns full marks"
    held = report.change_completion["by_split"]["heldout"]
    assert held["n_tasks"] == 1 and {"value", "low", "high"} <= set(held["base"])
