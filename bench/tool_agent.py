"""examples/tool_agent before/after under a wall-time budget: task success and tool-call quality, base vs tuned.

Runs the example's config (``examples/tool_agent/agent.yaml``, default model SmolLM2-135M on CPU) through the
pipeline's own stages into ``WORK/run`` (started afresh): the tasks stage, the base model's greedy tool
rollouts on the held-out tasks (the eval stage's :func:`sdk.run.stage_eval.tool_rows`: same tools, same
reward), the sft stage (with the config's ``tools.demonstrations``: LoRA SFT on the train tasks' verified
tool-call demonstrations, :mod:`sdk.train.tool_demos`) and its adapter on the held-out tasks, GRPO from it
(the rl stage: multi-turn tool rollouts, :class:`sdk.rollout.trl_rollout.ToolRolloutFunc`), then the tuned
adapter on the same held-out tasks. It prints, for base, SFT-only and tuned (SFT + GRPO): task success
(pass@1: the final answer is right) with the paired 95 % bootstrap intervals of tuned − base, sft − base
and tuned − sft, valid-tool-call rate, tool-use
rate, calls per sample and mean reward (:func:`sdk.run.stage_eval.tool_summary`), and the wall and process CPU
seconds of each stage, and writes them to ``WORK/result.json``.

Budget (``--budget-min``, whole bench): the base eval, SFT and the SFT eval run first (never cut); GRPO gets what is left
after reserving ``RESERVE_FACTOR`` × the base eval's wall time (plus ``RESERVE_S``) for the tuned eval, and is
stopped at the first GRPO step that ends past that point (:class:`Deadline`, a trainer callback added to the rl
stage's own ``run_grpo``); the adapter trained so far is saved and evaluated, and the bench says training was
stopped by the budget and after how many steps. The eval is never cut. A training run that finishes its
``rl.max_steps`` before the deadline is not stopped.

Default sizing (``--budget-min 18``, meant to finish in 15-20 min on 2 quiet cores): ``rl.max_steps=12`` (an
upper bound the budget cuts), ``rl.num_generations=4`` with ``rl.batch_size=4`` (one prompt of 4 rollouts per
step), ``rl.max_completion_length=160`` and ``eval.max_new_tokens=64`` (the config's), all 9 held-out tasks
(``--limit`` caps them). Measured on the default model (2 shared cores, load 4): one greedy eval pass of the 9
held-out tasks 86 s, one GRPO step of 4 tool rollouts 150-300 s (generation dominates), so 18 minutes leave
room for 3 to 4 GRPO steps after the base eval and the reserve: the budget, not the step count, ends
training. ``--set KEY=VALUE`` overrides anything else.

    nice -n 10 .venv/bin/python bench/tool_agent.py --work /tmp/tool_agent_bench
    nice -n 10 .venv/bin/python bench/tool_agent.py --budget-min 30 --set rl.max_steps=40
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]

CONFIG = _HERE.parent / "examples" / "tool_agent" / "agent.yaml"
DEFAULT_SETS = ("rl.max_steps=12", "rl.num_generations=4", "rl.batch_size=4")
RESERVE_FACTOR = 1.5  # the tuned model may call more tools than the base: its eval can take longer
RESERVE_S = 30.0      # model load and adapter merge of the tuned eval
METRICS = (("valid_tool_call_rate", "valid-tool-call rate", "{:.2f}"), ("tool_use_rate", "tool-use rate", "{:.2f}"),
           ("calls_per_sample", "calls/sample", "{:.2f}"), ("mean_reward", "mean reward", "{:.3f}"))


class Deadline:
    """A ``transformers.TrainerCallback`` that stops training at the first step ending at or past ``deadline``.

    Args:
        deadline: a ``clock()`` reading (seconds).
        clock: the time source (default ``time.time``).
    Attributes:
        stopped_at: the global step after which training was stopped, or None (never stopped).
    Duck-typed (the trainer calls ``on_<event>`` methods that exist), so importing this bench needs no torch.
    """

    def __init__(self, deadline: float, clock: Callable[[], float] = time.time) -> None:
        self.deadline, self.clock, self.stopped_at = deadline, clock, None

    def on_step_end(self, args, state, control, **kwargs):
        """Set ``control.should_training_stop`` once the deadline has passed; returns ``control``."""
        if self.clock() >= self.deadline and self.stopped_at is None:
            control.should_training_stop = True
            self.stopped_at = int(state.global_step)
        return control

    def __getattr__(self, name: str):
        if name.startswith("on_"):
            return lambda args, state, control, **kw: control
        raise AttributeError(name)


@contextlib.contextmanager
def grpo_callback(callback) -> Iterator[None]:
    """Within the block, every :func:`sdk.train.grpo.run_grpo` call (the rl stage imports it at call time)
    gets ``callback`` appended to its callbacks."""
    import sdk.train.grpo as grpo

    original = grpo.run_grpo

    def run_grpo(*args, callbacks: Sequence = (), **kwargs):
        return original(*args, callbacks=[*callbacks, callback], **kwargs)

    grpo.run_grpo = run_grpo
    try:
        yield
    finally:
        grpo.run_grpo = original


def pipeline(config: str, run_dir: Path, sets: Sequence[str]):
    """A :class:`sdk.run.pipeline.Pipeline` of ``config`` with ``KEY=VALUE`` overrides, into ``run_dir``."""
    import yaml
    from rich.console import Console

    from sdk.config import load_config
    from sdk.run.pipeline import Pipeline

    overrides = {k: yaml.safe_load(v) for k, _, v in (s.partition("=") for s in sets)}
    overrides["run_dir"] = str(run_dir)
    return Pipeline(load_config(config, overrides), console=Console(stderr=True), progress=False)


@contextlib.contextmanager
def timed(stages: dict, name: str) -> Iterator[None]:
    """Record the block's wall and process CPU seconds as ``stages[name]``."""
    wall, cpu = time.time(), time.process_time()
    try:
        yield
    finally:
        stages[name] = {"wall_s": round(time.time() - wall, 1), "cpu_s": round(time.process_time() - cpu, 1)}
        print(f"{name}: {stages[name]['wall_s']} s wall, {stages[name]['cpu_s']} s CPU", file=sys.stderr, flush=True)


def eval_rows(pipe, label: str, adapter: Path | None, limit: int | None) -> list:
    """Greedy tool-rollout eval rows of ``adapter`` (None: base) on the held-out tasks (first ``limit`` by id)."""
    from sdk.run.spec import SPECS, Stage
    from sdk.run.stage_eval import eval_tasks, tool_rows
    from sdk.run.stage_rl import toolbox_maker

    ctx = pipe.context(SPECS[Stage.EVAL])
    tasks = [t for t in eval_tasks(ctx) if t.split.value == "heldout"][:limit]
    return tool_rows(ctx, tasks, label, adapter, toolbox_maker(ctx.cfg))


def run(args) -> dict:
    """The whole bench (see the module docstring); returns the result record (also in ``WORK/result.json``)."""
    from sdk.eval.records import save_rows

    start, load0 = time.time(), os.getloadavg()
    work = Path(args.work)
    shutil.rmtree(work / "run", ignore_errors=True)
    pipe = pipeline(args.config, work / "run", [*DEFAULT_SETS, *(args.set or [])])
    stages: dict[str, dict] = {}
    try:
        with timed(stages, "tasks"):
            pipe.run(["tasks"])
        base = base_rows(pipe, work, args, stages)
        with timed(stages, "train (SFT)"):
            pipe.run(["sft"])
        sft = None
        if (pipe.layout.adapter("sft") / "adapter_config.json").is_file():  # the SFT-only checkpoint, evaluated too
            with timed(stages, "SFT eval"):
                sft = eval_rows(pipe, "sft", pipe.layout.adapter("sft"), args.limit)
            save_rows(work / "sft.jsonl", sft)
        if args.no_rl:  # tuned is the SFT adapter
            tuned, sft, training = sft, None, {"max_steps": 0, "steps": 0, "stopped_by_budget": False,
                                               "stopped_at": None, "train_deadline_s": None, "rl": "not run (--no-rl)"}
        else:
            tuned, training = grpo_and_eval(pipe, work, args, stages, start)
    finally:
        pipe.close()
    result = summarise(base, tuned, stages, training, sft=sft)
    result.update(budget_min=args.budget_min, wall_s=round(time.time() - start, 1), load_start=load0,
                  load_end=os.getloadavg(), sets=[*DEFAULT_SETS, *(args.set or [])])
    (work / "result.json").write_text(json.dumps(result, indent=2, default=str))
    return result


def base_rows(pipe, work: Path, args, stages: dict) -> list:
    """The base model's eval rows: evaluated (timed as ``base eval``), or with ``--reuse-base`` read from
    ``WORK/base.jsonl`` when that file holds exactly this task set's held-out tasks (an earlier run's)."""
    from sdk.eval.records import load_rows, save_rows
    from sdk.run.spec import SPECS, Stage
    from sdk.run.stage_eval import eval_tasks

    path = work / "base.jsonl"
    if args.reuse_base and path.is_file():
        held = [t.id for t in eval_tasks(pipe.context(SPECS[Stage.EVAL])) if t.split.value == "heldout"][:args.limit]
        rows = load_rows(path)
        if sorted(r.task_id for r in rows) == sorted(held):
            stages["base eval"] = {"wall_s": "reused", "cpu_s": "reused"}
            return rows
    with timed(stages, "base eval"):
        rows = eval_rows(pipe, "base", None, args.limit)
    save_rows(path, rows)
    return rows


def grpo_and_eval(pipe, work: Path, args, stages: dict, start: float) -> tuple[list, dict]:
    """GRPO under the budget's deadline (see the module docstring), then the tuned eval: ``(rows, training)``."""
    from sdk.eval.records import save_rows

    base_s = stages["base eval"]["wall_s"]
    reserve = RESERVE_FACTOR * (base_s if isinstance(base_s, float) else 120.0) + RESERVE_S
    deadline = Deadline(start + args.budget_min * 60 - reserve)
    with timed(stages, "train (GRPO)"), grpo_callback(deadline):
        pipe.run(["rl"])
    with timed(stages, "tuned eval"):
        tuned = eval_rows(pipe, "tuned", pipe.layout.adapter("rl"), args.limit)
    save_rows(work / "tuned.jsonl", tuned)
    rl_stats = pipe.stats("rl")
    return tuned, {"max_steps": pipe.cfg.rl.max_steps, "steps": _steps(rl_stats), "stopped_by_budget":
                   deadline.stopped_at is not None, "stopped_at": deadline.stopped_at,
                   "train_deadline_s": round(deadline.deadline - start, 1), "zero_std": rl_stats.get("zero_std")}


def _steps(stats: dict) -> int | None:
    """GRPO steps trained, from the rl stage's stats (None when the marker does not say)."""
    for key in ("steps", "global_step"):
        if isinstance(stats.get(key), int):
            return stats[key]
        if isinstance(stats.get("extra", {}).get(key), int):
            return stats["extra"][key]
    return None


def summarise(base: Sequence, tuned: Sequence, stages: dict, training: dict, sft: Sequence | None = None) -> dict:
    """The result record of base and tuned eval rows (same tasks): per model the tool metrics and the
    pass count, and the paired difference of task success over the tasks both hold. With ``sft`` (the
    SFT-only adapter's rows) it is a third model, and ``deltas`` also holds sft − base and tuned − sft.

    Raises:
        sdk.eval.records.EvalError: the two row lists share no task.
    """
    from sdk.eval.metrics import paired_over_common
    from sdk.run.stage_eval import tool_summary

    evals = {"base": base, **({"sft": sft} if sft is not None else {}), "tuned": tuned}
    per = {label: {r.task_id: float(bool(r.passed and r.passed[0])) for r in rows} for label, rows in evals.items()}
    pairs = [("tuned", "base")] + ([("sft", "base"), ("tuned", "sft")] if sft is not None else [])
    deltas = {}
    for new, old in pairs:
        est = paired_over_common(per[old], per[new])
        if est is None:
            from sdk.eval.records import EvalError

            raise EvalError(f"{old} and {new} rows share no task", "evaluate every model on the same held-out tasks")
        deltas[f"{new} - {old}"] = {"value": est.value, "low": est.low, "high": est.high, "n": est.n}
    models = {label: {**tool_summary(rows), "passed": int(sum(per[label].values())), "tasks": len(per[label])}
              for label, rows in evals.items()}
    d = deltas["tuned - base"]
    return {"models": models, "delta": d, "deltas": deltas, "verdict": verdict(d["value"], d["low"]),
            "stages": stages, "training": training}


def verdict(value: float, low: float) -> str:
    """A plain sentence on tuned − base task success (fractions) and its interval's lower bound."""
    if low > 0:
        return "tuned is better: the paired 95 % interval is above 0"
    if value > 0:
        return "tuned is not proven better: higher, but the paired 95 % interval includes 0"
    if value == 0:
        return "tuned is no better than base: same task success"
    return "tuned is worse than base on task success"


def table(result: dict) -> str:
    """The printed report of a result record (markdown tables and a verdict line)."""
    models, d, tr = result["models"], result["delta"], result["training"]
    head = "| model | task success (pass@1) |" + "".join(f" {name} |" for _, name, _ in METRICS)
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for label, m in models.items():
        cells = "".join(f" {fmt.format(m[key])} |" for key, _, fmt in METRICS)
        lines.append(f"| {label} | {m['passed']}/{m['tasks']} ({m['task_success'] * 100:.1f} %) |{cells}")
    lines += ["", f"tuned − base task success: {d['value'] * 100:+.1f} pp (paired 95 % CI {d['low'] * 100:+.1f} … "
              f"{d['high'] * 100:+.1f}, {d['n']} tasks): {result['verdict']}"]
    for name, e in result.get("deltas", {}).items():
        if name != "tuned - base":
            lines.append(f"{name.replace('-', '−')} task success: {e['value'] * 100:+.1f} pp (paired 95 % CI "
                         f"{e['low'] * 100:+.1f} … {e['high'] * 100:+.1f})")
    lines.append("")
    steps = "?" if tr["steps"] is None else tr["steps"]
    if tr.get("rl"):
        lines.append(f"GRPO {tr['rl']}: tuned is the SFT adapter")
    elif tr["stopped_by_budget"]:
        lines.append(f"training stopped by the budget after step {tr['stopped_at']} of {tr['max_steps']} "
                     f"(training deadline {tr['train_deadline_s']} s into the bench)")
    else:
        lines.append(f"training finished its steps ({steps} of {tr['max_steps']}) within the budget")
    z = tr.get("zero_std") or {}
    if z.get("groups"):
        lines.append(f"GRPO groups whose rewards had no variance (no gradient): {z['zero_std_groups']} of {z['groups']}")
    if all(m["task_success"] == 0 for m in models.values()):
        lines.append("all-zero: neither model answered any held-out task right")
    lines += ["", "| stage | wall s | CPU s |", "|---|---|---|"]
    lines += [f"| {name} | {s['wall_s']} | {s['cpu_s']} |" for name, s in result["stages"].items()]
    if "wall_s" in result:
        load = f"{result['load_start'][0]:.2f} → {result['load_end'][0]:.2f}"
        lines += ["", f"total {result['wall_s']} s wall of a {result['budget_min']} min budget; load average {load}"]
    return "\n".join(lines)


def main() -> None:
    """Parse the command line, run the bench and print its tables."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=str(CONFIG))
    ap.add_argument("--work", default="/tmp/tool_agent_bench", help="folder for the run and the result")
    ap.add_argument("--budget-min", type=float, default=18.0, help="wall-time budget of the whole bench, minutes")
    ap.add_argument("--limit", type=int, default=None, help="evaluate the first N held-out tasks only")
    ap.add_argument("--no-rl", action="store_true", help="stop after SFT: tuned is the SFT adapter (no GRPO)")
    ap.add_argument("--reuse-base", action="store_true", help="reuse WORK/base.jsonl when it holds these held-out tasks")
    ap.add_argument("--set", action="append", help="KEY=VALUE config override (repeatable; after the defaults)")
    print(table(run(ap.parse_args())), flush=True)


if __name__ == "__main__":
    main()
