"""Field case T1 and prefix checks: the assistant-token mask of templates without generation markers."""

from __future__ import annotations

import pytest

from sdk.rollout.chat_template import (
    TOOL_CHATML_TEMPLATE,
    assistant_mask,
    check_prefix_preserving,
    ensure_tool_template,
)
from sdk.rollout.errors import ToolError

T1 = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "2+2?"},
      {"role": "assistant", "content": "4"}]


def test_t1_only_answer_and_end_of_turn_are_trained(chatml_tokenizer):
    assert "{% generation %}" not in chatml_tokenizer.chat_template
    conv = assistant_mask(chatml_tokenizer, T1)
    assert conv.method == "prefix_render"
    assert len(conv.assistant_mask) == len(conv.input_ids)
    assert conv.trained_text(chatml_tokenizer) == "4<|im_end|>"
    trained = [t for t, m in zip(conv.input_ids, conv.assistant_mask) if m]
    assert trained[-1] == chatml_tokenizer.convert_tokens_to_ids("<|im_end|>")


def test_multi_turn_masks_each_assistant_turn_and_no_tool_result(tool_tokenizer):
    msgs = [{"role": "user", "content": "weather?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "weather", "arguments": {"city": "Paris"}}}]},
            {"role": "tool", "name": "weather", "content": "SUNNY-RESULT"},
            {"role": "assistant", "content": "It is sunny."}]
    text = assistant_mask(tool_tokenizer, msgs).trained_text(tool_tokenizer)
    assert text == '<tool_call>{"name": "weather", "arguments": {"city": "Paris"}}</tool_call><|im_end|>It is sunny.<|im_end|>'
    assert "SUNNY-RESULT" not in text and "weather?" not in text and "assistant" not in text


def test_template_that_rewrites_history_is_refused(chatml_tokenizer):
    # drops the content of earlier assistant turns (as Qwen3 drops earlier <think> blocks)
    tok = chatml_tokenizer.__class__.from_pretrained(chatml_tokenizer.name_or_path)
    tok.chat_template = ("{% for m in messages %}{% if m.role == 'assistant' and not loop.last %}"
                         "{{'<|im_start|>assistant\n<|im_end|>\n'}}{% else %}"
                         "{{'<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n'}}{% endif %}{% endfor %}"
                         "{% if add_generation_prompt %}{{'<|im_start|>assistant\n'}}{% endif %}")
    msgs = T1 + [{"role": "user", "content": "and 3+3?"}, {"role": "assistant", "content": "6"}]
    with pytest.raises(ToolError, match="does not preserve prefixes across turns: assistant turn 2"):
        check_prefix_preserving(tok, msgs)
    with pytest.raises(ToolError):
        assistant_mask(tok, msgs)


def test_no_assistant_message_is_a_clear_error(chatml_tokenizer):
    with pytest.raises(ToolError, match="no assistant message"):
        assistant_mask(chatml_tokenizer, T1[:2])


def test_ensure_tool_template_keeps_capable_and_refuses_unknown(tool_tokenizer):
    assert tool_tokenizer.chat_template == TOOL_CHATML_TEMPLATE
    assert ensure_tool_template(tool_tokenizer) == "kept"
    tool_tokenizer.chat_template = "{% for m in messages %}[{{m.role}}] {{m.content}}\n{% endfor %}"
    with pytest.raises(ToolError, match="not ChatML"):
        ensure_tool_template(tool_tokenizer)


MARKED = ("{% for m in messages %}{% if m.role == 'assistant' %}{{'<|im_start|>assistant\n'}}{% generation %}"
          "{{m.content + '<|im_end|>'}}{% endgeneration %}{{'\n'}}{% else %}"
          "{{'<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n'}}{% endif %}{% endfor %}"
          "{% if add_generation_prompt %}{{'<|im_start|>assistant\n'}}{% endif %}")


def test_prefix_render_agrees_with_generation_markers(chatml_tokenizer):
    msgs = T1 + [{"role": "user", "content": "and 3+3?"}, {"role": "assistant", "content": "six, 6"}]
    found = assistant_mask(chatml_tokenizer, msgs)
    tok = chatml_tokenizer.__class__.from_pretrained(chatml_tokenizer.name_or_path)
    tok.chat_template = MARKED
    native = assistant_mask(tok, msgs)
    assert native.method == "generation_marker"
    assert native.input_ids == found.input_ids
    assert native.assistant_mask == found.assistant_mask
