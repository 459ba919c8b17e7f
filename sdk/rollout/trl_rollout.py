"""The thin adapter that puts tool rollouts into TRL's ``GRPOTrainer`` (``rollout_func``).

Why not TRL's own ``tools=``: in TRL 1.16 it (1) needs a chat template TRL recognises to
parse calls (``add_response_schema`` knows Qwen, Llama 3.1, GLM, GPT-OSS...; the plain ChatML
templates of SmolLM2 and of our tiny test model raise "Unrecognized chat template"), and
``supports_tool_calling`` refuses templates that do not render ``tool_calls``; (2) falls back
to plain text on a malformed call, ending the rollout without an answer to the model (field
case T3); (3) bounds iterations, not calls. This adapter keeps TRL for everything else -- its
generation (``_generate_single_turn``: transformers or vLLM), loss, masking through
``env_mask`` (TRL's ``tool_mask``), logging -- and runs :func:`sdk.rollout.episode.run_episodes`.

TRL passes ``rollout_func`` the per-process prompts already repeated ``num_generations`` times
(its ``RepeatSampler``), so one rollout is produced per prompt received. Extra columns returned
here reach reward functions as keyword arguments: ``tool_trace`` (JSON per rollout) feeds
:class:`sdk.rollout.rewards.ToolTaskReward`. Each rollout's trace is appended to ``log_path``
(JSONL) with the step number: calls, validity, answers and retrieved documents per step.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdk.rollout.chat_template import ensure_tool_template
from sdk.rollout.episode import PromptToolBoxes, run_episodes, traces_json
from sdk.rollout.tools import ToolBox


class ToolRolloutFunc:
    """``rollout_func(prompts, trainer) -> dict`` for ``GRPOTrainer``.

    Args:
        make_toolbox: returns a fresh :class:`ToolBox` per rollout (a ``PromptToolBoxes`` gets the prompt).
        max_turns: assistant turns per rollout (default: the toolbox's ``max_calls + 1``).
        log_path: JSONL file receiving one trace per rollout (``step``, ``prompt``, trace fields).
        max_tokens: token budget per rollout, capped by the trainer's ``max_completion_length``.
    Returns (per call): ``prompt_ids``, ``completion_ids``, ``logprobs`` (None: TRL recomputes),
        ``env_mask`` (0 on tool-answer tokens) and ``tool_trace`` (JSON strings).
    """

    def __init__(self, make_toolbox: Callable[[], ToolBox] | PromptToolBoxes, max_turns: int | None = None,
                 log_path: str | Path | None = None, max_tokens: int | None = None) -> None:
        self.make_toolbox = make_toolbox
        self.max_turns = max_turns
        self.log_path = Path(log_path) if log_path else None
        self.max_tokens = max_tokens

    def __call__(self, prompts: list[list[dict[str, Any]]], trainer) -> dict[str, Any]:
        tokenizer = trainer.processing_class
        ensure_tool_template(tokenizer)

        budget = min(trainer.max_completion_length, self.max_tokens or trainer.max_completion_length)
        config = getattr(trainer, "generation_config", None)

        def generate(batch: list[list[int]], max_new_tokens: int = budget) -> list[list[int]]:
            # TRL generates up to max_completion_length per call; a later turn has less room in the
            # rollout's budget, so its transformers generation is capped to that room (vLLM keeps its own)
            full = getattr(config, "max_new_tokens", None)
            if full is not None:
                config.max_new_tokens = max(1, min(full, max_new_tokens))
            try:
                ids, _ = trainer._generate_single_turn(batch, None, {}, 1)  # TRL's generation backend (private API)
            finally:
                if full is not None:
                    config.max_new_tokens = full
            return ids

        episodes = run_episodes(prompts, tokenizer, self.make_toolbox, generate, budget, self.max_turns)
        traces = traces_json(episodes)
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            step = int(getattr(trainer.state, "global_step", 0))
            with self.log_path.open("a") as fh:
                for prompt, trace in zip(prompts, traces):
                    fh.write(json.dumps({"step": step, "prompt": prompt[-1]["content"][:300], **json.loads(trace)},
                                        ensure_ascii=False) + "\n")
        return {"prompt_ids": [e.prompt_ids for e in episodes],
                "completion_ids": [e.completion_ids for e in episodes],
                "logprobs": None,
                "env_mask": [e.env_mask for e in episodes],
                "tool_trace": traces}
