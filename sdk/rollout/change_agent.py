"""Agentic rollouts for change tasks: tools over the task's repository, the change reward on the result.

With ``tools.change_agent.enabled`` the rl (GRPO) and eval stages roll change tasks out with the
engine of :mod:`sdk.rollout.episode`, each rollout over its own scratch copy of its task's
repository (:class:`~sdk.rollout.change_tools.ChangeToolBox`): the model reads, searches, lists
and edits files and runs the visible tests; when it stops (a turn without a call, ``max_turns`` or
the token budget), its change is the workspace's diff against the parent, scored by the change
reward (:mod:`sdk.rewards.change`: applies, collects, fail-to-pass fraction, regression penalty),
the same reward as single-shot diffs. Tool answers are appended as template suffixes with
``env_mask`` 0, so they are never trained (TRL's ``tool_mask``), as for every tool rollout.

The rollout function gets only prompts (TRL's ``rollout_func(prompts, trainer)``), so
:class:`ChangeAgent` finds each rollout's task by its prompt's last user message, which for a
``git_history`` task names the parent commit and the change.

A rollout's *completion* as the reward and the eval rows see it is :func:`agent_completion`: the
diff in a fenced block, then a ``<tool_trace>`` line with the call counts, so a row can be
rescored without generation and the report shows the change.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from sdk.rewards.trl import SandboxReward
from sdk.rollout.change_tools import ChangeToolBox, TestRunner
from sdk.rollout.errors import ToolError
from sdk.tasks.change import ChangeVerifier
from sdk.tasks.records import Task

_TRACE = re.compile(r"<tool_trace>(.*?)</tool_trace>", re.DOTALL)


def prompt_key(prompt: Sequence[Any]) -> str:
    """A key of a prompt (chat messages as dicts or :class:`~sdk.tasks.records.Message`): the hash
    of its last user message."""
    users = [m["content"] if isinstance(m, dict) else m.content for m in prompt
             if (m["role"] if isinstance(m, dict) else m.role) == "user"]
    if not users:
        raise ToolError("a change-agent prompt has no user message", "build prompts from the task set")
    return hashlib.sha256(users[-1].encode()).hexdigest()


class ChangeAgent:
    """Per-rollout toolboxes for change tasks (:class:`~sdk.rollout.episode.PromptToolBoxes`).

    Args:
        tasks: the change tasks that may be rolled out (others are ignored).
        sandbox: runs ``run_tests`` (None: the tool is not offered).
        tools: tool names offered (``tools.change_agent.tools``).
        max_calls, max_result_chars: per rollout (``tools.max_calls``, ``tools.max_result_chars``).
        limits: base sandbox limits for ``run_tests``.
    """

    def __init__(self, tasks: Sequence[Task], sandbox=None, tools: Sequence[str] = ("read_file", "search", "list_dir",
                 "edit_file", "run_tests"), max_calls: int = 8, max_result_chars: int = 2000, limits=None) -> None:
        self.tasks = {prompt_key(t.prompt): t for t in tasks if isinstance(t.verifier, ChangeVerifier)}
        self.runner = TestRunner(sandbox, limits) if sandbox is not None else None
        self.tools = tuple(tools)
        self.max_calls = max_calls
        self.max_result_chars = max_result_chars

    def task_for(self, prompt: Sequence[Any]) -> Task:
        """The change task whose prompt this is.

        Raises:
            ToolError: no change task has this prompt (a wiring error, not the model's).
        """
        task = self.tasks.get(prompt_key(prompt))
        if task is None:
            raise ToolError("agentic change rollout: no change task has this prompt",
                            "roll out only prompts of the task set's change tasks")
        return task

    def for_prompt(self, prompt: list[dict[str, Any]]) -> ChangeToolBox:
        """A fresh toolbox over a fresh workspace of the prompt's task."""
        verifier = self.task_for(prompt).verifier
        assert isinstance(verifier, ChangeVerifier)
        return ChangeToolBox(verifier, self.runner, self.tools, self.max_calls, self.max_result_chars)

    def __call__(self) -> ChangeToolBox:
        """Refused: a change toolbox needs its task (``for_prompt``)."""
        raise ToolError("a change-agent toolbox needs the rollout's prompt", "call for_prompt(prompt)")


def agent_completion(trace: dict[str, Any]) -> str:
    """The text the change reward and the eval rows get for one rollout: its change as a fenced
    diff (or a note that it changed nothing), then ``<tool_trace>`` with the call counts, the tools
    called and why the rollout stopped."""
    change = trace.get("change") or ""
    head = f"```diff\n{change}```" if change else "(the agent changed no file)"
    summary = {"n_calls": trace.get("n_calls", 0), "n_valid": trace.get("n_valid", 0), "stop": trace.get("stop", ""),
               "tools": [c.get("name") for c in trace.get("calls", [])], "changed_files": trace.get("changed_files", [])}
    return f"{head}\n\n<tool_trace>{json.dumps(summary)}</tool_trace>"


def trace_summary(completion: str) -> dict[str, Any]:
    """The ``<tool_trace>`` summary of an :func:`agent_completion` ({} when there is none)."""
    m = _TRACE.search(completion)
    try:
        return json.loads(m.group(1)) if m else {}
    except json.JSONDecodeError:
        return {}


def tool_components(completion: str) -> dict[str, float]:
    """Tool metrics of one agent completion: ``tool_calls``, ``valid_tool_calls``, ``used_tools``,
    ``run_tests_calls``."""
    s = trace_summary(completion)
    return {"tool_calls": float(s.get("n_calls", 0)), "valid_tool_calls": float(s.get("n_valid", 0)),
            "used_tools": float(s.get("n_calls", 0) > 0),
            "run_tests_calls": float(sum(t == "run_tests" for t in s.get("tools", [])))}


class ChangeAgentReward(SandboxReward):
    """The sandboxed change reward on agentic rollouts: each rollout's ``tool_trace`` (a column the
    rollout function returns) becomes :func:`agent_completion` and is scored like a written diff.
    Takes :class:`~sdk.rewards.trl.SandboxReward`'s arguments."""

    __name__ = "change_agent_reward"

    def __call__(self, prompts: list[Any], completions: list[Any], completion_ids: Any = None,
                 tool_trace: list[str] | None = None, **kwargs: Any) -> list[float | None]:
        texts = [agent_completion(json.loads(t)) if t else "" for t in (tool_trace or [None] * len(completions))]
        return super().__call__(prompts, texts, completion_ids, **kwargs)
