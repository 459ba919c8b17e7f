"""Chat templates for multi-turn training: the assistant-token mask, prefix checks, a tool template.

Training on a conversation means training on the assistant's tokens only: never the system
prompt, the user's turns, the role headers or the tool results (field case T1). Templates that
carry ``{% generation %}`` markers give that mask directly (transformers'
``return_assistant_tokens_mask``); most ChatML templates, SmolLM2's included, do not. For those
:func:`assistant_mask` finds the mask by *rendering prefixes*: for assistant turn ``i`` it
renders ``messages[:i]`` with the generation prompt (the text the model is given) and
``messages[:i+1]`` (the text once it has answered); the difference is what the model wrote.
The trained span ends at the end-of-turn token (``<|im_end|>``), so the newline a template
writes after it is not trained. This is the approach of TRL's ``get_training_chat_template``
(which patches known templates with markers) generalised to any template that passes the checks.

It only works when the template renders a conversation's earlier turns the same whatever
follows them (prefix preserving). Templates that rewrite history -- Qwen3 drops earlier
``<think>`` blocks, some templates move a system prompt -- fail :func:`check_prefix_preserving`
with a message naming the first turn that changes; we refuse rather than train on a wrong mask.

:data:`TOOL_CHATML_TEMPLATE` is a ChatML template that renders tools, tool calls and tool
results (Hermes/Qwen2.5 format: ``<tool_call>{json}</tool_call>``); :func:`ensure_tool_template`
installs it on a plain ChatML tokenizer whose template cannot render tool calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sdk.rollout.errors import ToolError

END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "</s>")

TOOL_CHATML_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] + '\\n\\n' }}{%- endif %}"
    "{{- 'You may call tools. Tools:\\n' }}"
    "{%- for tool in tools %}{{- (tool | tojson) + '\\n' }}{%- endfor %}"
    "{{- 'To call a tool, reply with <tool_call>{\"name\": <name>, \"arguments\": {...}}</tool_call>.<|im_end|>\\n' }}"
    "{%- elif messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'system' and loop.first %}"
    "{%- elif message['role'] == 'assistant' %}{{- '<|im_start|>assistant\\n' + (message['content'] or '') }}"
    "{%- for call in message.get('tool_calls') or [] %}{%- set f = call['function'] if 'function' in call else call %}"
    "{{- '<tool_call>' + ({'name': f['name'], 'arguments': f['arguments']} | tojson) + '</tool_call>' }}"
    "{%- endfor %}{{- '<|im_end|>\\n' }}"
    "{%- elif message['role'] == 'tool' %}"
    "{{- '<|im_start|>tool\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


@dataclass(frozen=True)
class MaskedConversation:
    """A tokenised conversation.

    Attributes:
        input_ids: token ids of the whole rendered conversation, length ``T``.
        assistant_mask: ``T`` ints, 1 where the token was written by the assistant (trained), else 0.
        text: the rendered text.
        method: ``generation_marker`` (the template's own markers) or ``prefix_render``.
    """

    input_ids: list[int]
    assistant_mask: list[int]
    text: str
    method: str

    def trained_text(self, tokenizer) -> str:
        """The text of the trained tokens only (for inspection and tests)."""
        return tokenizer.decode([t for t, m in zip(self.input_ids, self.assistant_mask) if m])


def render(tokenizer, messages: Sequence[dict], tools: list[dict] | None = None,
           add_generation_prompt: bool = False) -> str:
    """The template's text for ``messages`` (dicts with role/content[/tool_calls]), ``tools`` as JSON schemas."""
    kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": add_generation_prompt}
    if tools:
        kwargs["tools"] = tools
    return tokenizer.apply_chat_template(list(messages), **kwargs)


def end_of_turn_ids(tokenizer) -> set[int]:
    """Ids of the tokens that close an assistant turn: the eos token and known end-of-turn tokens in the vocab."""
    vocab = tokenizer.get_vocab()
    ids = {vocab[t] for t in END_OF_TURN_TOKENS if t in vocab}
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return ids


def check_prefix_preserving(tokenizer, messages: Sequence[dict], tools: list[dict] | None = None) -> None:
    """Check that every assistant turn renders the same whatever follows it.

    Raises:
        ToolError: the template rewrites an earlier turn (names the turn and the first difference),
            or its generation prompt is not a prefix of the answered turn.
    """
    full = render(tokenizer, messages, tools)
    for i, msg in enumerate(messages):
        if msg["role"] != "assistant":
            continue
        before = render(tokenizer, messages[:i], tools, add_generation_prompt=True)
        upto = render(tokenizer, messages[: i + 1], tools)
        if not upto.startswith(before):
            raise ToolError(
                f"chat template: the generation prompt for assistant turn {i} is not a prefix of the rendered turn "
                f"(differs at char {_first_diff(before, upto)}: {before[_first_diff(before, upto):][:40]!r})",
                "use a template whose add_generation_prompt text is exactly the assistant header it renders, or one "
                "with {% generation %} markers")
        if not full.startswith(upto):
            at = _first_diff(upto, full)
            raise ToolError(
                f"chat template does not preserve prefixes across turns: assistant turn {i} renders differently once "
                f"later turns follow (first difference at char {at}: {upto[at:at + 40]!r} vs {full[at:at + 40]!r})",
                "use a prefix-preserving template (e.g. sdk.rollout.chat_template.TOOL_CHATML_TEMPLATE for ChatML "
                "models, or TRL's get_training_chat_template for Qwen3), or train on single-turn rows")


def assistant_mask(tokenizer, messages: Sequence[dict], tools: list[dict] | None = None) -> MaskedConversation:
    """Tokenise ``messages`` and mark the assistant's tokens (content + end-of-turn token).

    Args:
        tokenizer: a Hugging Face fast tokenizer with a chat template.
        messages: chat messages as dicts; assistant messages may carry ``tool_calls``.
        tools: JSON schemas of the tools (rendered into the system prompt by tool templates).
    Returns:
        :class:`MaskedConversation`.
    Raises:
        ToolError: no assistant message, a template that does not preserve prefixes, or a slow
            tokenizer without offsets.
    """
    messages = list(messages)
    if not any(m["role"] == "assistant" for m in messages):
        raise ToolError("the conversation has no assistant message to train on", "end the conversation with an assistant turn")
    template = tokenizer.chat_template or ""
    if "{% generation %}" in template or "{%- generation %}" in template:
        out = tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True)
        text = render(tokenizer, messages, tools)
        return MaskedConversation(list(out["input_ids"]), list(out["assistant_masks"]), text, "generation_marker")
    check_prefix_preserving(tokenizer, messages, tools)
    text = render(tokenizer, messages, tools)
    spans = []
    for i, msg in enumerate(messages):
        if msg["role"] == "assistant":
            start = len(render(tokenizer, messages[:i], tools, add_generation_prompt=True))
            spans.append((start, len(render(tokenizer, messages[: i + 1], tools))))
    if not getattr(tokenizer, "is_fast", False):
        raise ToolError("assistant masks by prefix rendering need a fast tokenizer (character offsets)",
                        "load the tokenizer with use_fast=True")
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(enc["input_ids"]), enc["offset_mapping"]
    eot = end_of_turn_ids(tokenizer)
    mask = [0] * len(ids)
    for start, end in spans:
        inside = [k for k, (a, b) in enumerate(offsets) if a >= start and b <= end and b > a]
        last_eot = max((k for k in inside if ids[k] in eot), default=None)
        for k in inside:
            if last_eot is None or k <= last_eot:
                mask[k] = 1
        if last_eot is None:  # no end-of-turn token: drop trailing whitespace-only tokens
            for k in reversed(inside):
                if tokenizer.decode([ids[k]]).strip():
                    break
                mask[k] = 0
    return MaskedConversation(ids, mask, text, "prefix_render")


def can_render_tool_calls(tokenizer) -> bool:
    """True when the template shows a tool call's name and arguments and a tool result's content."""
    msgs = [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "name_s3nt1", "arguments": {"key_s3nt1": "val_s3nt1"}}}]},
            {"role": "tool", "name": "name_s3nt1", "content": "result_s3nt1"}]
    try:
        text = render(tokenizer, msgs)
    except Exception:  # noqa: BLE001 - any template error means "cannot"
        return False
    return all(s in text for s in ("name_s3nt1", "key_s3nt1", "val_s3nt1", "result_s3nt1"))


def ensure_tool_template(tokenizer) -> str:
    """Make ``tokenizer`` able to render tool calls; returns what was done.

    Returns ``"kept"`` when its template already renders tool calls and results, ``"chatml"``
    when it was a plain ChatML template and :data:`TOOL_CHATML_TEMPLATE` was installed.

    Raises:
        ToolError: the template renders no tool calls and is not ChatML (we do not guess a format).
    """
    if can_render_tool_calls(tokenizer):
        return "kept"
    if "<|im_start|>" in (tokenizer.chat_template or "") and "<|im_end|>" in tokenizer.get_vocab():
        tokenizer.chat_template = TOOL_CHATML_TEMPLATE
        return "chatml"
    raise ToolError("the tokenizer's chat template cannot render tool calls and is not ChatML",
                    "set tokenizer.chat_template to a template that renders `tool_calls` and `tool` messages")


def _first_diff(a: str, b: str) -> int:
    n = min(len(a), len(b))
    return next((k for k in range(n) if a[k] != b[k]), n)
