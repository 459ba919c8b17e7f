"""Configuration of tool rollouts and of the tool-task reward (nested pydantic, ``extra="forbid"``).

Kept in ``sdk.rollout`` so the section can be used on its own (``examples/tool_agent``) and
mounted in :class:`sdk.config.RunConfig` as an optional ``tools:`` section.
"""

from __future__ import annotations

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


class ToolsConfig(_Cfg):
    """Tools and retrieval inside rollouts (issue 8)."""

    tools: list[str] = Field(default_factory=list, description="dotted paths `package.module:obj` of BaseTools "
                             "or typed functions, used as they are")
    factories: list[str] = Field(default_factory=list, description="dotted paths of zero-argument callables, each "
                                 "returning a tool or a list of tools (called once per run)")
    max_calls: int = Field(4, gt=0, description="tool calls answered per rollout; later calls get an error answer")
    max_turns: int | None = Field(None, gt=0, description="assistant turns per rollout; default max_calls + 1")
    max_result_chars: int = Field(2000, gt=0, description="tool answers longer than this are cut (characters)")
    retrieval_k: int = Field(3, gt=0, description="documents per search (search tool and prompt augmentation)")
    reward: ToolRewardConfig = Field(default_factory=ToolRewardConfig)
