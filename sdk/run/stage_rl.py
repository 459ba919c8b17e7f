"""The rl and rl_compare stages: GRPO from the SFT adapter with the sandboxed reward.

With a ``tools:`` section that names tools, GRPO rolls out multi-turn with those tools
(:class:`sdk.rollout.trl_rollout.ToolRolloutFunc`, traces in ``<stage>/traces.jsonl``) and is
rewarded by :class:`sdk.rollout.rewards.ToolTaskReward` instead of the sandbox.

``rl`` trains the configured arm into ``rl/``; ``rl_compare`` (``rl.compare``, :mod:`sdk.train.compare`)
trains the schedule comparison's second arm into ``rl_compare/`` from the same SFT adapter, seed and
GRPO settings. Both share one held-out probe and the run's one sandbox (the reward gets the live
sandbox in this process; its pickled form carries only the sandbox config).
"""

from __future__ import annotations

from pathlib import Path

from sdk.errors import ConfigError
from sdk.jsonl import write_json
from sdk.run.agent import change_agent
from sdk.run.bookkeeping import StageStats
from sdk.run.context import StageContext
from sdk.run.lineage import read_lineage, write_lineage
from sdk.run.stage_sft import fit_and_validation, record_lineage
from sdk.tasks.records import Split, Task


def stage_rl(ctx: StageContext) -> StageStats:
    """GRPO (or expert iteration, ``rl.algorithm``) on the train split with the sandboxed reward,
    continuing the SFT adapter."""
    if ctx.cfg.rl.algorithm == "expert_iteration":
        return expert_arm(ctx)
    return grpo_arm(ctx, ctx.cfg.rl, "rl")


def expert_arm(ctx: StageContext) -> StageStats:
    """Expert iteration (:func:`sdk.train.expert_iteration.run_expert_iteration`) into ``rl/``: sample
    on the train tasks (validation excluded), verify in the run's sandbox, SFT on the verified.

    With ``tools.change_agent`` on, the samples are agentic change rollouts and the rounds train on the
    verified tool-use conversations (:mod:`sdk.train.agentic_expert`).

    Raises:
        ConfigError: other tool rollouts are configured (expert iteration samples single-turn answers
            there), or agentic rollouts with ``rl.expert.replay_self_distill`` (single-turn rows).
    """
    from sdk.train.expert_iteration import run_expert_iteration

    cfg = ctx.cfg
    agentic = tools_enabled(cfg) and cfg.tools.change_agent.enabled
    if tools_enabled(cfg) and not agentic:
        raise ConfigError("rl.algorithm expert_iteration samples single-turn answers; the tools: section asks "
                          "for multi-turn tool rollouts", "use rl.algorithm: grpo with tools, or "
                          "tools.change_agent for change tasks")
    from sdk.train.self_distill import split_pool

    train, validation = fit_and_validation(ctx)
    train = split_pool(train, cfg.sft.self_distill)[0]  # the replay pool's references never reach training
    adapter = sft_adapter(ctx)
    ec = cfg.rl.expert
    ctx.console.print(f"  expert iteration on {len(train)} train tasks: {ec.rounds} rounds, {ec.k} samples per task"
                      + (f", {ec.max_tasks} tasks per round" if ec.max_tasks else ""))
    ctx.layout.midway_adapter("rl").parent.mkdir(parents=True, exist_ok=True)
    result = run_expert_iteration(ctx.model_path, adapter, train, ctx.score,
                                  cfg.rl, cfg.sft, ctx.layout.stage_dir("rl"), cfg.seed, cfg.model.dtype, ctx.progress,
                                  console=ctx.console, replay_rows=self_distill_replay(ctx),
                                  **(agentic_expert(ctx) if agentic else {}))
    record_lineage(ctx, "rl", ctx.layout.adapter("rl"), adapter, result)
    extra = result.summary()
    extra["validation"] = validation_summary(ctx, train, validation, None)
    return StageStats("rl", tokens_generated=result.tokens_generated, tokens_trained=result.tokens_trained, extra=extra)


def agentic_expert(ctx: StageContext) -> dict:
    """``make_generator``, ``row_of`` and ``references`` for expert iteration over agentic change rollouts
    (:class:`sdk.train.agentic_expert.AgenticExpert`): ``rl.max_completion_length`` tokens per turn at
    ``rl.temperature``, the change agent's budget and turns, traces in ``rl/traces.jsonl``.

    Raises:
        ConfigError: ``rl.expert.replay_self_distill`` is on (its rows are single-turn answers).
    """
    from sdk.train.agentic_expert import AgenticExpert, hf_load

    cfg, tc = ctx.cfg, ctx.cfg.tools
    if cfg.rl.expert.replay_self_distill:
        raise ConfigError("rl.expert.replay_self_distill replays single-turn answers, and expert iteration over "
                          "agentic change rollouts trains on tool-use conversations",
                          "set rl.expert.replay_self_distill: false")
    traces = ctx.layout.traces_jsonl("rl")
    traces.unlink(missing_ok=True)
    expert = AgenticExpert(change_agent(ctx), hf_load(8, cfg.rl.max_completion_length, cfg.rl.temperature,
                                                      cfg.model.dtype), tc.change_agent.max_tokens, tc.max_turns, traces)
    return {"make_generator": expert.make_generator, "row_of": expert.row, "references": expert.references}


def self_distill_replay(ctx: StageContext) -> list[dict]:
    """The SFT stage's self-distillation rows when ``rl.expert.replay_self_distill`` is on (else none).

    Raises:
        ConfigError: replay is asked for but the SFT stage kept no such rows file (self-distillation off,
            or an SFT stage from before the file existed).
    """
    import json

    from sdk.run.stage_sft import self_distill_rows_path

    if not ctx.cfg.rl.expert.replay_self_distill:
        return []
    path = self_distill_rows_path(ctx)
    if not path.is_file():
        raise ConfigError(f"rl.expert.replay_self_distill needs the SFT stage's self-distillation rows ({path}), "
                          "and there are none", "turn sft.self_distill on and redo SFT (`tuneloop sft CONFIG "
                          "--force`), or set rl.expert.replay_self_distill: false")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def stage_rl_compare(ctx: StageContext) -> StageStats:
    """The schedule comparison's second GRPO arm into ``rl_compare/``: ``rl``'s settings with the
    comparison's order and difficulty filter. Its adapter is marked not promotable and never
    evaluated. An arm with nothing to probe or nothing left to train on is recorded as skipped (with
    the reason), not an error."""
    from sdk.train.compare import arm_config

    stats = grpo_arm(ctx, arm_config(ctx.cfg.rl), "rl_compare")
    adapter = ctx.layout.adapter("rl_compare")
    lineage = read_lineage(adapter) if "skipped" not in stats.extra else None
    if lineage is not None:
        write_lineage(adapter, lineage.model_copy(update={"promotable": False, "gate_reasons": (
            "schedule comparison arm (rl.compare): trained for its held-out curve only, never evaluated",)}))
    return stats


def sft_adapter(ctx: StageContext) -> Path | None:
    """The SFT adapter GRPO continues, or None (a fresh LoRA) when SFT is off or saved none."""
    path = ctx.layout.adapter("sft")
    return path if ctx.cfg.sft.enabled and (path / "adapter_config.json").is_file() else None


def grpo_arm(ctx: StageContext, rc, stage: str) -> StageStats:
    """One GRPO run with the GRPO config ``rc`` into ``<stage>/``, probed on held-out tasks when
    ``rl.heldout``/``rl.compare`` ask for it (the curve goes to ``<stage>/heldout_curve.json``).

    Raises:
        ConfigError: no train task has an automatic verifier (after the difficulty filter, if on).
    """
    from sdk.train.compare import arm_label
    from sdk.train.grpo import run_grpo

    compare = stage == "rl_compare"
    ctx.layout.heldout_curve(stage).unlink(missing_ok=True)
    train, validation = fit_and_validation(ctx)
    adapter = sft_adapter(ctx)
    probe = heldout_probe(ctx, validation)
    if compare and probe is None:
        return skip_arm(ctx, rc, stage, "no held-out task to probe (the comparison needs a held-out split)")
    difficulty = None
    if rc.difficulty.enabled:
        train, difficulty = measure_difficulty(ctx, rc, train, adapter, ctx.layout.stage_dir(stage))
    if not any(t.verifier.kind != "reference" for t in train):
        if compare and difficulty is not None:
            return skip_arm(ctx, rc, stage, f"nothing to train on after the difficulty filter: {_kept(difficulty)}")
        raise _nothing_to_train(len(train), difficulty)
    reward, rollout = make_reward(ctx, stage)
    ctx.console.print(f"  GRPO ({arm_label(rc)}) on {len(train)} train tasks, {rc.max_steps} steps, "
                      f"{rc.num_generations} completions per prompt")
    cfg = ctx.cfg
    result = run_grpo(ctx.model_path, adapter, train, reward, rc, cfg.sft.lora, ctx.layout.stage_dir(stage), cfg.seed,
                      cfg.model.dtype, ctx.progress, rollout_func=rollout,
                      callbacks=[probe.monitor] if probe else [], load_in_4bit=cfg.model.load_in_4bit)
    record_lineage(ctx, stage, ctx.layout.adapter(stage), adapter, result)
    extra = result.summary()
    if probe is not None:
        extra["heldout"] = probe.monitor.summary()
        _write_curve(ctx, rc, stage, probe, difficulty, extra, len(train), result.steps)
    if difficulty is not None:
        extra["difficulty"] = difficulty
    extra["validation"] = validation_summary(ctx, train, validation, probe)
    return StageStats(stage, tokens_generated=result.tokens_generated, extra=extra)


def validation_summary(ctx: StageContext, fit: list[Task], validation: list[Task], probe) -> dict:
    """The rl marker's ``validation`` record (the report's honesty section shows it)."""
    from sdk.train.validation import validation_record

    rc = ctx.cfg.rl
    used = [name for name, on in (("early stopping (rl.heldout)", rc.heldout.every > 0),
                                  ("schedule comparison probe (rl.compare)", rc.compare.enabled)) if on and probe]
    return validation_record(ctx.cfg.tasks.validation_fraction, fit, validation, used,
                             "none" if probe is None else "validation" if validation else "heldout")


def _kept(difficulty: dict) -> str:
    return f"kept {difficulty['kept']} of {difficulty['measured']} measured {difficulty['dropped_by_reason']}"


def _nothing_to_train(n_train: int, difficulty: dict | None) -> ConfigError:
    if difficulty is not None:
        return ConfigError(f"GRPO has nothing to train on after the difficulty filter: {_kept(difficulty)}",
                           "widen the filter (rl.difficulty.min_pass_rate / max_pass_rate), measure more tasks "
                           "(rl.difficulty.max_tasks), or turn it off (--set rl.difficulty.enabled=false)")
    return ConfigError(f"GRPO has nothing to train on: none of the {n_train} train tasks has an automatic verifier",
                       "add a test-suite source (pytest, jsonl, humaneval) whose split is auto or train, or turn "
                       "GRPO off with `rl: {enabled: false}` (--set rl.enabled=false)")


def _write_curve(ctx: StageContext, rc, stage: str, probe, difficulty, extra: dict, n_train: int, steps: int) -> None:
    from sdk.train.compare import arm_label, arm_record, arm_settings

    settings = arm_settings(rc, difficulty, extra.get("order"), n_train)
    write_json(ctx.layout.heldout_curve(stage), arm_record(stage, arm_label(rc), settings, probe, steps, rc.max_steps))


def make_reward(ctx: StageContext, stage: str):
    """``(reward, rollout_func)`` for GRPO: the sandboxed tiered reward on the run's sandbox with a
    single-turn rollout (None), or the tool-task reward with multi-turn tool rollouts when the
    config has a ``tools:`` section with tools."""
    from sdk.rewards.trl import SandboxReward

    if tools_enabled(ctx.cfg) and ctx.cfg.tools.change_agent.enabled:
        return change_rollout(ctx, stage)
    if tools_enabled(ctx.cfg):
        return tool_rollout(ctx, ctx.layout.traces_jsonl(stage))
    # No reference baseline: a task's tests only cover its target, so "tests the reference passes
    # that the completion fails" would charge every failing test twice (tests tier + penalty).
    reward = SandboxReward(sandbox=ctx.need_sandbox(), sandbox_config=ctx.cfg.sandbox, weights=ctx.cfg.reward,
                           log_path=str(ctx.layout.rewards_jsonl(stage)), reference_baseline=False)
    return reward, None


def load_tools(tc, base_dir: Path | str = ".") -> list:
    """The tools of a ``tools:`` section (:func:`sdk.rollout.factories.build_tools`): each entry of
    ``tools`` as it is, then the tools of each ``factories`` entry (a zero-argument callable, or a
    configured :class:`~sdk.rollout.factories.ToolFactory` whose relative paths resolve against
    ``base_dir``, the config's folder).

    Raises:
        ConfigError: a path cannot be imported, or a factory is not callable / not a ToolFactory.
        ToolError: a factory failed.
    """
    from sdk.rollout.factories import build_tools

    return build_tools(tc, base_dir)


def toolbox_maker(cfg):
    """A zero-argument maker of fresh :class:`~sdk.rollout.tools.ToolBox` es (call counts are per
    rollout) over the tools of ``cfg.tools``, built once; the rl and eval stages share it."""
    from sdk.rollout.tools import ToolBox

    tc = cfg.tools
    tools = load_tools(tc, cfg.base_dir)

    def make_box() -> ToolBox:
        return ToolBox(tools, max_calls=tc.max_calls, max_result_chars=tc.max_result_chars)

    return make_box


def tool_rollout(ctx: StageContext, traces: Path):
    """Reward and rollout function for tool tasks: tools from the ``tools:`` section
    (:func:`toolbox_maker`), multi-turn rollouts through :class:`sdk.rollout.trl_rollout.ToolRolloutFunc`,
    traces in ``traces``."""
    from sdk.rollout.rewards import ToolTaskReward
    from sdk.rollout.trl_rollout import ToolRolloutFunc

    tc = ctx.cfg.tools
    return ToolTaskReward(tc.reward), ToolRolloutFunc(toolbox_maker(ctx.cfg), tc.max_turns, traces)


def change_rollout(ctx: StageContext, stage: str):
    """Reward and rollout function for agentic change rollouts: :func:`change_agent`'s toolboxes through
    :class:`sdk.rollout.trl_rollout.ToolRolloutFunc` (traces in ``<stage>/traces.jsonl``), each rollout's
    final diff scored by the sandboxed change reward (:class:`sdk.rollout.change_agent.ChangeAgentReward`,
    logged to ``<stage>/rewards.jsonl``)."""
    from sdk.rollout.change_agent import ChangeAgentReward
    from sdk.rollout.trl_rollout import ToolRolloutFunc

    tc = ctx.cfg.tools
    reward = ChangeAgentReward(sandbox=ctx.need_sandbox(), sandbox_config=ctx.cfg.sandbox, weights=ctx.cfg.reward,
                               log_path=str(ctx.layout.rewards_jsonl(stage)), reference_baseline=False)
    return reward, ToolRolloutFunc(change_agent(ctx), tc.max_turns, ctx.layout.traces_jsonl(stage),
                                   tc.change_agent.max_tokens)


def tools_enabled(cfg) -> bool:
    """True when the config has a ``tools:`` section that names tools: rl and eval roll out with them."""
    return cfg.tools is not None and cfg.tools.enabled


def measure_difficulty(ctx: StageContext, rc, train: list[Task], adapter: Path | None, out: Path
                       ) -> tuple[list[Task], dict]:
    """The difficulty filter of one arm (:func:`sdk.train.difficulty.measure_and_filter`): kept tasks, report."""
    from sdk.train.difficulty import measure_and_filter

    dc, cfg = rc.difficulty, ctx.cfg
    with ctx.console.status(f"measuring pass rates of {min(len(train), dc.max_tasks or len(train))} train tasks "
                            f"({dc.k} samples per task)"):
        kept, _, report = measure_and_filter(train, ctx.model_path, adapter, dc, ctx.need_sandbox(), cfg.reward, out,
                                             cfg.seed, cfg.model.dtype)
    skipped = f", {report['not_sampled']} not sampled (max_tasks)" if report.get("not_sampled") else ""
    ctx.console.print(f"  difficulty: kept {report['kept']}, dropped {report['dropped_by_reason']}{skipped}")
    return kept, report


def skip_arm(ctx: StageContext, rc, stage: str, reason: str) -> StageStats:
    """Record a comparison arm that did not train (``<stage>/heldout_curve.json`` says why)."""
    from sdk.train.compare import arm_label, skipped_record

    ctx.console.print(f"  [yellow]{stage} skipped: {reason}[/yellow]")
    write_json(ctx.layout.heldout_curve(stage), skipped_record(stage, arm_label(rc), reason))
    return StageStats(stage, extra={"skipped": reason})


def heldout_probe(ctx: StageContext, validation: list[Task] | None = None):
    """A :class:`sdk.train.compare.Probe` (monitor + per-task scores) when ``rl.heldout.every`` > 0 or
    ``rl.compare`` is on; else None. Both arms get the same one. It reads the ``validation`` tasks
    carved from train (``tasks.validation_fraction``) when there are any, so held-out tasks steer
    nothing; without a validation split it falls back to held-out tasks (recorded as such)."""
    from sdk.rewards.tiered import score_batch
    from sdk.train.compare import make_probe, monitor_settings
    from sdk.train.monitor import pick_heldout

    cfg = ctx.cfg
    if monitor_settings(cfg.rl) is None:
        return None
    pool = list(validation) if validation else list(ctx.inputs.taskset().split(Split.HELDOUT))
    tasks = pick_heldout(pool, cfg.rl.heldout.per_domain)
    sandbox = ctx.need_sandbox()
    return make_probe(cfg.rl, tasks, lambda ts, cs: score_batch(ts, cs, sandbox, cfg.reward))


def rl_compare_enabled(cfg) -> bool:
    """The comparison arm runs only when both ``rl.enabled`` and ``rl.compare.enabled``."""
    return cfg.rl.enabled and cfg.rl.compare.enabled
