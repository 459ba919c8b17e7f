"""The tool_agent example through the main pipeline on the tiny model: tasks, GRPO with tool rollouts,
tool-rollout evaluation of base and tuned, report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples.tool_agent.inventory import build_db, inventory_tools
from examples.tool_agent.tasks import ToolAgentSource, build_tasks
from sdk.config import load_config

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "tool_agent" / "agent.yaml"


def test_shipped_config_is_a_run_config_with_tool_rollouts():
    cfg = load_config(CONFIG)
    assert cfg.model.name == "smollm2-135m" and cfg.tools.enabled and cfg.tools.max_calls == 3
    assert cfg.sources[0].type == "examples.tool_agent.tasks:ToolAgentSource"
    assert cfg.sft.enabled and cfg.tools.demonstrations.enabled  # SFT on verified tool-call demonstrations first


def test_source_gives_the_tasks_in_its_domain(tmp_path):
    result = ToolAgentSource({}, tmp_path, "tools/shop").read()
    assert len(result.tasks) == len(build_tasks()) == 29 and {t.domain for t in result.tasks} == {"tools/shop"}
    assert result.counts["tasks"] == 29


def test_factory_builds_the_db_relative_to_the_config_and_its_tools_answer(tmp_path):
    from sdk.rollout.factories import build_tools

    cfg = load_config(CONFIG, {"tools.factories.0.options.db": "sub/inv.db"})
    cfg = cfg.model_copy(update={"base_dir": tmp_path})
    tools = {t.name: t for t in build_tools(cfg.tools, cfg.base_dir)}
    assert sorted(tools) == ["find_sku", "item_price", "search", "stock_level"]
    assert (tmp_path / "sub" / "inv.db").is_file()
    assert tools["stock_level"].func(sku=tools["find_sku"].func(name="hammer")) == 42
    text, docs = tools["search"].func(query="express shipping")
    assert "2 business days" in text and len(docs) <= cfg.tools.retrieval_k


def test_tasks_are_answerable_by_their_tools(tmp_path):
    from sdk.rewards.answers import score_answer
    from sdk.rollout.tools import as_tool

    url = build_db(tmp_path / "inv.db")
    tools = {t.name: t.func for t in map(as_tool, inventory_tools(url))}
    checked = 0
    for task in build_tasks():
        question, loc = task.prompt[-1].content, task.source.locator
        if loc.startswith("stock/"):
            value = tools["stock_level"](question.split()[-4])
        elif loc.startswith("price/"):
            value = tools["item_price"](question.split()[-3])
        elif loc.startswith("stock-by-name/"):
            value = tools["stock_level"](tools["find_sku"](question.split("of the ")[1].split(" are")[0]))
        else:
            continue
        assert score_answer(task.verifier, f"Answer: {value}").score == 1.0, loc
        checked += 1
    assert checked == 24


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, tiny_model_dir):
    """The shipped config run through Pipeline on the tiny model with small overrides."""
    from rich.console import Console

    from sdk.run.pipeline import Pipeline

    tmp = tmp_path_factory.mktemp("tool-agent")
    cfg = load_config(CONFIG, {"run_dir": str(tmp / "run"), "model.name": tiny_model_dir,
                               "tools.factories.0.options.db": str(tmp / "inventory.db"),
                               "eval.limit_per_split": 3, "eval.max_new_tokens": 12, "rl.max_steps": 1,
                               "rl.num_generations": 2, "rl.batch_size": 2, "rl.max_completion_length": 24,
                               "sft.lora.r": 4, "sft.max_steps": 1,
                               "sft.max_length": 2048})  # the tiny tokenizer spells words in more tokens
    report = Pipeline(cfg, console=Console(quiet=True), progress=False).run()
    return tmp / "run", report


def test_pipeline_writes_tasks_rl_adapter_and_traces(finished_run):
    run_dir, _ = finished_run
    tasks = [json.loads(line) for line in (run_dir / "tasks" / "tasks.jsonl").read_text().splitlines()]
    assert len(tasks) == 29 and {t["split"] for t in tasks} == {"train", "heldout"}
    assert (run_dir / "rl" / "adapter" / "adapter_config.json").is_file()
    assert (run_dir / "sft" / "adapter" / "adapter_config.json").is_file()  # GRPO continued it
    traces = [json.loads(line) for line in (run_dir / "rl" / "traces.jsonl").read_text().splitlines()]
    assert len(traces) == 2 and all({"step", "calls", "n_calls", "stop", "final"} <= set(t) for t in traces)


def test_sft_trained_on_demonstrations_of_train_tasks_only(finished_run):
    run_dir, _ = finished_run
    tasks = [json.loads(line) for line in (run_dir / "tasks" / "tasks.jsonl").read_text().splitlines()]
    asked = {split: {t["prompt"][-1]["content"] for t in tasks if t["split"] == split} for split in ("train", "heldout")}
    demos = [json.loads(line) for line in (run_dir / "sft" / "demonstrations.jsonl").read_text().splitlines()]
    questions = {next(m["content"] for m in d["messages"] if m["role"] == "user") for d in demos}
    assert demos and questions <= asked["train"] and not questions & asked["heldout"]
    assert all(any(m.get("tool_calls") for m in d["messages"]) for d in demos)
    stats = json.loads((run_dir / "state" / "sft.json").read_text())["stats"]
    assert stats["tool_demonstrations"]["kept"] == len(demos)


def test_eval_rows_are_tool_rollouts_scored_by_the_tool_reward(finished_run):
    from sdk.eval.records import load_rows

    run_dir, _ = finished_run
    for label in ("base", "tuned"):
        rows = load_rows(run_dir / "eval" / f"{label}.jsonl")
        assert len(rows) == 3 and {r.split.value for r in rows} == {"heldout"}
        for row in rows:
            trace = json.loads(row.completions[0])  # the completion is the rollout's trace
            assert {"calls", "n_calls", "n_valid", "stop", "final"} <= set(trace)
            comps = row.components[0]
            assert {"answer", "task_success", "tool_calls", "valid_tool_calls", "used_tools"} <= set(comps)
            assert comps["tool_calls"] == trace["n_calls"] and 0.0 <= row.rewards[0] <= 1.0
            assert row.passed[0] == (comps["answer"] == 1.0) and row.statuses[0] in ("ok", "failed")
    stats = json.loads((run_dir / "state" / "eval.json").read_text())["stats"]
    for label in ("base", "tuned"):
        summary = stats["tools"][label]
        assert summary["samples"] == 3 and 0.0 <= summary["valid_tool_call_rate"] <= 1.0


def test_report_compares_base_and_tuned_tool_rollouts(finished_run):
    run_dir, report = finished_run
    assert report is not None and report.pass_at("heldout", "base", 1) is not None
    data = json.loads((run_dir / "report.json").read_text())
    assert data == report.to_json()
    assert (run_dir / "report.html").is_file()
    assert "task_success" in json.dumps(data)  # the components table carries the tool metrics
