"""Evaluation of agentic change rollouts (``tools.change_agent``, issue 17).

Each task's prompt is rolled out with :func:`sdk.rollout.episode.run_episodes` over the
:class:`~sdk.rollout.change_agent.ChangeAgent`'s per-rollout toolboxes (transformers generation,
``eval.max_new_tokens`` per assistant turn, ``eval.temperature``; ``tools.change_agent.max_tokens``
per rollout). A sample's completion is :func:`~sdk.rollout.change_agent.agent_completion` (the
workspace's diff and the call counts), scored by the run's sandboxed change reward exactly like a
single-shot diff, so the report's change completion reads these rows unchanged. Components add the
tool metrics (``tool_calls``, ``valid_tool_calls``, ``used_tools``, ``run_tests_calls``) and
``task_success`` (the change completed), which :func:`sdk.run.stage_eval.tool_summary` pools.
Every rollout's trace is appended to ``eval/traces_<label>.jsonl``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from sdk.eval.records import EvalRow
from sdk.run.context import StageContext
from sdk.tasks.records import Task


def tool_model(ctx: StageContext, adapter: Path | None):
    """``(model, tokenizer, step)`` for multi-turn tool rollouts in eval: an
    :class:`sdk.generate.HFGenerator` (``eval.batch_size``, ``eval.max_new_tokens`` per turn,
    ``eval.temperature``), its tokenizer with the tool chat template ensured, and the batched step
    function of :func:`sdk.rollout.episode.hf_generator`. The caller closes the model."""
    from sdk.generate import HFGenerator
    from sdk.rollout.chat_template import ensure_tool_template
    from sdk.rollout.episode import hf_generator

    cfg, ec = ctx.cfg, ctx.cfg.eval
    model = HFGenerator(ctx.model_path, adapter, ec.batch_size, ec.max_new_tokens, ec.temperature, cfg.seed,
                        cfg.model.dtype)
    tok = model.tokenizer
    ensure_tool_template(tok)
    return model, tok, hf_generator(model.model, tok, ec.max_new_tokens, ec.temperature, ec.batch_size, cfg.seed)


def agent_rows(ctx: StageContext, tasks: Sequence[Task], label: str, adapter: Path | None, agent) -> list[EvalRow]:
    """Eval rows of agentic change rollouts by the model ``label`` (see the module docstring)."""
    from sdk.eval.run import evaluate
    from sdk.rewards.tiered import score_batch
    from sdk.rollout.change_agent import agent_completion, tool_components
    from sdk.rollout.episode import run_episodes

    cfg, ec, tc = ctx.cfg, ctx.cfg.eval, ctx.cfg.tools
    model, tok, step = tool_model(ctx, adapter)
    traces = ctx.layout.stage_dir("eval") / f"traces_{label}.jsonl"
    traces.parent.mkdir(parents=True, exist_ok=True)
    traces.unlink(missing_ok=True)

    def generate(prompts: list[list[dict]], n: int) -> list[list[tuple[str, int]]]:
        episodes = run_episodes([p for p in prompts for _ in range(n)], tok, agent, step, tc.change_agent.max_tokens,
                                tc.max_turns)
        with traces.open("a", encoding="utf-8") as fh:
            for ep in episodes:
                fh.write(json.dumps(ep.trace(), ensure_ascii=False, default=str) + "\n")
        outs = [(agent_completion(ep.trace()), sum(ep.env_mask)) for ep in episodes]
        return [outs[i * n:(i + 1) * n] for i in range(len(prompts))]

    sandbox = ctx.need_sandbox()

    def score(ts: Sequence[Task], cs: Sequence[str]) -> list:
        out = []
        for res, text in zip(score_batch(ts, cs, sandbox, cfg.reward), cs):
            comps = {**res.components, **tool_components(text), "task_success": float(res.status.value == "ok")}
            out.append(res.model_copy(update={"components": comps}))
        return out

    try:
        return evaluate(tasks, generate, score, label, ec.n_samples, progress=ctx.progress, batch_size=ec.batch_size)
    finally:
        model.close()
