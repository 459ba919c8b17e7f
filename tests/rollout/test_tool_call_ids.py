"""Field case T4: tool calls without ids get unique, deterministic ids; each tool answer carries
its call's id; a stored id (``call_7``) is kept on the assistant turn and its tool message."""

from __future__ import annotations

import pytest

from sdk.rollout.episode import run_episodes
from sdk.rollout.errors import ToolError
from sdk.rollout.tools import (
    ToolBox,
    as_tool,
    assign_call_ids,
    normalize_tool_calls,
    parse_tool_calls,
)
from tests.rollout.test_episode import PROMPT, scripted, stock


def get_weather(city: str) -> str:
    """Weather now.

    Args:
        city: the city.
    """
    return {"London": "rain", "Brussels": "clouds"}.get(city, "sun")


T4_TEXT = ('<tool_call>{"name": "get_weather", "arguments": {"city": "London"}}</tool_call>'
           '<tool_call>{"name": "get_weather", "arguments": {"city": "Brussels"}}</tool_call>'
           '<tool_call>{"name": "get_weather", "id": "", "arguments": {"city": "Paris"}}</tool_call>')


def test_idless_and_empty_ids_become_unique_and_deterministic():
    first = assign_call_ids(parse_tool_calls(T4_TEXT), "call_0", set())
    again = assign_call_ids(parse_tool_calls(T4_TEXT), "call_0", set())
    assert [c.id for c in first] == [c.id for c in again] == ["call_0_0", "call_0_1", "call_0_2"]
    dup = parse_tool_calls('<tool_call>[{"name": "a", "id": "x"}, {"name": "b", "id": "x"}, {"name": "c", "id": 5}]'
                           '</tool_call>')
    assert [c.id for c in assign_call_ids(dup, "call_1", {"call_1_2"})] == ["x", "call_1_1", "call_1_2_2"]


def test_rollout_matches_each_answer_to_its_call(tool_tokenizer):
    turns = [[T4_TEXT, "London rain, Brussels clouds."]]
    eps = [run_episodes([PROMPT], tool_tokenizer, lambda: ToolBox([get_weather, stock]), scripted(tool_tokenizer, turns),
                        max_completion_tokens=4000)[0] for _ in range(2)]
    ep = eps[0]
    assistant = next(m for m in ep.messages if m.get("tool_calls"))
    tools = [m for m in ep.messages if m["role"] == "tool"]
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert ids == ["call_0_0", "call_0_1", "call_0_2"] == [m["tool_call_id"] for m in tools]
    assert [m["content"] for m in tools] == ["rain", "clouds", "sun"]
    assert [c["id"] for c in ep.trace()["calls"]] == ids == [c["id"] for c in eps[1].trace()["calls"]]


def test_stored_ids_are_kept_and_missing_ones_given_when_normalising():
    msgs = [{"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_7", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "London"}'}},
                {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Brussels"}}},
                {"id": "", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
            {"role": "tool", "tool_call_id": "call_7", "content": "rain"},
            {"role": "tool", "content": "clouds"}, {"role": "tool", "content": "sun"},
            {"role": "assistant", "content": "Done."}]
    fixed = normalize_tool_calls(msgs, [as_tool(get_weather)])
    assert [c["id"] for c in fixed[1]["tool_calls"]] == ["call_7", "call_1_1", "call_1_2"]
    assert [m["tool_call_id"] for m in fixed[2:5]] == ["call_7", "call_1_1", "call_1_2"]
    assert fixed[1]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "London"}}
    with pytest.raises(ToolError, match="message 3: the tool answer call_9 matches no open call"):
        normalize_tool_calls(msgs[:3] + [{"role": "tool", "tool_call_id": "call_9", "content": "x"}], [as_tool(get_weather)])
    with pytest.raises(ToolError, match="message 1: the tool answer"):
        normalize_tool_calls([msgs[0], {"role": "tool", "content": "orphan"}])
