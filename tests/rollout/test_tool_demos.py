"""Verified tool-call demonstrations (sdk.train.tool_demos) on the tool_agent example's tasks and tools:
built from train tasks only, each replaying to reward 1.0 through the rollout engine and the tool-task
reward, and tokenized for SFT exactly as the rollout tokenized it (field case K1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples.tool_agent.tasks import build_tasks
from sdk.config import load_config
from sdk.rollout.rewards import ToolTaskReward
from sdk.tasks.records import Split

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "tool_agent" / "agent.yaml"


@pytest.fixture(scope="module")
def setup(tmp_path_factory, tiny_model_dir):
    """(tokenizer with the tool template, toolbox maker over the example's tools, reward, config)."""
    from transformers import AutoTokenizer

    from sdk.rollout.chat_template import ensure_tool_template
    from sdk.rollout.factories import build_tools
    from sdk.rollout.tools import ToolBox

    tmp = tmp_path_factory.mktemp("demos")
    cfg = load_config(CONFIG, {"tools.factories.0.options.db": str(tmp / "inv.db")})
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    ensure_tool_template(tok)
    tools = build_tools(cfg.tools, cfg.base_dir)
    return tok, (lambda: ToolBox(tools, max_calls=cfg.tools.max_calls)), ToolTaskReward(cfg.tools.reward), cfg


def _rollout_of(row: dict, tok, make_box):
    """The row's conversation rolled out again by the engine, its assistant turns fed back as generated tokens."""
    from sdk.rollout.episode import run_episodes
    from sdk.train.tool_demos import turn_ids

    prompt = [m for m in row["messages"] if m["role"] in ("system", "user")]
    turns = iter([turn_ids(tok, m) for m in row["messages"] if m["role"] == "assistant"])
    return run_episodes([prompt], tok, make_box, lambda batch: [next(turns, [])], 4096)[0]


def test_every_example_task_has_a_demonstration_that_replays_to_full_marks(setup):
    from sdk.rollout.tools import parse_tool_calls
    from sdk.train.tool_demos import demo_turns, demonstration_rows, turn_ids

    tok, make_box, reward, cfg = setup
    tasks = build_tasks()
    rows, report = demonstration_rows(tasks, tok, make_box, reward, max_turns=cfg.tools.max_turns)
    assert len(rows) == len(report.kept) == 29 and not report.dropped and report.without == 0
    for task, row in zip(tasks, rows):
        ep = _rollout_of(row, tok, make_box)  # the stored row itself, through the rollout path again
        score = reward([task.prompt], [""], tool_trace=[json.dumps(ep.trace())], task_json=[task.model_dump_json()])
        assert score == [1.0], task.source.locator
        calls = [c for t in demo_turns(task) for c in t]
        assert [(c["name"], c["arguments"]) for c in ep.trace()["calls"]] == [(c["name"], c["arguments"]) for c in calls]
        said = [parse_tool_calls(tok.decode(turn_ids(tok, m), skip_special_tokens=True))
                for m in row["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
        assert [(c.name, json.loads(c.raw)) for t in said for c in t] == [(c["name"], c["arguments"]) for c in calls]


def test_sft_tokens_are_the_rollouts_tokens_and_only_the_models_turns_are_trained(setup):
    from sdk.train.tool_demos import demonstration_rows
    from sdk.train.tool_rows import token_rows

    tok, make_box, reward, _ = setup
    tasks = [t for t in build_tasks() if t.source.locator.startswith(("stock-by-name/", "doc/"))][:3]
    rows, _ = demonstration_rows(tasks, tok, make_box, reward)
    for row, sft in zip(rows, token_rows(rows, tok)):
        ep = _rollout_of(row, tok, make_box)
        rollout_ids = ep.prompt_ids + ep.completion_ids
        assert sft["input_ids"][: len(rollout_ids)] == rollout_ids  # one tokenize path (K1)
        assert tok.decode(sft["input_ids"][len(rollout_ids):]).strip() == ""  # at most the template's last newline
        trained = sft["completion_mask"][len(ep.prompt_ids): len(rollout_ids)]
        assert trained == ep.env_mask and not any(sft["completion_mask"][: len(ep.prompt_ids)])
        if tok.bos_token_id is not None:
            assert sft["input_ids"].count(tok.bos_token_id) == rollout_ids.count(tok.bos_token_id)


def test_held_out_tasks_are_refused(setup):
    from sdk.train.tool_demos import demonstration_rows

    tok, make_box, reward, _ = setup
    task = build_tasks()[0].model_copy(update={"split": Split.HELDOUT})
    with pytest.raises(ValueError, match="train tasks only"):
        demonstration_rows([task], tok, make_box, reward)


def _with_demo(task, demo):
    return task.model_copy(update={"metadata": {**task.metadata, "demonstration": demo}}, deep=True)


def test_wrong_or_ungrounded_demonstrations_are_dropped_with_a_reason(setup):
    from sdk.train.tool_demos import demonstration_rows

    tok, make_box, reward, _ = setup
    tasks = build_tasks()  # per item: stock, price, stock by name; items A-100 (7), A-200 (42), B-310 (0), B-420
    wrong_sku = _with_demo(tasks[0], [[{"name": "stock_level", "arguments": {"sku": "A-200"}}]])  # 42, not 7
    bad_args = _with_demo(tasks[3], [[{"name": "stock_level", "arguments": {"code": "A-200"}}]])
    wrong_tool = _with_demo(tasks[6], [[{"name": "item_price", "arguments": {"sku": "B-310"}}]])
    none = tasks[9].model_copy(update={"metadata": {"expected_tools": ["stock_level"]}}, deep=True)
    rows, report = demonstration_rows([wrong_sku, bad_args, wrong_tool, none], tok, make_box, reward)
    assert rows == [] and report.without == 1 and len(report.dropped) == 3
    reasons = list(report.dropped.values())
    assert "appears in no tool answer" in reasons[0]
    assert "invalid or failed" in reasons[1] and "missing required argument(s): sku" in reasons[1]
    assert "not full marks" in reasons[2]


def test_malformed_demonstration_is_an_error(setup):
    from sdk.train.tool_demos import demonstration_rows

    tok, make_box, reward, _ = setup
    task = _with_demo(build_tasks()[0], [{"name": "stock_level"}])  # a call, not a turn (list of calls)
    with pytest.raises(ValueError, match="list of turns"):
        demonstration_rows([task], tok, make_box, reward)
