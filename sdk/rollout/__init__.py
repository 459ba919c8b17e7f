"""Tool calling and retrieval inside rollouts (issue 8).

* :mod:`sdk.rollout.chat_template`: assistant-token masks for templates without generation
  markers (field case T1), prefix-preservation checks, a tool-aware ChatML template;
* :mod:`sdk.rollout.tools`: langchain-core tools and typed functions as tools, call parsing,
  argument normalisation (T2, T3), :class:`ToolBox` with a call limit, a sandboxed Python tool;
* :mod:`sdk.rollout.retrieval`: any ``BaseRetriever`` as a search tool or as prompt context;
* :mod:`sdk.rollout.episode`: the multi-turn rollout engine (training and evaluation);
* :mod:`sdk.rollout.trl_rollout`: the engine as TRL ``GRPOTrainer``'s ``rollout_func``;
* :mod:`sdk.rollout.rewards`: answer + process reward for tool tasks; :mod:`sdk.rollout.config`.
* :mod:`sdk.rollout.factories`: the tools a ``tools:`` section names (dotted paths, factories,
  configured :class:`~sdk.rollout.factories.ToolFactory` classes).
"""

from sdk.rollout.errors import ToolError
from sdk.rollout.tools import (
           Tool,
           ToolBox,
           ToolCall,
           ToolOutcome,
           as_tool,
           normalize_arguments,
           parse_tool_calls,
)

__all__ = ["Tool", "ToolBox", "ToolCall", "ToolError", "ToolOutcome", "as_tool", "normalize_arguments",
           "parse_tool_calls"]
