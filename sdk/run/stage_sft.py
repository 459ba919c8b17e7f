"""The sft stage: LoRA SFT on train references and feedback examples, then DPO on preference pairs
when ``sft.dpo`` is on (the DPO adapter becomes ``sft/adapter``, the SFT one ``sft/adapter_sft``)."""

from __future__ import annotations

from pathlib import Path

from sdk.run.bookkeeping import StageStats
from sdk.run.context import StageContext
from sdk.run.lineage import Lineage, write_lineage
from sdk.tasks.records import Split
from sdk.train.result import TrainResult


def record_lineage(ctx: StageContext, stage: str, adapter: Path, parent: Path | None, result: TrainResult) -> None:
    """Write ``adapter/lineage.json`` for an adapter ``stage`` just trained (:mod:`sdk.run.lineage`)."""
    write_lineage(adapter, Lineage(
        stage=stage, base_model=ctx.cfg.model.name, parent=str(parent) if parent else None,
        taskset_version=ctx.inputs.taskset().version, fingerprint=ctx.fingerprint,
        steps=result.steps, rows=result.rows))


def fit_and_validation(ctx: StageContext) -> tuple[list, list]:
    """The train split as ``(fit, validation)`` (:func:`sdk.train.validation.carve_validation` with
    ``tasks.validation_fraction``): training reads ``fit``, choices read ``validation``."""
    from sdk.train.validation import carve_validation

    return carve_validation(list(ctx.inputs.taskset().split(Split.TRAIN)), ctx.cfg.tasks.validation_fraction,
                            ctx.cfg.seed)


def stage_sft(ctx: StageContext) -> StageStats:
    """LoRA SFT (:func:`sdk.train.sft.run_sft`) into ``sft/``; DPO after it when enabled."""
    from sdk.train.sft import run_sft, sft_items, sft_rows

    from sdk.train.curriculum import Item
    from sdk.train.self_distill import split_pool

    cfg = ctx.cfg
    fit, pool = split_pool(fit_and_validation(ctx)[0], cfg.sft.self_distill)
    train = fit if cfg.sft.include_train_references else []
    examples = ctx.inputs.sft_examples() if cfg.sft.include_feedback else []
    rows = sft_rows(train, examples, cfg.sft.reference_docstrings)
    agentic = cfg.tools is not None and cfg.tools.enabled and cfg.tools.change_agent.enabled
    if agentic:  # the prompts ask for tool use: references become edit_file demonstrations
        from sdk.run.agent import change_agent
        from sdk.train.agentic_expert import demonstration_rows

        rows = demonstration_rows(train, rows, change_agent(ctx))
    out = ctx.layout.stage_dir("sft")
    demos = tool_demonstrations(ctx, fit, out) if _tool_demos_on(cfg) else None
    if demos is not None:  # tool rollouts: verified tool-call demonstrations, one kind of row (messages)
        rows, agentic = demos[0] + [{"messages": [*r["prompt"], *r["completion"]], "tools": []} for r in rows], True
    self_distill_rows_path(ctx).unlink(missing_ok=True)  # never a stale run's rows
    distilled = _self_distill(ctx, pool, out) if pool else None
    rows += distilled[0] if distilled else []
    what = f"{len(demos[0])} tool-call demonstrations" if demos is not None else f"{len(train)} train references"
    ctx.console.print(f"  {len(rows)} SFT rows ({what}, {len(examples)} feedback examples"
                      + (f", {len(distilled[0])} base-model replay answers" if distilled else "") + ")")
    items = sft_items(train, examples) + [Item("self_distill", None, sum(len(m["content"]) for m in r["prompt"]))
                                          for r in (distilled[0] if distilled else [])]
    result = run_sft(ctx.model_path, rows, cfg.sft, out, cfg.seed, cfg.model.dtype, ctx.progress,
                     items=None if agentic else items, load_in_4bit=cfg.model.load_in_4bit)
    record_lineage(ctx, "sft", ctx.layout.adapter("sft"), None, result)
    extra = result.summary()
    if distilled:
        extra["self_distill"] = distilled[1]
    if demos is not None:
        extra["tool_demonstrations"] = demos[1]
    if cfg.sft.dpo.enabled:
        extra["dpo"] = _dpo(ctx)
    return StageStats("sft", tokens_trained=result.tokens_trained, extra=extra)


def _tool_demos_on(cfg) -> bool:
    """True when the sft stage trains on tool-call demonstrations (``tools.demonstrations.enabled``, tool
    rollouts other than the change agent's)."""
    tc = cfg.tools
    return tc is not None and tc.enabled and not tc.change_agent.enabled and tc.demonstrations.enabled


def tool_demonstrations(ctx: StageContext, fit: list, out: Path) -> tuple[list[dict], dict]:
    """Verified tool-call demonstrations of the ``fit`` tasks (train split, validation carved out;
    :func:`sdk.train.tool_demos.demonstration_rows`), replayed with the run's tools, tool template and
    tool-task reward; rows in ``sft/demonstrations.jsonl``, counts and drop reasons returned."""
    from transformers import AutoTokenizer

    from sdk.jsonl import write_jsonl
    from sdk.rollout.chat_template import ensure_tool_template
    from sdk.rollout.factories import build_tools
    from sdk.rollout.rewards import ToolTaskReward
    from sdk.rollout.tools import ToolBox
    from sdk.train.tool_demos import demonstration_rows

    tc = ctx.cfg.tools
    tok = AutoTokenizer.from_pretrained(ctx.model_path)
    ensure_tool_template(tok)
    tools = build_tools(tc, ctx.cfg.base_dir)  # as the rl stage's toolbox_maker: the same tools and limits
    make_box = lambda: ToolBox(tools, max_calls=tc.max_calls, max_result_chars=tc.max_result_chars)  # noqa: E731
    rows, report = demonstration_rows(fit, tok, make_box, ToolTaskReward(tc.reward),
                                      tc.demonstrations.answer_format, tc.demonstrations.grounded, tc.max_turns)
    write_jsonl(out / "demonstrations.jsonl", rows)
    ctx.console.print(f"  tool-call demonstrations: {len(rows)} verified (reward 1.0 on replay) of "
                      f"{len(fit) - report.without} train tasks that carry one; {len(report.dropped)} dropped")
    return rows, report.summary()


def _self_distill(ctx: StageContext, pool: list, out: Path) -> tuple[list[dict], dict]:
    """The base model's verified answers on the replay pool (:mod:`sdk.train.self_distill`), scored in
    the run's sandbox; samples logged to ``sft/self_distill.jsonl``."""
    from sdk.jsonl import write_jsonl
    from sdk.train.self_distill import distill_rows

    cfg = ctx.cfg
    rows, counts = distill_rows(ctx.model_path, pool, ctx.score,
                                cfg.sft.self_distill, out / "self_distill.jsonl", cfg.seed, cfg.model.dtype)
    write_jsonl(self_distill_rows_path(ctx), rows)  # expert iteration replays them (rl.expert.replay_self_distill)
    ctx.console.print(f"  self-distillation: the base model's answers verified on {counts['tasks_solved']}/"
                      f"{counts['tasks']} replay tasks ({counts['verified']}/{counts['sampled']} samples), "
                      f"{counts['kept']} rows")
    return rows, counts


def self_distill_rows_path(ctx: StageContext) -> Path:
    """Where the sft stage keeps its self-distillation SFT rows (``sft/self_distill_rows.jsonl``)."""
    return ctx.layout.stage_dir("sft") / "self_distill_rows.jsonl"


def _dpo(ctx: StageContext) -> dict:
    """DPO after SFT on ``tasks/preference_pairs.jsonl``; the DPO adapter becomes ``sft/adapter``."""
    from transformers import AutoTokenizer

    from sdk.train.dpo import dpo_rows, drop_identical_after_truncation, load_pairs, promote, run_dpo

    cfg = ctx.cfg
    rows, skipped = dpo_rows(load_pairs(ctx.layout.preference_pairs_jsonl))
    rows, identical = drop_identical_after_truncation(rows, AutoTokenizer.from_pretrained(ctx.model_path),
                                                      cfg.sft.dpo.max_length)
    if not rows:
        ctx.console.print("  DPO: no usable preference pairs; skipped")
        return {"rows": 0, "skipped_pairs": skipped, "identical_after_truncation": identical}
    ctx.console.print(f"  DPO on {len(rows)} preference pairs ({skipped} skipped: empty or identical)")
    sft_dir = ctx.layout.stage_dir("sft")
    result = run_dpo(ctx.model_path, ctx.layout.adapter("sft"), rows, cfg.sft.dpo, cfg.sft.lora, sft_dir / "dpo",
                     cfg.seed, cfg.model.dtype, ctx.progress, load_in_4bit=cfg.model.load_in_4bit)
    promote(sft_dir, sft_dir / "dpo")
    record_lineage(ctx, "dpo", ctx.layout.adapter("sft"), sft_dir / "adapter_sft", result)
    return {"rows": len(rows), "skipped_pairs": skipped, "identical_after_truncation": identical,
            "steps": result.steps}
