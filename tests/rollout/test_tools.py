"""Tools: schemas from langchain-core tools and typed functions, field cases T2 and T3, limits, sandbox."""

from __future__ import annotations

import json

import pytest
from langchain_core.tools import tool

from sdk.rollout.chat_template import render
from sdk.rollout.errors import ToolError
from sdk.rollout.tools import (
    ToolBox,
    ToolCall,
    as_tool,
    normalize_arguments,
    normalize_tool_calls,
    parse_tool_calls,
)


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


def stock(sku: str, warehouse: str = "main") -> int:
    """Units of an item in stock.

    Args:
        sku: the item code, e.g. "A-100".
        warehouse: which warehouse.
    """
    if sku == "BOOM":
        raise KeyError(sku)
    return {"A-100": 7}.get(sku, 0)


def ping() -> str:
    """Check the service is up."""
    return "pong"


def test_schema_from_langchain_tool_and_typed_function():
    w, s = as_tool(weather), as_tool(stock)
    assert w.name == "weather" and w.parameters["required"] == ["city"]
    assert s.schema()["function"]["parameters"]["properties"]["sku"] == {"description": 'the item code, e.g. "A-100".',
                                                                         "type": "string"}
    assert s.parameters["required"] == ["sku"]
    with pytest.raises(ToolError, match="not a tool"):
        as_tool(42)


def test_t2_string_arguments_are_decoded_once_in_training_text(tool_tokenizer):
    msgs = [{"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "name": "weather", "content": "sunny"}, {"role": "assistant", "content": "Sunny."}]
    fixed = normalize_tool_calls(msgs, [as_tool(weather)])
    assert fixed[1]["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}
    assistant_text = render(tool_tokenizer, fixed).split("Weather in Paris?")[1]
    assert assistant_text.count("Paris") == 1
    assert '{"name": "weather", "arguments": {"city": "Paris"}}' in assistant_text
    assert "\\\"" not in assistant_text


def test_t3_malformed_arguments():
    params = as_tool(weather).parameters
    args, why = normalize_arguments('{"city": "Par', params)
    assert args is None and "not valid JSON" in why
    assert normalize_arguments("", params)[0] is None and "city is required" in normalize_arguments("", params)[1]
    assert normalize_arguments("", as_tool(ping).parameters) == ({}, "")
    args, why = normalize_arguments(["Paris"], params)
    assert args is None and "list" in why
    assert normalize_arguments('["Paris"]', params)[0] is None


def test_t3_calls_are_answered_with_errors_and_rollout_goes_on():
    box = ToolBox([weather, stock, ping], max_calls=10)
    text = ('<tool_call>{"name": "weather", "arguments": "{\\"city\\": \\"Par"}</tool_call>'
            '<tool_call>{"name": "weather", "arguments": ""}</tool_call>'
            '<tool_call>{"name": "weather", "arguments": ["Paris"]}</tool_call>'
            '<tool_call>{"name": "ping", "arguments": ""}</tool_call>'
            '<tool_call>{"name": "weather", "arguments": {"city": "Paris"}}</tool_call>')
    outcomes = [box.answer(c) for c in parse_tool_calls(text)]
    assert [o.ok for o in outcomes] == [False, False, False, True, True]
    assert outcomes[0].content.startswith("error: arguments are not valid JSON")
    assert "city is required" in outcomes[1].content
    assert "list" in outcomes[2].content
    assert outcomes[3].content == "pong" and outcomes[4].content == "sunny in Paris"
    assert [o.call.valid for o in outcomes] == [False, False, False, True, True]


def test_cut_off_call_block_and_unknown_tool_and_raising_tool():
    box = ToolBox([stock], max_calls=10)
    cut = parse_tool_calls('Let me look. <tool_call>{"name": "stock", "arguments": {"sku": "A-1')
    assert len(cut) == 1 and cut[0].name == "stock" and "cut off" in cut[0].error
    assert box.answer(cut[0]).content.startswith("error: the tool call is cut off")
    unknown = box.answer(ToolCall(name="delete_all", raw="{}"))
    assert not unknown.ok and "no tool named 'delete_all'" in unknown.content
    boom = box.answer(parse_tool_calls('<tool_call>{"name": "stock", "arguments": {"sku": "BOOM"}}</tool_call>')[0])
    assert not boom.ok and boom.content == "error: KeyError: 'BOOM'"
    wrong = box.answer(parse_tool_calls('<tool_call>{"name": "stock", "arguments": {"sku": 5}}</tool_call>')[0])
    assert "wrong type" in wrong.content
    extra = box.answer(parse_tool_calls('<tool_call>{"name": "stock", "arguments": {"sku": "A", "x": 1}}</tool_call>')[0])
    assert "unknown argument(s): x" in extra.content


def test_list_of_calls_in_one_block_and_max_calls():
    box = ToolBox([stock], max_calls=2)
    calls = parse_tool_calls('<tool_call>[{"name": "stock", "arguments": {"sku": "A-100"}}, '
                             '{"name": "stock", "arguments": {"sku": "B"}}, {"name": "stock", "arguments": {"sku": "C"}}]'
                             '</tool_call>')
    outcomes = [box.answer(c) for c in calls]
    assert [o.content for o in outcomes[:2]] == ["7", "0"]
    assert not outcomes[2].ok and "limit of 2 tool calls" in outcomes[2].content
    assert box.exhausted


def test_duplicate_names_and_bad_limits_refused():
    with pytest.raises(ToolError, match="same name"):
        ToolBox([stock, stock])
    with pytest.raises(ToolError, match="max_calls"):
        ToolBox([stock], max_calls=0)


def test_invalid_stored_example_raises_not_guesses():
    msgs = [{"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "weather", "arguments": "[\"Paris\"]"}}]}]
    with pytest.raises(ToolError, match="message 0"):
        normalize_tool_calls(msgs, [as_tool(weather)])


def test_untrusted_code_tool_runs_in_the_sandbox():
    from sdk.config import SandboxConfig
    from sdk.rollout.tools import sandboxed_python_tool
    from sdk.sandbox import make_sandbox

    sandbox = make_sandbox(SandboxConfig(backend="process", allow_unisolated=True, concurrency=1, cache=False))
    try:
        box = ToolBox([sandboxed_python_tool(sandbox)])
        assert box.tools["run_python"].untrusted
        call = parse_tool_calls(json.dumps({"name": "run_python", "arguments": {"code": "import os\nprint(6*7, os.getpid() != %d)" % __import__("os").getpid()}}).join(["<tool_call>", "</tool_call>"]))[0]
        out = box.answer(call)
        assert out.ok and out.content.strip() == "42 True"
        bad = box.answer(ToolCall(name="run_python", raw=json.dumps({"code": "raise SystemExit(3)"})))
        assert bad.ok and bad.content.startswith("error (")
    finally:
        sandbox.close()
