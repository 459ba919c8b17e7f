"""Configuration of tool rollouts and of the tool-task reward (nested pydantic, ``extra="forbid"``).

Mounted in :class:`sdk.config.RunConfig` as the optional ``tools:`` section: when it names tools
(``tools`` or ``factories``), the rl stage trains with multi-turn tool rollouts and the eval stage
evaluates with them (``examples/tool_agent/agent.yaml`` is a complete config).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


class ToolRewardConfig(_Cfg):
    """Weights of the tool-task reward (see ``sdk.rollout.rewards``); the score is their weighted mean in [0, 1].

    A weight of 0 keeps a check as a logged metric that does not move the reward.
    """

    answer: float = Field(1.0, ge=0, description="weight of the final answer's verifier (0/1)")
    right_tool: float = Field(0.2, ge=0, description="share of the task's expected tools called validly")
    valid_args: float = Field(0.2, ge=0, description="share of calls whose name and arguments were valid")
    no_waste: float = Field(0.1, ge=0, description="1 without wasted calls (repeats, calls beyond the needed ones)")
    spare_calls: int = Field(1, ge=0, description="calls allowed beyond the expected tools before no_waste drops")

    @model_validator(mode="after")
    def _some_weight(self) -> ToolRewardConfig:
        if self.answer + self.right_tool + self.valid_args + self.no_waste <= 0:
            raise ValueError("every tool reward weight is 0: set tools.reward.answer: 1.0 (the usual choice)")
        return self


class ToolFactoryConfig(_Cfg):
    """A configured tool factory: a :class:`sdk.rollout.factories.ToolFactory` subclass and its options.

    For tools that need settings (a database URL, a folder relative to the config file); a factory
    without settings can stay a plain dotted path in ``tools.factories``.
    """

    type: str = Field(..., description="dotted path `package.module:Class` of a ToolFactory subclass")
    options: dict[str, Any] = Field(default_factory=dict, description="the factory's own options (its `Options`)")


ChangeToolName = Literal["read_file", "search", "list_dir", "edit_file", "run_tests"]


class ChangeAgentConfig(_Cfg):
    """Agentic rollouts for change tasks (``git_history``; :mod:`sdk.rollout.change_agent`): each
    rollout gets tools over its own scratch copy of its task's repository at the parent, and its
    change (the copy's diff) is scored by the change reward. Calls and turns per rollout are
    ``tools.max_calls`` / ``tools.max_turns``."""

    enabled: bool = Field(False, description="roll change tasks out with tools in the rl (grpo or expert_iteration) "
                          "and eval stages; sft trains their references as edit_file demonstrations")
    tools: list[ChangeToolName] = Field(default_factory=lambda: ["read_file", "search", "list_dir", "edit_file",
                                                                 "run_tests"],
                                        description="tools offered; run_tests runs only the pass-to-pass tests")
    max_tokens: int = Field(4096, gt=0, description="token budget per rollout after the prompt (model and tool "
                            "tokens; GRPO also caps it at rl.max_completion_length)")

    @model_validator(mode="after")
    def _some_tool(self) -> ChangeAgentConfig:
        if self.enabled and not self.tools:
            raise ValueError("tools.change_agent.tools is empty: list at least edit_file (the agent's only way to "
                             "change the repository)")
        return self


class ToolDemoConfig(_Cfg):
    """SFT on verified tool-call demonstrations before RL (:mod:`sdk.train.tool_demos`): each train task
    whose ``metadata["demonstration"]`` lists its calls is replayed through the rollout engine and the
    tool-task reward, and kept only when it earns full marks."""

    enabled: bool = Field(False, description="the sft stage trains on the train tasks' verified tool-call "
                          "demonstrations (needs sft.enabled); held-out tasks are never used")
    answer_format: str = Field("Answer: {answer}", description="the demonstration's final turn; {answer} is the "
                               "task verifier's expected answer")
    grounded: bool = Field(True, description="keep a demonstration only when its answer appears, as a number or "
                           "verbatim, in a real tool answer of the replay")


class ToolsConfig(_Cfg):
    """Tools and retrieval inside rollouts (issue 8). Set ``tools`` or ``factories`` (or turn
    ``change_agent`` on, for change tasks) to switch tool rollouts on in the rl and eval stages."""

    tools: list[str] = Field(default_factory=list, description="dotted paths `package.module:obj` of BaseTools "
                             "or typed functions, used as they are")
    factories: list[str | ToolFactoryConfig] = Field(
        default_factory=list, description="each a dotted path of a zero-argument callable returning a tool or a list "
        "of tools, or `{type: package.module:Class, options: {...}}` of a ToolFactory (built once per stage)")
    max_calls: int = Field(4, gt=0, description="tool calls answered per rollout; later calls get an error answer")
    max_turns: int | None = Field(None, gt=0, description="assistant turns per rollout; default max_calls + 1")
    max_result_chars: int = Field(2000, gt=0, description="tool answers longer than this are cut (characters)")
    retrieval_k: int = Field(3, gt=0, description="documents per search (search tool and prompt augmentation; "
                             "ToolFactory subclasses read it as `self.settings.retrieval_k`)")
    retrieval_min_score: float | None = Field(None, description="documents a retriever scores below this are left "
                                              "out (field case T5; the retriever must put metadata['score'] on each; "
                                              "read as `self.settings.retrieval_min_score`); null: no threshold")
    reward: ToolRewardConfig = Field(default_factory=ToolRewardConfig)
    change_agent: ChangeAgentConfig = Field(default_factory=ChangeAgentConfig)
    demonstrations: ToolDemoConfig = Field(default_factory=ToolDemoConfig)

    @model_validator(mode="after")
    def _one_kind(self) -> ToolsConfig:
        if self.change_agent.enabled and (self.tools or self.factories):
            raise ValueError("tools.change_agent brings its own tools; tools.tools / tools.factories cannot be added "
                             "to it: use one or the other")
        return self

    @property
    def enabled(self) -> bool:
        """True when the section names at least one tool or factory, or turns the change agent on
        (tool rollouts are on)."""
        return bool(self.tools or self.factories or self.change_agent.enabled)
