"""Multi-turn tool rollouts: generate, parse calls, answer them, append the results, repeat.

One engine serves training (wrapped as TRL's ``rollout_func`` in :mod:`sdk.rollout.trl_rollout`)
and evaluation (with :func:`hf_generator`), so "valid tool-call rate" and "task success" are
measured the same way before and after training.

Token bookkeeping follows TRL's own ``_tool_call_loop`` (grpo_trainer.py): the sequence is
never re-tokenised; each tool answer is appended as the *suffix* the chat template renders
after an assistant tool-call turn (tool messages plus the next assistant header), found by
rendering a dummy conversation with and without the tool messages; those tokens get
``env_mask`` 0 so they are never trained. Deviations from TRL, and why:

* a call with bad arguments (cut-off JSON, a list, empty when arguments are required) is
  answered with an error message and the rollout goes on; TRL falls back to plain text and
  ends the rollout, so the model never learns from the error (field case T3);
* ``max_calls`` counts *calls* per rollout (TRL counts iterations); calls past it are
  answered "limit reached" and the model gets one more turn to answer;
* every step is logged (calls, validity, tool answers, retrieved documents);
* every call gets a unique, deterministic id (``call_<turn>_<k>`` unless the model wrote a unique
  one), on the assistant turn's ``tool_calls`` and its tool answer's ``tool_call_id`` (field case T4).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from sdk.rollout.chat_template import end_of_turn_ids, render
from sdk.rollout.errors import ToolError
from sdk.rollout.tools import ToolBox, ToolOutcome, assign_call_ids, parse_tool_calls

Generate = Callable[..., list[list[int]]]
"""``generate(batch of token-id lists) -> new token ids per row`` (ending with an end-of-turn token when finished).
A generator that takes the keyword ``max_new_tokens`` is given the most tokens any row of the batch still
has room for in its rollout's budget, and should generate no more (tokens past the budget are cut anyway)."""


@dataclass
class Episode:
    """One rollout.

    Attributes:
        messages: the prompt followed by the assistant and tool messages of the rollout.
        prompt_ids: the rendered prompt's token ids.
        completion_ids: everything after the prompt: model tokens and tool-answer tokens.
        env_mask: one int per ``completion_ids`` token: 1 written by the model (trained), 0 tool answer.
        outcomes: ``(turn, outcome)`` per call, in order.
        stop: ``answer`` (a turn without calls), ``length`` (token budget), ``max_turns``.
        extra: what the rollout's toolbox reported at the end (``ToolBox.final``), merged into the trace.
    """

    messages: list[dict[str, Any]]
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    outcomes: list[tuple[int, ToolOutcome]] = field(default_factory=list)
    stop: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def final_text(self) -> str:
        """The last assistant message's text ("" when the rollout ended on a tool call)."""
        last = next((m for m in reversed(self.messages) if m["role"] != "system"), None)
        return last["content"] if last and last["role"] == "assistant" and not last.get("tool_calls") else ""

    def trace(self) -> dict[str, Any]:
        """JSON-able record: calls (id, name, arguments, valid, ok, error, answer, documents), counts, stop."""
        calls = [{"turn": turn, "id": o.call.id, "name": o.call.name, "arguments": o.call.arguments, "valid": o.call.valid,
                  "ok": o.ok, "error": o.call.error, "answer": o.content[:500], "documents": list(o.documents)}
                 for turn, o in self.outcomes]
        return {"calls": calls, "n_calls": len(calls), "n_valid": sum(c["valid"] for c in calls),
                "stop": self.stop, "final": self.final_text, **self.extra}


@runtime_checkable
class PromptToolBoxes(Protocol):
    """A maker of toolboxes bound to each rollout's prompt (e.g. a change task's repository)."""

    def for_prompt(self, prompt: list[dict[str, Any]]) -> ToolBox:
        """A fresh :class:`ToolBox` for the rollout of ``prompt``."""


def tool_suffix_ids(tokenizer, tool_messages: list[dict[str, Any]]) -> list[int]:
    """Token ids the template puts after an assistant tool-call turn's end-of-turn token: the tool
    messages and the next assistant header (so the model answers next).

    Raises:
        ToolError: the template is not prefix preserving around tool messages.
    """
    dummy = [{"role": "user", "content": "x"},
             {"role": "assistant", "content": "", "tool_calls": [
                 {"type": "function", "function": {"name": tool_messages[0].get("name", "tool"), "arguments": {}}}]}]
    before = render(tokenizer, dummy)
    after = render(tokenizer, dummy + tool_messages, add_generation_prompt=True)
    ids_before = tokenizer(before, add_special_tokens=False)["input_ids"]
    ids_after = tokenizer(after, add_special_tokens=False)["input_ids"]
    if not after.startswith(before) or ids_after[: len(ids_before)] != ids_before:
        raise ToolError("the chat template renders the assistant's tool-call turn differently once a tool answer "
                        "follows (not prefix preserving)",
                        "use sdk.rollout.chat_template.TOOL_CHATML_TEMPLATE or another prefix-preserving template")
    eot = end_of_turn_ids(tokenizer)
    ends = [k for k, t in enumerate(ids_before) if t in eot]
    cut = ends[-1] + 1 if ends else len(ids_before)
    return ids_after[cut:]


def run_episodes(prompts: Sequence[list[dict[str, Any]]], tokenizer, make_toolbox: Callable[[], ToolBox] | PromptToolBoxes,
                 generate: Generate, max_completion_tokens: int, max_turns: int | None = None) -> list[Episode]:
    """Roll out every prompt to the end, batching the generation of all unfinished rollouts per turn.

    Args:
        prompts: chat messages per rollout (one rollout per entry; repeat a prompt for a group).
        tokenizer: fast tokenizer whose template renders tool calls (see ``ensure_tool_template``).
        make_toolbox: a fresh :class:`ToolBox` per rollout (call counts are per rollout); a
            :class:`PromptToolBoxes` gets the rollout's prompt (tools bound to its task).
        generate: see :data:`Generate`.
        max_completion_tokens: budget for model and tool tokens after the prompt.
        max_turns: assistant turns; default ``max_calls + 1``.
    Returns:
        one :class:`Episode` per prompt, in order.
    """
    boxes = [make_toolbox.for_prompt(p) if isinstance(make_toolbox, PromptToolBoxes) else make_toolbox()
             for p in prompts]
    schemas = boxes[0].schemas() if boxes else []
    max_turns = max_turns or (boxes[0].max_calls + 1 if boxes else 1)
    eps = [Episode(messages=[dict(m) for m in p], prompt_ids=tokenizer(
        render(tokenizer, p, schemas, add_generation_prompt=True), add_special_tokens=False)["input_ids"])
        for p in prompts]
    eot = end_of_turn_ids(tokenizer)
    capped = takes_max_new_tokens(generate)
    active = list(range(len(eps)))
    for turn in range(max_turns):
        if not active:
            break
        room = max(max_completion_tokens - len(eps[i].completion_ids) for i in active)
        batch = [eps[i].prompt_ids + eps[i].completion_ids for i in active]
        outs = generate(batch, max_new_tokens=room) if capped else generate(batch)
        still = []
        for i, out in zip(active, outs):
            if _step(eps[i], boxes[i], list(out), turn, tokenizer, eot, max_completion_tokens):
                still.append(i)
        active = still
    for i in active:
        eps[i].stop = "max_turns"
    for ep, box in zip(eps, boxes):
        ep.extra = box.final()
    return eps


def takes_max_new_tokens(generate: Generate) -> bool:
    """Whether ``generate`` accepts the keyword ``max_new_tokens`` (see :data:`Generate`)."""
    import inspect

    try:
        return "max_new_tokens" in inspect.signature(generate).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False


def _step(ep: Episode, box: ToolBox, out: list[int], turn: int, tokenizer, eot: set[int], budget: int) -> bool:
    """Add one generated turn to ``ep``; answer its calls. True when the rollout continues."""
    out = out[: max(0, budget - len(ep.completion_ids))]
    ep.completion_ids += out
    ep.env_mask += [1] * len(out)
    text = tokenizer.decode(out, skip_special_tokens=True)
    calls = assign_call_ids(parse_tool_calls(text), f"call_{turn}", {o.call.id for _, o in ep.outcomes})
    content = text.split("<tool_call>")[0] if calls else text
    message: dict[str, Any] = {"role": "assistant", "content": content.strip() if calls else text}
    if not calls:
        ep.messages.append(message)
        ep.stop = "answer" if out and out[-1] in eot else "length"
        return False
    outcomes = [box.answer(c) for c in calls]
    message["tool_calls"] = [{"id": o.call.id, "type": "function",
                              "function": {"name": o.call.name, "arguments": o.call.arguments or {}}} for o in outcomes]
    ep.messages.append(message)
    ep.outcomes += [(turn, o) for o in outcomes]
    tool_msgs = [{"role": "tool", "tool_call_id": o.call.id, "name": o.call.name, "content": o.content}
                 for o in outcomes]
    ep.messages += tool_msgs
    if not out or out[-1] not in eot:
        ep.stop = "length"
        return False
    suffix = tool_suffix_ids(tokenizer, tool_msgs)
    if len(ep.completion_ids) + len(suffix) >= budget:
        ep.stop = "length"
        return False
    ep.completion_ids += suffix
    ep.env_mask += [0] * len(suffix)
    return True


def hf_generator(model, tokenizer, max_new_tokens: int, temperature: float = 0.0, batch_size: int = 8,
                 seed: int = 0) -> Generate:
    """A :data:`Generate` over a transformers model (greedy when ``temperature`` is 0), for evaluation.

    Rows are left-padded in batches of ``batch_size`` on the model's device; each output is cut after
    its first end-of-turn token. A call's ``max_new_tokens`` (the rollouts' room left) lowers the per-turn
    limit for that call, never raises it.
    """
    import torch

    eot = end_of_turn_ids(tokenizer)
    cap = max_new_tokens
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    def generate(batch: list[list[int]], max_new_tokens: int = max_new_tokens) -> list[list[int]]:
        torch.manual_seed(seed)
        new_tokens = max(1, min(max_new_tokens, cap))
        outs: list[list[int]] = []
        for start in range(0, len(batch), batch_size):
            rows = batch[start: start + batch_size]
            width = max(map(len, rows))
            ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows], device=model.device)
            attn = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=model.device)
            sample = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
            with torch.no_grad():
                gen = model.generate(input_ids=ids, attention_mask=attn, max_new_tokens=new_tokens,
                                     pad_token_id=pad, eos_token_id=sorted(eot), **sample)
            for row in gen[:, width:].tolist():
                cut = next((k + 1 for k, t in enumerate(row) if t in eot), len(row))
                outs.append(row[:cut])
        return outs

    return generate


def traces_json(episodes: Sequence[Episode]) -> list[str]:
    """One JSON string per episode (a column TRL forwards to reward functions)."""
    return [json.dumps(ep.trace(), ensure_ascii=False, default=str) for ep in episodes]
