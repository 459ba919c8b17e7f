"""The tool_agent example end to end on the tiny model: base eval, GRPO with tool rollouts, tuned eval, report."""

from __future__ import annotations

import json
from pathlib import Path

from examples.tool_agent.agent import load
from examples.tool_agent.inventory import build_db, inventory_tools
from examples.tool_agent.tasks import build_tasks

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "tool_agent" / "agent.yaml"


def test_shipped_config_validates():
    cfg, _ = load(CONFIG)
    assert cfg.model == "smollm2-135m" and cfg.tools.max_calls == 3 and cfg.rl.use_vllm == "never"


def test_tasks_are_answerable_by_their_tools(tmp_path):
    from sdk.rewards.answers import score_answer
    from sdk.rollout.tools import as_tool

    url = build_db(tmp_path / "inv.db")
    tools = {t.name: t.func for t in map(as_tool, inventory_tools(url))}
    for task in build_tasks():
        sku = task.prompt[-1].content.split()[-4] if "stock_level" == task.metadata["expected_tools"][0] else None
        if task.source.locator.startswith("stock/"):
            assert score_answer(task.verifier, f"Answer: {tools['stock_level'](sku)}").score == 1.0
        if task.source.locator.startswith("stock-by-name/"):
            name = task.prompt[-1].content.split("of the ")[1].split(" are")[0]
            assert score_answer(task.verifier, f"Answer: {tools['stock_level'](tools['find_sku'](name))}").score == 1.0


def test_example_runs_on_tiny_model(tmp_path, tiny_model_dir):
    from examples.tool_agent.agent import run

    cfg = tmp_path / "agent.yaml"
    cfg.write_text(CONFIG.read_text())
    report = run(cfg, {"run_dir": str(tmp_path / "run"), "model": tiny_model_dir, "eval_limit": 3,
                       "eval_max_new_tokens": 12, "rl.max_steps": 1, "rl.num_generations": 2, "rl.batch_size": 2,
                       "rl.max_completion_length": 24, "lora.r": 4})
    for label in ("before", "after"):
        assert set(report[label]) >= {"valid_tool_call_rate", "task_success", "tool_use_rate"}
        assert 0.0 <= report[label]["valid_tool_call_rate"] <= 1.0 and report[label]["tasks"] == 3
    assert report["rl_steps"] == 1 and report["train_tool_metrics"]
    run_dir = tmp_path / "run"
    assert json.loads((run_dir / "report.json").read_text()) == report
    assert "| valid_tool_call_rate |" in (run_dir / "report.md").read_text()
    assert (run_dir / "rl" / "adapter" / "adapter_config.json").is_file()
    traces = [json.loads(line) for line in (run_dir / "rl" / "traces.jsonl").read_text().splitlines()]
    assert len(traces) == 2 and all({"step", "calls", "stop"} <= set(t) for t in traces)
