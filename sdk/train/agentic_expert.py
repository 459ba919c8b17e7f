"""Expert iteration over agentic change rollouts (``rl.algorithm: expert_iteration`` with
``tools.change_agent``; issue 17).

The E-step samples ``k`` tool-using trajectories per change task with the engine of
:mod:`sdk.rollout.episode` (each over its own scratch copy of the task's repository, the
:class:`~sdk.rollout.change_agent.ChangeAgent`'s toolboxes); a trajectory's completion is
:func:`~sdk.rollout.change_agent.agent_completion` (the workspace's diff and the call counts), scored by
the run's sandboxed change reward exactly like a written diff, so "verified" means what it means for
single-shot answers (status ok, full marks, no flag). The M-step fine-tunes on the verified
trajectories as tool-use conversations (:mod:`sdk.train.tool_rows`): the assistant's turns, tool calls
included, are trained; every tool answer is masked. Call ids are the rollout's own ``call_<turn>_<k>``,
kept on the call and its answer (field case T4).

Replayed references (``rl.expert.replay_references``, for the tasks a round did not solve) are the
reference diffs as demonstrations in the same form: one assistant turn that writes each file the
commit changed with ``edit_file`` (the whole new file), answered by a real toolbox over the task's
workspace, then a closing turn; a reference that deletes a file (no tool can) is not replayed. The
replayed demonstration shows the tool-call format and the change; it does not show how to find
where to make it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sdk.tasks.records import Task
from sdk.train.tool_rows import trajectory_row

DONE = "I made the change."
Load = Callable[[str, Path | None, int], tuple[Any, Any, Callable]]
"""``(model_path, adapter, seed) -> (model with .close(), tokenizer with a tool template, generate step)``."""


class AgentSampler:
    """``gen(prompts, k)`` of :func:`sdk.train.expert_iteration.run_expert_iteration` for agentic rollouts.

    Args:
        agent: a :class:`~sdk.rollout.change_agent.ChangeAgent` (per-prompt toolboxes).
        tokenizer: renders tool calls (:func:`sdk.rollout.chat_template.ensure_tool_template`).
        step: the batched generate step (:data:`sdk.rollout.episode.Generate`).
        max_tokens, max_turns: per rollout (``tools.change_agent.max_tokens``, ``tools.max_turns``).
        traces: a JSONL file each rollout's trace and conversation is appended to (None: not kept).
        model: closed by :meth:`close` (None: nothing to close).
    """

    def __init__(self, agent, tokenizer, step: Callable, max_tokens: int, max_turns: int | None,
                 traces: Path | None = None, model: Any = None) -> None:
        self.agent, self.tokenizer, self.step = agent, tokenizer, step
        self.max_tokens, self.max_turns, self.traces, self.model = max_tokens, max_turns, traces, model

    def __call__(self, prompts: list[list[dict]], k: int) -> list[list[tuple[str, int, dict]]]:
        """Per prompt, ``k`` samples ``(completion text, tokens the model wrote, conversation)``; the
        conversation is ``{"messages", "tools", "valid"}`` (``valid``: every call named an offered tool and
        its arguments parsed and matched the tool's schema; a tool that answered with an error is fine)."""
        from sdk.rollout.change_agent import agent_completion
        from sdk.rollout.episode import run_episodes

        episodes = run_episodes([p for p in prompts for _ in range(k)], self.tokenizer, self.agent, self.step,
                                self.max_tokens, self.max_turns)
        schemas = self.agent.for_prompt(prompts[0]).schemas() if prompts else []
        names = {t["function"]["name"] for t in schemas}
        outs = [(agent_completion(ep.trace()), sum(ep.env_mask), {"messages": ep.messages, "tools": schemas, "valid": all(
                 o.call.arguments is not None and o.call.name in names for _, o in ep.outcomes)}) for ep in episodes]
        if self.traces is not None:
            self.traces.parent.mkdir(parents=True, exist_ok=True)
            with self.traces.open("a", encoding="utf-8") as fh:
                for ep in episodes:
                    fh.write(json.dumps({**ep.trace(), "messages": ep.messages}, default=str) + "\n")
        return [outs[i * k:(i + 1) * k] for i in range(len(prompts))]

    def close(self) -> None:
        """Free the model (if any)."""
        if self.model is not None:
            self.model.close()


def reference_row(task: Task, agent) -> dict | None:
    """The reference diff of a change task as a tool-use demonstration (see the module docstring), or
    None when it cannot be one (no reference, a deleted file, ``edit_file`` not offered, a refused edit)."""
    from sdk.rewards.patch import PatchError, apply_diff, split_diff
    from sdk.rollout.tools import ToolCall
    from sdk.tasks.change import ChangeVerifier

    verifier = task.verifier
    if not task.reference or not isinstance(verifier, ChangeVerifier) or "edit_file" not in agent.tools:
        return None
    try:
        new = apply_diff(verifier.files, split_diff(task.reference)).files
    except PatchError:
        return None
    changed = sorted(p for p in {*new, *verifier.files} if new.get(p) != verifier.files.get(p))
    if not changed or any(p not in new for p in changed):
        return None
    prompt = [m.model_dump() for m in task.prompt]
    box = agent.for_prompt(prompt)
    calls = [ToolCall(name="edit_file", id=f"call_0_{k}", arguments={"path": p, "new_text": new[p]},
                      raw=json.dumps({"path": p, "new_text": new[p]})) for k, p in enumerate(changed)]
    outcomes = [box.answer(c) for c in calls]
    if not all(o.ok for o in outcomes):
        return None
    turn = {"role": "assistant", "content": "", "tool_calls": [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls]}
    answers = [{"role": "tool", "tool_call_id": o.call.id, "name": o.call.name, "content": o.content} for o in outcomes]
    return trajectory_row([*prompt, turn, *answers, {"role": "assistant", "content": DONE}], box.schemas())


class AgenticExpert:
    """What :func:`~sdk.train.expert_iteration.run_expert_iteration` needs for agentic change rollouts:
    :meth:`make_generator`, :meth:`row` (``row_of``) and :meth:`references`.

    Args:
        agent: the run's :class:`~sdk.rollout.change_agent.ChangeAgent`.
        load: builds a round's model, tokenizer and generate step (see :data:`Load`).
        max_tokens, max_turns: per rollout.
        traces: JSONL file for every rollout's trace (appended to).
    """

    def __init__(self, agent, load: Load, max_tokens: int, max_turns: int | None, traces: Path | None = None) -> None:
        self.agent, self.load, self.max_tokens, self.max_turns, self.traces = agent, load, max_tokens, max_turns, traces

    def make_generator(self, model_path: str, adapter: Path | None, seed: int) -> AgentSampler:
        """A round's sampler with the model at ``adapter``."""
        model, tokenizer, step = self.load(model_path, adapter, seed)
        return AgentSampler(self.agent, tokenizer, step, self.max_tokens, self.max_turns, self.traces, model)

    @staticmethod
    def row(task: Task, sample: tuple) -> dict | None:
        """The SFT row of a verified sample: its conversation (:func:`~sdk.train.tool_rows.trajectory_row`),
        or None when a call was invalid (the template would render it as a call the model never wrote)."""
        conv = sample[2]
        return trajectory_row(conv["messages"], conv["tools"]) if conv["valid"] else None

    def references(self, tasks: Sequence[Task]) -> list[dict]:
        """Demonstration rows of ``tasks``' references (:func:`reference_row`; those that cannot be one are left out)."""
        return [r for r in (reference_row(t, self.agent) for t in tasks) if r is not None]


def hf_load(batch_size: int, max_new_tokens: int, temperature: float, dtype: str) -> Load:
    """A :data:`Load` over :class:`sdk.generate.HFGenerator` (``max_new_tokens`` per assistant turn)."""

    def load(model_path: str, adapter: Path | None, seed: int):
        from sdk.generate import HFGenerator
        from sdk.rollout.chat_template import ensure_tool_template
        from sdk.rollout.episode import hf_generator

        model = HFGenerator(model_path, adapter, batch_size, max_new_tokens, temperature, seed, dtype)
        ensure_tool_template(model.tokenizer)
        return model, model.tokenizer, hf_generator(model.model, model.tokenizer, max_new_tokens, temperature,
                                                    batch_size, seed)

    return load


def demonstration_rows(tasks: Sequence[Task], rows: Sequence[dict], agent) -> list[dict]:
    """SFT rows of a run whose change tasks are rolled out with tools (the sft stage with ``tools.change_agent``):
    each change task's reference as its :func:`reference_row` demonstration (its prompt asks for tool use, not
    a diff), and every other prompt-completion row of ``rows`` as a conversation without tools, so one SFT
    run gets one kind of row (:func:`sdk.train.tool_rows.token_rows`).

    Args:
        tasks: the train tasks whose references ``rows`` hold.
        rows: :func:`sdk.train.sft.sft_rows` of the run (references and feedback examples).
        agent: the run's :class:`~sdk.rollout.change_agent.ChangeAgent` (the tools the rollouts offer).
    """
    from sdk.tasks.change import ChangeVerifier

    change = [t for t in tasks if isinstance(t.verifier, ChangeVerifier)]
    asked = {t.prompt[-1].content for t in change}
    demos = [r for r in (reference_row(t, agent) for t in change) if r is not None]
    others = [{"messages": [*r["prompt"], *r["completion"]], "tools": []} for r in rows
              if r["prompt"][-1]["content"] not in asked]
    return demos + others
