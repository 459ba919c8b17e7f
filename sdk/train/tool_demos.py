"""Verified tool-call demonstrations for SFT before RL (``tools.demonstrations``; issue 15).

A small model that never writes a tool call gives GRPO no reward signal (every rollout of a group
scores 0). The standard remedy is to fine-tune on demonstrations first (Toolformer, Schick et al.
2023; ToolLLM, Qin et al. 2023). Here a task source that knows each task's calls puts them in
``metadata["demonstration"]``: a list of assistant turns, each a list of calls
``{"name": ..., "arguments": {...}}`` (later turns may depend on earlier answers; the source knows the
values). :func:`replay` turns one into a conversation by running it *through the rollout engine*
(:func:`sdk.rollout.episode.run_episodes`) with a scripted generator: each turn is the text the chat
template renders for that assistant message (tokenized with the rollout's tokenizer), so the calls are
read back by the rollout's own parser (:func:`sdk.rollout.tools.parse_tool_calls`), answered by the real
tools, and the final turn (``answer_format`` with the verifier's expected answer) is scored by the
tool-task reward (:class:`sdk.rollout.rewards.ToolTaskReward`) exactly as a model's rollout would be.
A demonstration is kept only when the replay ends with an answer, every call was valid and answered
without error, the reward gives full marks (1.0), and (``grounded``) the answer appears in a real tool
answer. The kept conversation is the episode's own messages, stored by
:func:`sdk.train.tool_rows.trajectory_row` and tokenized for training by
:func:`sdk.train.tool_rows.token_rows` (same template: field case K1).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sdk.tasks.records import AnswerVerifier, Split, Task
from sdk.train.tool_rows import trajectory_row

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass
class DemoReport:
    """What :func:`demonstration_rows` did.

    Attributes:
        kept: task ids whose demonstration replayed to full marks.
        dropped: ``{task id: reason}`` for demonstrations left out (tasks without one are not counted).
        without: train tasks that carry no demonstration.
    """

    kept: list[str] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)
    without: int = 0

    def summary(self) -> dict[str, Any]:
        """JSON-able counts and reasons."""
        return {"kept": len(self.kept), "dropped": len(self.dropped), "without_demonstration": self.without,
                "dropped_reasons": dict(self.dropped)}


def demo_turns(task: Task) -> list[list[dict[str, Any]]] | None:
    """The task's demonstration as turns of ``{"name", "arguments"}`` calls, or None when it has none.

    Raises:
        ValueError: ``metadata["demonstration"]`` is not a list of non-empty lists of such calls.
    """
    turns = task.metadata.get("demonstration")
    if turns is None:
        return None
    ok = isinstance(turns, list) and turns and all(
        isinstance(t, list) and t and all(isinstance(c, dict) and isinstance(c.get("name"), str)
                                          and isinstance(c.get("arguments", {}), dict) for c in t) for t in turns)
    if not ok:
        raise ValueError(f"task {task.id}: metadata['demonstration'] must be a list of turns, each a non-empty list "
                         f"of {{'name': str, 'arguments': {{...}}}} calls; got {turns!r:.120}")
    return turns


def turn_ids(tokenizer, message: dict[str, Any]) -> list[int]:
    """Token ids of one assistant ``message`` as the chat template renders it after the generation prompt,
    up to and including its end-of-turn token: what a model would generate for that turn."""
    from sdk.rollout.chat_template import end_of_turn_ids, render

    head = [{"role": "user", "content": "x"}]
    before = render(tokenizer, head, add_generation_prompt=True)
    text = render(tokenizer, [*head, message])
    if not text.startswith(before):
        from sdk.rollout.errors import ToolError

        raise ToolError("the chat template's generation prompt is not a prefix of the rendered assistant turn",
                        "use a prefix-preserving template (sdk.rollout.chat_template.TOOL_CHATML_TEMPLATE)")
    ids = tokenizer(text[len(before):], add_special_tokens=False)["input_ids"]
    eot = end_of_turn_ids(tokenizer)
    ends = [k for k, t in enumerate(ids) if t in eot]
    return ids[: ends[0] + 1] if ends else ids


def scripted(tokenizer, turns: Sequence[list[dict[str, Any]]], final: str) -> Callable[..., list[list[int]]]:
    """A :data:`sdk.rollout.episode.Generate` for one rollout that writes ``turns`` (tool calls) and then
    ``final`` (text), one assistant turn per call."""
    messages = [{"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": c["name"], "arguments": c.get("arguments", {})}} for c in t]}
        for t in turns] + [{"role": "assistant", "content": final}]
    outs = iter([turn_ids(tokenizer, m) for m in messages])

    def generate(batch: list[list[int]]) -> list[list[int]]:
        return [next(outs, [])]

    return generate


def _grounded(answer: str, trace: dict[str, Any]) -> bool:
    """True when ``answer`` appears in an answered call's output (as an equal number, or verbatim)."""
    outputs = [c["answer"] for c in trace["calls"] if c.get("ok")]
    try:
        value = float(answer)
    except ValueError:
        return any(answer in o for o in outputs)
    return any(abs(float(n) - value) < 1e-9 for o in outputs for n in _NUMBER.findall(o))


def _problem(stop: str, trace: dict[str, Any], score: float | None, comps: dict[str, float]) -> str:
    """Why a replayed demonstration is not verified ("" when it is, grounding aside)."""
    if stop != "answer":
        return f"the replay did not end with an answer (stop: {stop})"
    bad = next((c for c in trace["calls"] if not (c["valid"] and c["ok"])), None)
    if bad is not None:
        return f"call {bad['name']} was invalid or failed: {bad['error'] or bad['answer']}"
    if score is None or score < 1.0:
        return f"the reward is {score} (components {json.dumps(comps, sort_keys=True)}), not full marks"
    return ""


def replay(task: Task, tokenizer, make_box: Callable, reward, answer_format: str = "Answer: {answer}",
           grounded: bool = True, max_turns: int | None = None,
           budget: int = 4096) -> tuple[dict[str, Any] | None, str]:
    """``(row, "")`` for a demonstration that replays to full marks, else ``(None, why)`` (see the module
    docstring). ``row`` is ``{"messages", "tools"}`` (:func:`sdk.train.tool_rows.trajectory_row`).

    Args:
        task: a task with ``metadata["demonstration"]`` and an :class:`AnswerVerifier`.
        tokenizer: the rollout tokenizer, its template able to render tool calls
            (:func:`sdk.rollout.chat_template.ensure_tool_template`).
        make_box: a fresh :class:`sdk.rollout.tools.ToolBox` per call (the run's tools).
        reward: a :class:`sdk.rollout.rewards.ToolTaskReward`.
        max_turns: assistant turns allowed (the run's ``tools.max_turns``; None: ``max_calls`` + 1).
        budget: completion tokens allowed (model and tool answers).
    """
    from sdk.rollout.episode import run_episodes

    turns = demo_turns(task)
    if turns is None:
        return None, "no demonstration"
    if not isinstance(task.verifier, AnswerVerifier) or task.verifier.expected is None:
        return None, "the task has no expected answer to demonstrate"
    answer = str(task.verifier.expected)
    prompt = [m.model_dump() for m in task.prompt]
    gen = scripted(tokenizer, turns, answer_format.format(answer=answer))
    ep = run_episodes([prompt], tokenizer, make_box, gen, budget, max_turns)[0]
    trace = ep.trace()
    score, comps = reward.score(task, trace)
    why = _problem(ep.stop, trace, score, comps) or (
        "the answer appears in no tool answer" if grounded and not _grounded(answer, trace) else "")
    if why:
        return None, why
    return trajectory_row(ep.messages, make_box().schemas()), ""


def demonstration_rows(tasks: Sequence[Task], tokenizer, make_box: Callable, reward, answer_format: str = "Answer: {answer}",
                       grounded: bool = True, max_turns: int | None = None) -> tuple[list[dict], DemoReport]:
    """The verified demonstration rows of ``tasks`` (train tasks only) and what was kept or dropped.

    Raises:
        ValueError: a task of ``tasks`` is not in the train split (demonstrations never come from held-out
            or out-of-distribution tasks), or carries a malformed demonstration.
    """
    held = [f"{t.id} ({t.split.value})" for t in tasks if t.split != Split.TRAIN]
    if held:
        raise ValueError(f"demonstrations asked for {len(held)} task(s) outside the train split "
                         f"({', '.join(held[:3])}): build them from train tasks only")
    rows, report = [], DemoReport()
    for task in tasks:
        if task.metadata.get("demonstration") is None:
            report.without += 1
            continue
        row, why = replay(task, tokenizer, make_box, reward, answer_format, grounded, max_turns)
        if row is None:
            report.dropped[task.id] = why
        else:
            rows.append(row)
            report.kept.append(task.id)
    return rows, report
