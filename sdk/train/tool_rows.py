"""SFT rows of tool-using conversations: stored as messages, trained with tool output masked (issue 17).

A tool-use trajectory (an agentic rollout, or a demonstration) is stored as ``{"messages": [...],
"tools": [JSON schemas]}``: the prompt, the assistant turns with their ``tool_calls`` and the ``tool``
answers, call ids normalised by :func:`sdk.rollout.tools.normalize_tool_calls` (field case T4: a
stored id such as ``call_0_1`` is kept on both the call and its answer; a missing or repeated one
gets a unique, deterministic id). :func:`token_rows` renders each with the tool chat template
(:func:`sdk.rollout.chat_template.ensure_tool_template`, on a copy of the tokenizer) and marks the
trained tokens with :func:`sdk.rollout.chat_template.assistant_mask`: every assistant turn (its
text, its tool calls and its end-of-turn token) is trained; the system prompt, the user's turn,
the role headers and every tool answer are not. TRL's ``SFTTrainer`` takes such pre-tokenized rows
(``input_ids`` + ``completion_mask``) as they are and builds labels from the mask
(``completion_only_loss``), so the loss never covers a tool's output.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from sdk.errors import ConfigError


def trajectory_row(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The stored row of one conversation: messages with ids normalised (T4), and the tools' schemas
    (``{"type": "function", "function": {"name", "description", "parameters"}}``, as the rollout showed
    them), against which each call's arguments are checked.

    Raises:
        sdk.rollout.errors.ToolError: a call's arguments do not match its tool's schema, or a tool
            answer matches no call.
    """
    from types import SimpleNamespace

    from sdk.rollout.tools import normalize_tool_calls

    specs = [SimpleNamespace(name=t["function"]["name"], parameters=t["function"].get("parameters", {}))
             for t in tools if "function" in t]
    return {"messages": normalize_tool_calls(messages, specs), "tools": [dict(t) for t in tools]}  # type: ignore[arg-type]


def conversation_problem(row: dict) -> str | None:
    """Why a ``messages`` row cannot be trained on, or None: it needs a list of messages with roles,
    string content (tool-call turns may have none) and at least one assistant turn."""
    msgs = row.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return f"`messages` must be a non-empty list of chat messages, got {msgs!r:.60}"
    for m in msgs:
        if not isinstance(m, dict) or not m.get("role"):
            return "`messages` has a message without a role"
        if not isinstance(m.get("content") or "", str) or (not m.get("content") and not m.get("tool_calls")):
            return f"a {m['role']} message has neither string content nor tool calls"
    if not any(m["role"] == "assistant" for m in msgs):
        return "`messages` has no assistant turn to train on"
    if not isinstance(row.get("tools", []), list):
        return "`tools` must be a list of JSON schemas"
    return None


def token_rows(rows: Sequence[dict], tokenizer) -> list[dict[str, list[int]]]:
    """``{"input_ids", "completion_mask"}`` per ``messages`` row (see the module docstring).

    Raises:
        ConfigError: a row is not a ``messages`` row (one SFT run takes one kind of row).
        sdk.rollout.errors.ToolError: the template cannot render tool calls or is not prefix preserving.
    """
    from sdk.rollout.chat_template import assistant_mask, ensure_tool_template

    if any("messages" not in r for r in rows):
        raise ConfigError("SFT rows mix tool-use conversations (`messages`) with prompt-completion rows",
                          "give one SFT run one kind of row (expert iteration over agentic rollouts replays "
                          "references as tool-use trajectories; turn rl.expert.replay_self_distill off)")
    tok = copy.deepcopy(tokenizer)
    ensure_tool_template(tok)
    out = []
    for row in rows:
        conv = assistant_mask(tok, [_plain(m) for m in row["messages"]], row.get("tools") or None)
        out.append({"input_ids": conv.input_ids, "completion_mask": conv.assistant_mask})
    return out


def _plain(message: dict[str, Any]) -> dict[str, Any]:
    """A message as chat templates read it: content a string, tool calls as stored."""
    return {**message, "content": message.get("content") or ""}
