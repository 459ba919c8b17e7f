"""The body of each pipeline stage. :class:`sdk.pipeline.Pipeline` owns ordering, skipping and timing.

Outputs under ``run_dir``:

* ``tasks/tasks.jsonl`` (+ ``tasks.quarantine.jsonl``), ``tasks/sft_examples.jsonl``,
  ``tasks/preference_pairs.jsonl``, ``tasks/counts.json``;
* ``sft/adapter``, ``sft/log_history.json``; ``rl/adapter``, ``rl/log_history.json``, ``rl/rewards.jsonl``,
  ``rl/heldout_curve.json`` (when probed); the same under ``rl_compare/`` for the comparison arm;
* ``eval/base.jsonl``, ``eval/tuned.jsonl`` (raw completions kept for rescoring);
* ``report.json``, ``report.html``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sdk.errors import ConfigError, SourceError
from sdk.sources import SftExample, resolve_source
from sdk.tasks.records import Message, Split, Task
from sdk.tasks.split import assign_splits
from sdk.tasks.taskset import TaskSet
from sdk.tasks.validate import validate_tasks
from sdk.train.common import StageStats, write_json

if TYPE_CHECKING:
    from sdk.pipeline import Pipeline


def _bar(p: "Pipeline", label: str, total: int) -> Progress:
    prog = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=p.console, disable=not p.progress)
    prog.add_task(label, total=total)
    return prog


def _with_system(messages: tuple[Message, ...], system: str) -> tuple[Message, ...]:
    if not system or (messages and messages[0].role == "system"):
        return messages
    return (Message(role="system", content=system), *messages)


def stage_tasks(p: "Pipeline") -> StageStats:
    """Read every source, split, validate references in the sandbox, save the task set."""
    cfg = p.cfg
    tasks: list[Task] = []
    fixed: dict[str, Split] = {}
    examples: list[SftExample] = []
    pairs, quarantined, counts = [], [], {}
    for i, src in enumerate(cfg.sources):
        cls = resolve_source(src.type)
        label = f"{src.type}:{src.domain}"
        with p.console.status(f"reading source {label}"):
            result = cls(src.options, cfg.base_dir, src.domain).read()
        got = sorted(result.tasks, key=lambda t: t.id)[: src.limit] if src.limit else result.tasks
        got = [t.with_(prompt=_with_system(t.prompt, cfg.tasks.system_prompt)) for t in got]
        got = [Task.model_validate({**t.model_dump(), "id": ""}) for t in got]  # prompt changed: new id
        if src.split != "auto":
            fixed.update({t.id: Split(src.split) for t in got})
        tasks += got
        examples += [e.model_copy(update={"messages": _with_system(e.messages, cfg.tasks.system_prompt)})
                     for e in result.sft_examples]
        pairs += result.preference_pairs
        quarantined += result.quarantined
        counts[f"{i}:{label}"] = result.counts
        p.console.print(f"  {label}: {result.counts}")
    if not tasks and not examples:
        reasons = Counter(q.reason for q in quarantined).most_common(3)
        why = "".join(f"\n  - {n} quarantined: {r[:300]}" for r, n in reasons)
        raise SourceError("the sources produced no tasks and no SFT examples" + (f"; top reasons:{why}" if why else ""),
                          "check each source's path/URL and options (e.g. `fields:` of a jsonl source, `rating:` "
                          "of a feedback source); see the counts printed above")
    tasks, dups = assign_splits(tasks, cfg.tasks.heldout_fraction, cfg.tasks.ood_domains, cfg.seed, fixed)
    quarantined += dups
    if cfg.tasks.validate_references and tasks:
        with _bar(p, "validating references", len(tasks) * 2) as bar:
            tasks, bad = validate_tasks(tasks, p.sandbox, cfg.sandbox.limits,
                                        progress=lambda n: bar.advance(bar.task_ids[0], n))
        quarantined += bad
    taskset = TaskSet(tasks, quarantined)
    out = p.run_dir / "tasks"
    taskset.save(out / "tasks.jsonl")
    _save_jsonl(out / "sft_examples.jsonl", [e.model_dump(mode="json") for e in examples])
    _save_jsonl(out / "preference_pairs.jsonl", [x.model_dump(mode="json") for x in pairs])
    data = hashlib.sha256("\n".join([taskset.version, *sorted(e.model_dump_json() for e in examples),
                                      *sorted(x.model_dump_json() for x in pairs)]).encode()).hexdigest()[:16]
    summary = {"sources": counts, "splits": taskset.counts(), "version": taskset.version, "data_version": data,
               "sft_examples": len(examples), "preference_pairs": len(pairs),
               "quarantine_reasons": dict(Counter(q.reason.split(":")[0] for q in quarantined))}
    write_json(out / "counts.json", summary)
    p.console.print(f"  task set {taskset.version}: {summary['splits']}")
    return StageStats("tasks", extra={"tasks": len(taskset), "quarantined": len(quarantined),
                                      "sft_examples": len(examples)})


def load_taskset(p: "Pipeline") -> TaskSet:
    """The task set written by the tasks stage."""
    return TaskSet.load(p.run_dir / "tasks" / "tasks.jsonl")


def load_examples(p: "Pipeline") -> list[SftExample]:
    """The SFT examples written by the tasks stage."""
    from sdk.jsonl import read_models

    return read_models(p.run_dir / "tasks" / "sft_examples.jsonl", SftExample, SourceError,
                       "re-run the tasks stage (`tuneloop run --force`) to rewrite the file", missing_ok=True)


def stage_sft(p: "Pipeline") -> StageStats:
    """LoRA SFT on train references and feedback examples; then DPO on preference pairs if enabled."""
    from sdk.train.sft import run_sft, sft_items, sft_rows

    train = list(load_taskset(p).split(Split.TRAIN)) if p.cfg.sft.include_train_references else []
    examples = load_examples(p) if p.cfg.sft.include_feedback else []
    rows = sft_rows(train, examples)
    p.console.print(f"  {len(rows)} SFT rows ({len(train)} train references, {len(examples)} feedback examples)")
    stats = run_sft(p.model_path, rows, p.cfg.sft, p.run_dir / "sft", p.cfg.seed, p.cfg.model.dtype, p.progress,
                    items=sft_items(train, examples), load_in_4bit=p.cfg.model.load_in_4bit)
    _lineage(p, "sft", p.run_dir / "sft" / "adapter", None, stats)
    if p.cfg.sft.dpo.enabled:
        stats.extra["dpo"] = _dpo(p)
    return stats


def _dpo(p: "Pipeline") -> dict:
    """DPO after SFT on ``tasks/preference_pairs.jsonl``; the DPO adapter becomes ``sft/adapter``."""
    from sdk.train.dpo import dpo_rows, load_pairs, promote, run_dpo

    rows, skipped = dpo_rows(load_pairs(p.run_dir / "tasks" / "preference_pairs.jsonl"))
    if not rows:
        p.console.print("  DPO: no usable preference pairs; skipped")
        return {"rows": 0, "skipped_pairs": skipped}
    p.console.print(f"  DPO on {len(rows)} preference pairs ({skipped} skipped: empty or identical)")
    sft_dir = p.run_dir / "sft"
    dstats = run_dpo(p.model_path, sft_dir / "adapter", rows, p.cfg.sft.dpo, p.cfg.sft.lora, sft_dir / "dpo",
                     p.cfg.seed, p.cfg.model.dtype, p.progress, load_in_4bit=p.cfg.model.load_in_4bit)
    promote(sft_dir, sft_dir / "dpo")
    _lineage(p, "dpo", sft_dir / "adapter", sft_dir / "adapter_sft", dstats)
    return {"rows": len(rows), "skipped_pairs": skipped, "steps": dstats.extra["steps"]}


def stage_rl(p: "Pipeline") -> StageStats:
    """GRPO on the train split with the sandboxed reward, continuing the SFT adapter."""
    return _grpo_arm(p, p.cfg.rl, "rl")


def stage_rl_compare(p: "Pipeline") -> StageStats:
    """The schedule comparison's second GRPO arm (``rl.compare``, :mod:`sdk.train.compare`) into
    ``rl_compare/``: the SFT adapter, seed and GRPO settings of ``rl`` with the comparison's order and
    difficulty filter. Its adapter is marked not promotable and never evaluated. An arm with nothing
    to probe or nothing left to train on is recorded as skipped (with the reason), not an error."""
    from sdk.train.compare import arm_config
    from sdk.train.lineage import read_lineage, write_lineage

    stats = _grpo_arm(p, arm_config(p.cfg.rl), "rl_compare")
    adapter = p.run_dir / "rl_compare" / "adapter"
    lineage = read_lineage(adapter) if "skipped" not in stats.extra else None
    if lineage is not None:
        write_lineage(adapter, lineage.model_copy(update={"promotable": False, "gate_reasons": (
            "schedule comparison arm (rl.compare): trained for its held-out curve only, never evaluated",)}))
    return stats


def _grpo_arm(p: "Pipeline", rc, stage: str) -> StageStats:
    """One GRPO run with the GRPO config ``rc`` into ``run_dir/<stage>``, probed on held-out tasks
    when ``rl.heldout``/``rl.compare`` ask for it (the curve goes to ``<stage>/heldout_curve.json``)."""
    from sdk.rewards.trl import SandboxReward
    from sdk.train.compare import CURVE_FILE, arm_label, arm_record, arm_settings
    from sdk.train.grpo import run_grpo

    out, compare = p.run_dir / stage, stage == "rl_compare"
    (out / CURVE_FILE).unlink(missing_ok=True)
    train = list(load_taskset(p).split(Split.TRAIN))
    sft_adapter = p.run_dir / "sft" / "adapter"
    adapter = sft_adapter if p.cfg.sft.enabled and (sft_adapter / "adapter_config.json").is_file() else None
    probe = _heldout_probe(p)
    if compare and probe is None:
        return _skip_arm(p, rc, stage, "no held-out task to probe (the comparison needs a held-out split)")
    difficulty = None
    if rc.difficulty.enabled:
        train, difficulty = _difficulty(p, rc, train, adapter, out)
    # No reference baseline: a task's tests only cover its target, so "tests the reference passes
    # that the completion fails" would charge every failing test twice (tests tier + penalty).
    reward = SandboxReward(sandbox_config=p.cfg.sandbox, weights=p.cfg.reward,
                           log_path=str(out / "rewards.jsonl"), reference_baseline=False)
    rollout = None
    if p.cfg.tools is not None and p.cfg.tools.tools:
        reward, rollout = _tool_rollout(p, out)
    if not any(t.verifier.kind != "reference" for t in train):
        if compare and difficulty is not None:
            why = f"kept {difficulty['kept']} of {difficulty['measured']} measured {difficulty['dropped_by_reason']}"
            return _skip_arm(p, rc, stage, f"nothing to train on after the difficulty filter: {why}")
        if difficulty is not None:
            why = f"kept {difficulty['kept']} of {difficulty['measured']} measured {difficulty['dropped_by_reason']}"
            raise ConfigError(f"GRPO has nothing to train on after the difficulty filter: {why}",
                              "widen the filter (rl.difficulty.min_pass_rate / max_pass_rate), measure more tasks "
                              "(rl.difficulty.max_tasks), or turn it off (--set rl.difficulty.enabled=false)")
        raise ConfigError(f"GRPO has nothing to train on: none of the {len(train)} train tasks has an automatic "
                          "verifier", "add a test-suite source (pytest, jsonl, humaneval) whose split is auto or "
                          "train, or turn GRPO off with `rl: {enabled: false}` (--set rl.enabled=false)")
    p.console.print(f"  GRPO ({arm_label(rc)}) on {len(train)} train tasks, {rc.max_steps} steps, "
                    f"{rc.num_generations} completions per prompt")
    stats = run_grpo(p.model_path, adapter, train, reward, rc, p.cfg.sft.lora, out, p.cfg.seed, p.cfg.model.dtype,
                     p.progress, rollout_func=rollout, callbacks=[probe.monitor] if probe else [],
                     load_in_4bit=p.cfg.model.load_in_4bit)
    stats.stage = stage
    _lineage(p, stage, out / "adapter", adapter, stats)
    if probe is not None:
        stats.extra["heldout"] = probe.monitor.summary()
        settings = arm_settings(rc, difficulty, stats.extra.get("order"), len(train))
        write_json(out / CURVE_FILE, arm_record(stage, arm_label(rc), settings, probe, stats.extra["steps"],
                                                rc.max_steps))
    if difficulty is not None:
        stats.extra["difficulty"] = difficulty
    return stats


def _difficulty(p: "Pipeline", rc, train: list[Task], adapter: Path | None, out: Path) -> tuple[list[Task], dict]:
    """The difficulty filter of one arm (:func:`sdk.train.difficulty.measure_and_filter`): kept tasks, report."""
    from sdk.train.difficulty import measure_and_filter

    dc = rc.difficulty
    with p.console.status(f"measuring pass rates of {min(len(train), dc.max_tasks or len(train))} train tasks "
                          f"({dc.k} samples per task)"):
        kept, _, report = measure_and_filter(train, p.model_path, adapter, dc, p.sandbox, p.cfg.reward, out,
                                             p.cfg.seed, p.cfg.model.dtype)
    skipped = f", {report['not_sampled']} not sampled (max_tasks)" if report.get("not_sampled") else ""
    p.console.print(f"  difficulty: kept {report['kept']}, dropped {report['dropped_by_reason']}{skipped}")
    return kept, report


def _skip_arm(p: "Pipeline", rc, stage: str, reason: str) -> StageStats:
    """Record a comparison arm that did not train (``<stage>/heldout_curve.json`` says why)."""
    from sdk.train.compare import CURVE_FILE, arm_label, skipped_record

    p.console.print(f"  [yellow]{stage} skipped: {reason}[/yellow]")
    write_json(p.run_dir / stage / CURVE_FILE, skipped_record(stage, arm_label(rc), reason))
    return StageStats(stage, extra={"skipped": reason})


def _tool_rollout(p: "Pipeline", out: Path | None = None):
    """Reward and rollout function for tool tasks: tools from ``cfg.tools.tools`` (dotted paths to
    tools, typed functions or factories returning a list of them), multi-turn rollouts through
    :class:`sdk.rollout.trl_rollout.ToolRolloutFunc`, traces in ``<out>/traces.jsonl`` (default ``rl/``)."""
    from sdk.rollout.rewards import ToolTaskReward
    from sdk.rollout.tools import ToolBox, as_tool
    from sdk.rollout.trl_rollout import ToolRolloutFunc
    from sdk.sources import import_dotted

    tc = p.cfg.tools
    tools = []
    for path in tc.tools:
        obj = import_dotted(path)
        made = obj() if callable(obj) and getattr(obj, "__name__", "").startswith(("make_", "build_")) else obj
        tools += [as_tool(t) for t in (made if isinstance(made, (list, tuple)) else [made])]

    def make_box():
        return ToolBox(tools, max_calls=tc.max_calls, max_result_chars=tc.max_result_chars)

    traces = (out or p.run_dir / "rl") / "traces.jsonl"
    return ToolTaskReward(tc.reward), ToolRolloutFunc(make_box, tc.max_turns, traces)


def _heldout_probe(p: "Pipeline"):
    """A :class:`sdk.train.compare.Probe` (held-out monitor + per-task scores) when ``rl.heldout.every``
    > 0 or ``rl.compare`` is on and there are held-out tasks; else None. Both arms get the same one."""
    from sdk.rewards.tiered import score_batch
    from sdk.train.compare import make_probe, monitor_settings
    from sdk.train.monitor import pick_heldout

    if monitor_settings(p.cfg.rl) is None:
        return None
    tasks = pick_heldout(list(load_taskset(p).split(Split.HELDOUT)), p.cfg.rl.heldout.per_domain)
    score = lambda ts, cs: score_batch(ts, cs, p.sandbox, p.cfg.reward)  # noqa: E731
    return make_probe(p.cfg.rl, tasks, score)


def _lineage(p: "Pipeline", stage: str, adapter: Path, parent: Path | None, stats: StageStats) -> None:
    """Write ``adapter/lineage.json`` (see :mod:`sdk.train.lineage`)."""
    from sdk.train.lineage import Lineage, write_lineage

    write_lineage(adapter, Lineage(
        stage=stage, base_model=p.cfg.model.name, parent=str(parent) if parent else None,
        taskset_version=load_taskset(p).version, fingerprint=p.fingerprint("sft" if stage == "dpo" else stage),
        steps=int(stats.extra.get("steps", 0)), rows=int(stats.extra.get("rows", 0))))


def eval_tasks(p: "Pipeline") -> list[Task]:
    """Tasks of the configured eval splits, at most ``limit_per_split`` each (first by id)."""
    taskset = load_taskset(p)
    out: list[Task] = []
    for split in p.cfg.eval.splits:
        part = sorted(taskset.split(split), key=lambda t: t.id)
        out += part[: p.cfg.eval.limit_per_split] if p.cfg.eval.limit_per_split else part
    return out


def stage_eval(p: "Pipeline") -> StageStats:
    """Generate and score base and tuned completions; save rows with raw completions."""
    from sdk.eval.records import save_rows
    from sdk.eval.run import evaluate
    from sdk.generate import make_generator
    from sdk.rewards.tiered import score_batch

    tasks = eval_tasks(p)
    if not tasks:
        raise ConfigError(f"no task to evaluate: the task set has none in the eval splits {p.cfg.eval.splits}",
                          "add a test-suite source (pytest, jsonl, humaneval) with split auto, heldout or ood, "
                          "or list the splits that have tasks under `eval.splits` (see tasks/counts.json)")
    ec = p.cfg.eval
    models = [("base", None)]
    adapter = p.adapter_for_eval()
    if adapter is not None:
        models.append(("tuned", adapter))
    generated = 0

    def score(ts, completions):
        return score_batch(ts, completions, p.sandbox, p.cfg.reward)

    for label, adapter_path in models:
        gen = make_generator(p.model_path, adapter_path, ec.batch_size, ec.max_new_tokens, ec.temperature,
                             p.cfg.seed, p.cfg.model.dtype, p.cfg.rl.use_vllm)
        rows = evaluate(tasks, gen, score, label, ec.n_samples, progress=p.progress, batch_size=ec.batch_size)
        gen.close()
        save_rows(p.run_dir / "eval" / f"{label}.jsonl", rows)
        generated += sum(r.gen_tokens for r in rows)
        passed = sum(any(r.passed) for r in rows)
        p.console.print(f"  {label}: {passed}/{len(rows)} tasks passed (any sample)")
    return StageStats("eval", tokens_generated=generated, extra={"tasks": len(tasks)})


def stage_report(p: "Pipeline") -> StageStats:
    """Compare, gate, and write report.json / report.html."""
    from sdk.run_report import make_report

    report, gate = make_report(p)
    stats = StageStats("report", extra={"report": report})
    _record_verdict(p, report, gate)
    if gate is not None:
        gate.raise_if_failed()
    return stats


def _record_verdict(p: "Pipeline", report: dict, gate) -> None:
    """Write the gate verdict and held-out pass@1 into the evaluated adapter's ``lineage.json``:
    a failed gate marks the adapter not promotable."""
    from sdk.train.lineage import read_lineage, write_lineage

    adapter = p.adapter_for_eval()
    lineage = read_lineage(adapter) if adapter is not None else None
    if lineage is None:
        return
    held = (report.get("by_split") or {}).get("heldout") or {}
    scores = {side: float(held[side]["1"]["value"]) for side in ("base", "tuned")
              if isinstance(held.get(side), dict) and isinstance(held[side].get("1"), dict)}
    write_lineage(adapter, lineage.model_copy(update={
        "promotable": None if gate is None else bool(gate.passed),
        "gate_reasons": tuple(gate.reasons) if gate is not None else (), "heldout_pass_at_1": scores}))


def _save_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows))
