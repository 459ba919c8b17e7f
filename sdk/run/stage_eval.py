"""The eval stage: generate and score base and tuned completions on the eval splits.

Writes ``eval/base.jsonl`` and ``eval/tuned.jsonl``, one :class:`sdk.eval.records.EvalRow` per task
with its raw completions, so the report (and any later rescoring) needs no generation.

Two ways to produce a completion, chosen by the config:

* single turn (the default): the model answers once; the sandboxed tiered reward scores it;
* multi-turn tool rollouts, when the ``tools:`` section names tools (as GRPO then trains with them):
  :func:`sdk.rollout.episode.run_episodes` with the same tools, the same engine and the same reward
  (:class:`sdk.rollout.rewards.ToolTaskReward`) as training, so "valid tool-call rate" and "task
  success" are measured the same way before and after. A completion is then the rollout's trace as
  JSON (calls, arguments, validity, tool answers, retrieved documents, final answer): rescoring
  needs no generation either. A sample *passes* when its final answer is right (status ``ok``); its
  reward is the weighted tool reward, process checks included. Its components carry the reward's
  (``answer``, ``right_tool``, ``valid_args``, ``no_waste``) and the tool metrics
  ``task_success``, ``tool_calls``, ``valid_tool_calls`` and ``used_tools``, which the report's
  components table shows per model; the stage's stats hold the pooled rates (:func:`tool_summary`).
* agentic change rollouts, when ``tools.change_agent`` is on (:mod:`sdk.run.stage_eval_agent`): the
  same engine with tools over each change task's repository; the completion is the final diff plus
  the call counts, scored by the sandboxed change reward (change completion as without tools).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sdk.errors import ConfigError
from sdk.eval.records import EvalRow
from sdk.run.bookkeeping import StageStats
from sdk.run.context import StageContext, adapter_for_eval
from sdk.run.shipped import candidate_adapters
from sdk.run.stage_eval_agent import agent_rows, tool_model
from sdk.run.stage_rl import change_agent, toolbox_maker, tools_enabled
from sdk.run.stage_select import choose_shipped
from sdk.tasks.records import Task

PROMPT_SLACK_TOKENS = 256  # added to a tool rollout's token budget for the tool answers


def eval_tasks(ctx: StageContext) -> list[Task]:
    """Tasks of the configured eval splits, at most ``eval.limit_per_split`` each (first by id)."""
    taskset, ec = ctx.inputs.taskset(), ctx.cfg.eval
    out: list[Task] = []
    for split in ec.splits:
        part = sorted(taskset.split(split), key=lambda t: t.id)
        out += part[: ec.limit_per_split] if ec.limit_per_split else part
    return out


def stage_eval(ctx: StageContext) -> StageStats:
    """Generate and score base and tuned completions (tool rollouts when ``tools:`` names tools);
    save rows with raw completions.

    Raises:
        ConfigError: the task set has no task in the eval splits.
    """
    from sdk.eval.records import save_rows

    cfg, ec = ctx.cfg, ctx.cfg.eval
    tasks = eval_tasks(ctx)
    if not tasks:
        raise ConfigError(f"no task to evaluate: the task set has none in the eval splits {ec.splits}",
                          "add a test-suite source (pytest, jsonl, humaneval) with split auto, heldout or ood, "
                          "or list the splits that have tasks under `eval.splits` (see tasks/counts.json)")
    with_tools = tools_enabled(cfg)
    agentic = with_tools and cfg.tools.change_agent.enabled
    make_box = (change_agent(ctx) if agentic else toolbox_maker(cfg)) if with_tools else None

    def score(part: Sequence[Task], label: str, adapter_path: Path | None) -> list[EvalRow]:
        return (text_rows(ctx, part, label, adapter_path) if make_box is None
                else agent_rows(ctx, part, label, adapter_path, make_box) if agentic
                else tool_rows(ctx, part, label, adapter_path, make_box))

    also = [t for t in tasks if t.split.value in ec.checkpoint_splits] if ec.checkpoints else []
    selection, done = choose_shipped(ctx, score, also)
    shipped = selection["chosen"] if selection and ec.checkpoints else None
    generated, summaries = evaluate_models(ctx, tasks, eval_models(ctx, selection), shipped, score, with_tools, done)
    if ec.self_test and (agentic or not with_tools):
        ref = reference_rows(ctx, tasks)
        save_rows(ctx.layout.eval_rows("reference"), ref)
        ctx.console.print(f"  grader self-test: {sum(r.c for r in ref)}/{sum(r.n for r in ref)} references pass "
                          "through the eval path")
    extra: dict[str, Any] = {"tasks": len(tasks), "models": sorted(generated, key=lambda k: k == "tuned")}
    if with_tools:
        extra["tools"] = summaries
    if selection is not None:
        extra["selection"] = selection
    return StageStats("eval", tokens_generated=sum(generated.values()), extra=extra)


def evaluate_models(ctx: StageContext, tasks: Sequence[Task], models: Sequence[tuple[str, Path | None]],
                    shipped: str | None, score, with_tools: bool, done: dict[str, list[EvalRow]] | None = None
                    ) -> tuple[dict[str, int], dict[str, dict]]:
    """Score and save the rows of each model (base and tuned on every task, checkpoints on
    ``eval.checkpoint_splits``). The ``shipped`` checkpoint (the validation choice) is scored on every
    task once: its checkpoint-split rows go to its own file, all of them, labelled ``tuned``, to
    ``tuned.jsonl``. ``done`` holds rows already scored per label (the choice's pass,
    :func:`sdk.run.stage_select.choose_shipped`): those tasks are not generated again, only the rest
    (e.g. the shipped adapter's OOD tasks). Returns ``({label written: tokens generated (0 for the
    tuned copy)}, {label: tool summary})``, labels in the order written."""
    from sdk.eval.records import save_rows

    splits = ctx.cfg.eval.checkpoint_splits
    generated: dict[str, int] = {}
    summaries: dict[str, dict] = {}
    for label, adapter_path in models:
        full = label in ("base", "tuned", shipped)
        rows = _score_rest([t for t in tasks if full or t.split.value in splits], (done or {}).get(label, ()),
                           lambda part, lb=label, ad=adapter_path: score(part, lb, ad))
        out = {label: rows}
        if label == shipped:
            out = {label: [r for r in rows if r.split.value in splits],
                   "tuned": [r.model_copy(update={"model": "tuned"}) for r in rows]}
        for name, part in out.items():
            save_rows(ctx.layout.eval_rows(name), part)
            generated[name] = sum(r.gen_tokens for r in part) if name == label else 0
            if with_tools:
                summaries[name] = tool_summary(part)
            ctx.console.print(_rows_line(name, part, summaries.get(name)))
    return generated, summaries


def _score_rest(wanted: Sequence[Task], done: Sequence[EvalRow], score) -> list[EvalRow]:
    """Rows of ``wanted`` in its order: those in ``done`` (by task id) as they are, the rest from
    ``score(tasks)`` (not called when nothing is left)."""
    have = {r.task_id: r for r in done}
    rest = [t for t in wanted if t.id not in have]
    have.update((r.task_id, r) for r in (score(rest) if rest else []))
    return [have[t.id] for t in wanted]


def _rows_line(label: str, rows: Sequence[EvalRow], summary: dict | None) -> str:
    line = f"  {label}: {sum(any(r.passed) for r in rows)}/{len(rows)} tasks passed (any sample)"
    if any(r.retry for r in rows):
        line += f", {sum(any(r.retry) for r in rows)} after one retry with feedback"
    if summary:
        line += ", " + ", ".join(f"{k} {v:.2f}" for k, v in summary.items() if k != "samples")
    return line


def eval_models(ctx: StageContext, selection: dict | None = None) -> list[tuple[str, Path | None]]:
    """The models to evaluate, in curve order: ``base``; with ``eval.checkpoints`` the SFT-only
    adapter (``sft``, when RL trained on top of it) and the RL midway adapter (``rl_midway``, with
    ``rl.eval_midway``); then, with a validation ``selection`` (:mod:`sdk.run.stage_select`), the RL
    end adapter under its own label ``rl`` (the shipped one among them also gives ``tuned``), else
    ``tuned``: the shipped adapter (:func:`adapter_for_eval`; checkpoints off: the shipped one only).
    Rows files of checkpoints not evaluated this time are removed, so the report never reads stale ones."""
    cfg, layout = ctx.cfg, ctx.layout
    models: list[tuple[str, Path | None]] = [("base", None)]
    cands = candidate_adapters(cfg, layout) if cfg.eval.checkpoints else []
    if selection is not None and cands:
        models += cands
    else:
        models += [(label, path) for label, path in cands if label != "rl"]
        tuned = adapter_for_eval(cfg, layout)
        if tuned is not None:
            models.append(("tuned", tuned))
    labels = {label for label, _ in models}
    for stale in ("sft", "rl_midway", "rl", "reference"):
        if stale not in labels:
            layout.eval_rows(stale).unlink(missing_ok=True)
    return models


def reference_rows(ctx: StageContext, tasks: Sequence[Task]) -> list[EvalRow]:
    """The grader's self-test (field case E1): each task's reference, answered the way SFT teaches
    it (:func:`sdk.train.sft.answer_text`), scored through the same :func:`sdk.eval.run.evaluate`
    and reward as the models; tasks without a reference are left out."""
    from sdk.eval.run import evaluate
    from sdk.rewards.tiered import score_batch
    from sdk.train.sft import answer_text

    cfg, sandbox = ctx.cfg, ctx.need_sandbox()
    with_ref = [t for t in tasks if t.reference]
    answers = iter([answer_text(t) for t in with_ref])

    def generate(prompts: list[list[dict]], n: int) -> list[list[tuple]]:
        return [[(text, 0, "reference")] * n for text in (next(answers) for _ in prompts)]

    return evaluate(with_ref, generate, lambda ts, cs: score_batch(ts, cs, sandbox, cfg.reward), "reference", 1,
                    progress=False, batch_size=cfg.eval.batch_size)


def text_rows(ctx: StageContext, tasks: Sequence[Task], label: str, adapter: Path | None) -> list[EvalRow]:
    """Single-turn completions scored by the sandboxed tiered reward on the run's sandbox; rows in
    the order of ``tasks``. Greedy passes (``eval.temperature`` 0) generate the tasks shortest prompt
    first (:func:`by_prompt_length`), so each batch pads its prompts little; a greedy row does not
    depend on its batch (``tests/eval/test_eval_one_pass.py``). Sampled passes keep the given order
    (a seeded draw depends on the batch it falls in)."""
    from sdk.eval.run import evaluate
    from sdk.generate import make_generator

    cfg, ec = ctx.cfg, ctx.cfg.eval
    ctx.need_sandbox()
    gen = make_generator(ctx.model_path, adapter, ec.batch_size, ec.max_new_tokens, ec.temperature,
                         cfg.seed, cfg.model.dtype, cfg.rl.use_vllm)
    score = ctx.score  # one memo for every candidate: a repeated completion is run once
    where = by_prompt_length(tasks) if ec.temperature <= 0 else list(range(len(tasks)))
    order = [tasks[i] for i in where]
    try:
        rows = evaluate(order, gen, score, label, ec.n_samples, progress=ctx.progress, batch_size=ec.batch_size)
        rows = _retry(ctx, order, rows, gen) if ec.retry_with_feedback else rows
    finally:
        gen.close()
    out = list(rows)
    for i, row in zip(where, rows):
        out[i] = row
    return out


def by_prompt_length(tasks: Sequence[Task]) -> list[int]:
    """Indices of ``tasks``, shortest prompt (characters of its messages) first; ties keep their order."""
    return sorted(range(len(tasks)), key=lambda i: sum(len(m.content) for m in tasks[i].prompt))


def retry_rows(ctx: StageContext, tasks: Sequence[Task], rows: Sequence[EvalRow], adapter: Path | None) -> list[EvalRow]:
    """``rows`` (first attempts of ``adapter``; None: the base model) given the retry with execution
    feedback that :func:`text_rows` gives under ``eval.retry_with_feedback``: same generator settings,
    reward, sandbox and visible-test feedback (:func:`sdk.eval.retry.retry_with_feedback`), without
    generating the first attempts again."""
    from sdk.generate import make_generator

    cfg, ec = ctx.cfg, ctx.cfg.eval
    gen = make_generator(ctx.model_path, adapter, ec.batch_size, ec.max_new_tokens, ec.temperature,
                         cfg.seed, cfg.model.dtype, cfg.rl.use_vllm)
    try:
        return _retry(ctx, tasks, rows, gen)
    finally:
        gen.close()


def _retry(ctx: StageContext, tasks: Sequence[Task], rows: Sequence[EvalRow], gen) -> list[EvalRow]:
    from sdk.eval.retry import retry_with_feedback
    from sdk.rewards.tiered import score_batch

    cfg, sandbox = ctx.cfg, ctx.need_sandbox()
    score = lambda ts, cs: score_batch(ts, cs, sandbox, cfg.reward)  # noqa: E731
    return retry_with_feedback(tasks, rows, gen, score, visible_test_feedback(sandbox, cfg), cfg.eval.batch_size)


def visible_test_feedback(sandbox, cfg, max_chars: int = 900):
    """``(tasks, completions) -> texts``: each completion's code run against its task's *visible*
    tests only (hidden tests never reach a prompt), formatted as the failing tests' names and
    messages, cut to ``max_chars``; a completion without code or that does not run says so."""
    from sdk.rewards.extract import extract_code
    from sdk.rewards.tiered import build_request
    from sdk.tasks.records import UnitTestVerifier

    def feedback(tasks: list[Task], completions: list[str]) -> list[str]:
        out: list[str] = [""] * len(tasks)
        reqs, where = [], []
        for i, (task, text) in enumerate(zip(tasks, completions)):
            ver = task.verifier
            code = extract_code(text, getattr(ver, "entry_point", None)).code if isinstance(ver, UnitTestVerifier) else None
            if code is None:
                out[i] = "No code block was found in your answer." if isinstance(ver, UnitTestVerifier) else ""
                continue
            reqs.append(build_request(ver, code, limits=cfg.sandbox.limits))
            where.append(i)
        for i, res in zip(where, sandbox.run(reqs) if reqs else []):
            failed = [f"{t.name}: {t.outcome}\n{t.message.strip()}" for t in res.tests if t.outcome != "passed"]
            text = "\n\n".join(failed) or f"{res.status.value}: {res.detail or res.stderr[-400:]}"
            out[i] = text[:max_chars]
        return out

    return feedback


def tool_rows(ctx: StageContext, tasks: Sequence[Task], label: str, adapter: Path | None, make_box) -> list[EvalRow]:
    """Multi-turn tool rollouts (transformers generation, ``eval.max_new_tokens`` per assistant turn,
    ``eval.temperature``), each scored by the tool-task reward; see the module docstring."""
    from sdk.eval.run import evaluate
    from sdk.rollout.episode import run_episodes
    from sdk.rollout.rewards import ToolTaskReward

    ec, tc = ctx.cfg.eval, ctx.cfg.tools
    model, tok, step = tool_model(ctx, adapter)
    turns = tc.max_turns or tc.max_calls + 1
    budget = ec.max_new_tokens * turns + PROMPT_SLACK_TOKENS

    def generate(prompts: list[list[dict]], n: int) -> list[list[tuple[str, int]]]:
        episodes = run_episodes([p for p in prompts for _ in range(n)], tok, make_box, step, budget, tc.max_turns)
        outs = [(json.dumps(ep.trace(), ensure_ascii=False, default=str), sum(ep.env_mask)) for ep in episodes]
        return [outs[i * n:(i + 1) * n] for i in range(len(prompts))]

    reward = ToolTaskReward(tc.reward)
    try:
        rows = evaluate(tasks, generate, lambda ts, cs: score_traces(reward, ts, cs), label, ec.n_samples,
                        progress=ctx.progress, batch_size=ec.batch_size)
    finally:
        model.close()
    return [_pass_on_answer(r) for r in rows]


def score_traces(reward, tasks: Sequence[Task], completions: Sequence[str]) -> list:
    """One :class:`sdk.rewards.result.RewardResult` per tool-rollout trace (JSON): the tool reward,
    status ``ok`` when the final answer is right (else ``failed``), the reward's components plus the
    tool metrics; not judged (score None) when no weighted component applies."""
    from sdk.rewards.result import RewardResult, RewardStatus

    out = []
    for task, text in zip(tasks, completions):
        trace = json.loads(text)
        score, comps = reward.score(task, trace)
        comps = {**comps, "task_success": float(comps.get("answer", 0.0) == 1.0),
                 "tool_calls": float(trace["n_calls"]), "valid_tool_calls": float(trace["n_valid"]),
                 "used_tools": float(trace["n_calls"] > 0)}
        if score is None:
            out.append(RewardResult(score=None, components=comps, status=RewardStatus.NOT_VERIFIABLE,
                                    detail="no weighted tool-reward component applies to this task"))
            continue
        status = RewardStatus.OK if comps["task_success"] else RewardStatus.FAILED
        out.append(RewardResult(score=score, components=comps, status=status))
    return out


def _pass_on_answer(row: EvalRow) -> EvalRow:
    """``row`` whose samples pass when judged with status ok (the right final answer), process
    checks aside (``evaluate`` asks for full marks, which would need every process check too)."""
    passed = tuple(r is not None and s == "ok" for r, s in zip(row.rewards, row.statuses))
    return EvalRow.model_validate({**row.model_dump(), "passed": passed})


def tool_summary(rows: Sequence[EvalRow]) -> dict[str, float]:
    """Pooled tool metrics over every judged sample of ``rows``: ``task_success`` (right final
    answer), ``valid_tool_call_rate`` (valid calls / calls; 0 without calls), ``tool_use_rate``
    (samples with a call), ``calls_per_sample``, ``mean_reward`` and ``samples``."""
    comps = [c for row in rows for r, c in zip(row.rewards, row.components) if r is not None]
    rewards = [r for row in rows for r in row.rewards if r is not None]
    n, calls = max(len(comps), 1), sum(c["tool_calls"] for c in comps)
    return {"task_success": sum(c["task_success"] for c in comps) / n,
            "valid_tool_call_rate": sum(c["valid_tool_calls"] for c in comps) / calls if calls else 0.0,
            "tool_use_rate": sum(c["used_tools"] for c in comps) / n,
            "calls_per_sample": calls / n,
            "mean_reward": sum(rewards) / n,
            "samples": float(len(comps))}
