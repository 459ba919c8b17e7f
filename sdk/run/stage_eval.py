"""The eval stage: generate and score base and tuned completions on the eval splits.

Writes ``eval/base.jsonl`` and ``eval/tuned.jsonl``, one row per task with its raw completions,
so the report (and any later rescoring) needs no generation.
"""

from __future__ import annotations

from sdk.errors import ConfigError
from sdk.run.bookkeeping import StageStats
from sdk.run.context import StageContext, adapter_for_eval
from sdk.tasks.records import Task


def eval_tasks(ctx: StageContext) -> list[Task]:
    """Tasks of the configured eval splits, at most ``eval.limit_per_split`` each (first by id)."""
    taskset, ec = ctx.inputs.taskset(), ctx.cfg.eval
    out: list[Task] = []
    for split in ec.splits:
        part = sorted(taskset.split(split), key=lambda t: t.id)
        out += part[: ec.limit_per_split] if ec.limit_per_split else part
    return out


def stage_eval(ctx: StageContext) -> StageStats:
    """Generate and score base and tuned completions; save rows with raw completions.

    Raises:
        ConfigError: the task set has no task in the eval splits.
    """
    from sdk.eval.records import save_rows
    from sdk.eval.run import evaluate
    from sdk.generate import make_generator
    from sdk.rewards.tiered import score_batch

    cfg, ec = ctx.cfg, ctx.cfg.eval
    tasks = eval_tasks(ctx)
    if not tasks:
        raise ConfigError(f"no task to evaluate: the task set has none in the eval splits {ec.splits}",
                          "add a test-suite source (pytest, jsonl, humaneval) with split auto, heldout or ood, "
                          "or list the splits that have tasks under `eval.splits` (see tasks/counts.json)")
    models = [("base", None)]
    adapter = adapter_for_eval(cfg, ctx.layout)
    if adapter is not None:
        models.append(("tuned", adapter))
    sandbox = ctx.need_sandbox()
    generated = 0
    for label, adapter_path in models:
        gen = make_generator(ctx.model_path, adapter_path, ec.batch_size, ec.max_new_tokens, ec.temperature,
                             cfg.seed, cfg.model.dtype, cfg.rl.use_vllm)
        rows = evaluate(tasks, gen, lambda ts, cs: score_batch(ts, cs, sandbox, cfg.reward), label, ec.n_samples,
                        progress=ctx.progress, batch_size=ec.batch_size)
        gen.close()
        save_rows(ctx.layout.eval_rows(label), rows)
        generated += sum(r.gen_tokens for r in rows)
        ctx.console.print(f"  {label}: {sum(any(r.passed) for r in rows)}/{len(rows)} tasks passed (any sample)")
    return StageStats("eval", tokens_generated=generated, extra={"tasks": len(tasks)})
