"""Training arms of one config, each scored on the same held-out and OOD tasks with paired intervals.

One task set is built once (``WORK/_tasks``) and copied into every arm's run folder, so every arm
trains on the same train split and is scored on the same tasks; the base model is scored once
(``WORK/base_<split>.jsonl``). An arm is the config plus ``--set`` overrides, run through the pipeline's own
``sft`` and ``rl`` stages into ``WORK/ARM``; ``--from-sft OTHER`` reuses another arm's finished SFT
stage (for arms that differ only in RL); ``--stages sft`` trains SFT alone (to compare SFT recipes; every
later call on that arm repeats it). Each adapter named by ``--eval`` (each adapter once: an SFT-only arm's
``tuned`` is its ``sft``) is scored greedy, the way
the eval stage does it (same generator, reward and sandbox), into ``WORK/ARM/eval_<label>_<split>.jsonl`` (``--splits``, OOD first by default);
the arm's wall time, CPU time and load average go to ``WORK/ARM/arm.json``.

    nice -n 10 .venv/bin/python bench/arms.py examples/quickstart/config.yaml --work /tmp/arms --arm defaults
    nice -n 10 .venv/bin/python bench/arms.py examples/quickstart/config.yaml --work /tmp/arms --arm replay \\
        --from-sft defaults --set rl.expert.replay_self_distill=true
    .venv/bin/python bench/arms.py examples/quickstart/config.yaml --work /tmp/arms --table --against defaults/tuned

``--import-run RUN_DIR --arm NAME`` makes a finished ``tuneloop run`` (a ``make demo`` run folder) an
arm: its task set (also the shared one when ``WORK`` has none), SFT and RL stages and its eval rows
if any (``eval/<label>.jsonl``, the eval stage's own scoring), split per split; its base rows become
``WORK/base_<split>.jsonl`` when none exist. ``--retry ARM/LABEL ...`` (``base``: the base rows) gives
scored rows one retry with execution feedback (:func:`sdk.run.stage_eval.retry_rows`, the eval
stage's ``eval.retry_with_feedback`` path, first attempts reused) into ``retry_<label>_<split>.jsonl``
beside them; the table then adds a ``+retry`` line: pass@1 after one retry. ``--base`` scores only the
base model on ``--splits`` (no arm, no training), e.g. to retry the base model alone:

    nice -n 10 .venv/bin/python bench/arms.py examples/quickstart/config.yaml --work /tmp/arms --base --splits ood
    nice -n 10 .venv/bin/python bench/arms.py examples/quickstart/config.yaml --work /tmp/arms --retry base --splits ood

    .venv/bin/python bench/arms.py examples/quickstart/config.yaml --work /tmp/arms --arm demo \
        --import-run examples/quickstart/runs/quickstart
    nice -n 10 .venv/bin/python bench/arms.py examples/quickstart/config.yaml --work /tmp/arms \
        --retry base demo/tuned

``--tasks-set KEY=VALUE`` (repeatable) builds ``WORK``'s one task set with an override, e.g. repository
context in the prompts (issue 15's lever for the records' fields that held-out prompts do not show); every
call on that ``WORK`` must repeat it, so a task-set variant gets its own ``WORK`` with its own base rows:

    nice -n 10 .venv/bin/python bench/arms.py examples/quickstart/config.yaml --work /tmp/arms_ctx --arm ctx \
        --tasks-set 'sources.0.options.repo_context={enabled: true, token_budget: 150, examples: false}'

``--table`` prints, per arm and adapter, held-out and OOD pass@1 and the paired 95 % bootstrap
interval of the difference against the base model and against ``--against ARM/LABEL``. Choices
between arms made from this table use held-out tasks, so for a shipped default prefer arms that win
on OOD (never trained on) and confirm on the validation split; the bench only measures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]

LABELS = ("sft", "rl_midway", "rl", "tuned")  # rl: the RL end under its own label (eval.select: validation)


def pipeline(config: str, run_dir: Path, sets: list[str]):
    """A :class:`sdk.run.pipeline.Pipeline` of ``config`` with ``--set`` overrides, into ``run_dir``."""
    import yaml
    from rich.console import Console

    from sdk.config import load_config
    from sdk.run.pipeline import Pipeline

    overrides = {k: yaml.safe_load(v) for k, _, v in (s.partition("=") for s in sets)}
    overrides["run_dir"] = str(run_dir)
    return Pipeline(load_config(config, overrides), console=Console(stderr=True), progress=False)


def task_sets(args) -> list[str]:
    """The ``--tasks-set`` overrides of ``WORK``'s one task set (e.g. repository context in the prompts),
    recorded in ``WORK/tasks_set.json`` on first use; every later call on ``WORK`` must give the same.

    Raises:
        SystemExit: ``--tasks-set`` differs from the one ``WORK``'s task set was built with.
    """
    given, record = list(getattr(args, "tasks_set", None) or []), Path(args.work) / "tasks_set.json"
    if record.is_file() and json.loads(record.read_text()) != given:
        raise SystemExit(f"{args.work} holds a task set built with --tasks-set {json.loads(record.read_text())}, "
                         f"not {given}: use another --work folder per task-set variant")
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(given))
    return given


def copy_stage(src: Path, dst: Path, stage: str, folder: str) -> None:
    """Copy ``folder`` and the stage marker of ``stage`` from run folder ``src`` into ``dst``."""
    if (dst / folder).exists():
        shutil.rmtree(dst / folder)
    shutil.copytree(src / folder, dst / folder, ignore=shutil.ignore_patterns("checkpoints"))
    (dst / "state").mkdir(parents=True, exist_ok=True)
    shutil.copy2(src / "state" / f"{stage}.json", dst / "state" / f"{stage}.json")


def split_tasks(ctx, split: str) -> list:
    """The tasks of one eval split; ``validation``: the validation split carved from train
    (:func:`sdk.run.stage_sft.fit_and_validation`), the split an arm may be chosen on."""
    from sdk.run.stage_eval import eval_tasks
    from sdk.run.stage_sft import fit_and_validation

    if split == "validation":
        return fit_and_validation(ctx)[1]
    return [t for t in eval_tasks(ctx) if t.split.value == split]


def score(pipe, label: str, adapter: Path | None, split: str, out: Path) -> list:
    """Greedy eval rows of ``adapter`` (None: the base model) on one eval split, saved to ``out``."""
    from sdk.eval.records import save_rows
    from sdk.run.spec import SPECS, Stage
    from sdk.run.stage_eval import text_rows

    ctx = pipe.context(SPECS[Stage.EVAL])
    rows = text_rows(ctx, split_tasks(ctx, split), label, adapter)
    save_rows(out, rows)
    return rows


def adapters(pipe) -> dict[str, Path]:
    """The arm's adapters that exist: ``sft``, ``rl_midway``, ``rl`` (the RL end) and ``tuned`` (the
    shipped one: the validation choice, else the newest)."""
    layout = pipe.layout
    found = {"sft": layout.adapter("sft"), "rl_midway": layout.midway_adapter("rl"), "rl": layout.adapter("rl"),
             "tuned": pipe.adapter_for_eval()}
    return {k: v for k, v in found.items() if v is not None and (v / "adapter_config.json").is_file()}


def _distinct(found: dict[str, Path], wanted: list[str]) -> list[str]:
    """The labels of ``wanted`` with an adapter in ``found``, each adapter once (an SFT-only arm's
    ``tuned`` is its ``sft`` adapter: scored as ``sft`` only)."""
    out: dict[Path, str] = {}
    for label in (x for x in LABELS if x in wanted and x in found):
        out.setdefault(found[label], label)
    return list(out.values())


def run_arm(args) -> None:
    """Build the shared task set if needed, train the arm, score its adapters (and the base once)."""
    work, load0, wall0, cpu0 = Path(args.work), os.getloadavg(), time.time(), time.process_time()
    tasks_pipe = pipeline(args.config, work / "_tasks", task_sets(args))
    tasks_pipe.run(["tasks"])
    arm = work / args.arm
    arm.mkdir(parents=True, exist_ok=True)
    copy_stage(work / "_tasks", arm, "tasks", "tasks")
    if args.from_sft:
        copy_stage(work / args.from_sft, arm, "sft", "sft")
    pipe = pipeline(args.config, arm, task_sets(args) + (args.set or []))
    stages = list(getattr(args, "stages", None) or ["sft", "rl"])
    done_before = all((arm / "state" / f"{s}.json").is_file() for s in stages)
    trained = done_before and (arm / "arm.json").is_file()
    pipe.run(stages)
    record = {"arm": args.arm, "set": args.set or [], "tasks_set": task_sets(args), "from_sft": args.from_sft,
              "stages_run": stages, "train_wall_s": round(time.time() - wall0),
              "train_cpu_s": round(time.process_time() - cpu0), "load_start": load0, "load_end": os.getloadavg(),
              "stages": {s: pipe.stats(s) for s in stages}}
    if trained:  # a later call that only scores more splits keeps the training run's record
        record = json.loads((arm / "arm.json").read_text())
    elif done_before:  # stages finished by a run stopped before arm.json: their own stats hold the cost, not this clock
        record.update(train_wall_s=sum(round(record["stages"][s].get("wall_s", 0)) for s in stages),
                      train_cpu_s=sum(round(record["stages"][s].get("cpu_s", 0)) for s in stages))
    (arm / "arm.json").write_text(json.dumps(record, indent=2, default=str))
    scored: dict[str, int] = {}
    try:
        found = adapters(pipe)
        for split in args.splits:  # every adapter on the first split before the next split
            if args.base and not (work / f"base_{split}.jsonl").is_file():
                score(pipe, "base", None, split, work / f"base_{split}.jsonl")
            for label in _distinct(found, args.eval):
                cpu_split = time.process_time()
                score(pipe, label, found[label], split, arm / f"eval_{label}_{split}.jsonl")
                scored[f"{label}_{split}"] = round(time.process_time() - cpu_split)
                print(f"scored {args.arm}/{label} on {split} at {time.time() - wall0:.0f} s", flush=True)
    finally:
        pipe.close()
    record.update({"rescore_wall_s" if trained else "wall_s": round(time.time() - wall0)}, load_end=os.getloadavg())
    record.setdefault("eval_cpu_s", {}).update(scored)  # this process's CPU per adapter and split (sandbox not counted)
    record["score_cpu_s"] = sum(record["eval_cpu_s"].values())
    (arm / "arm.json").write_text(json.dumps(record, indent=2, default=str))
    print(json.dumps({k: record.get(k) for k in ("arm", "train_wall_s", "wall_s", "rescore_wall_s", "load_start",
                                                 "load_end")}))


def import_run(args) -> None:
    """Make the finished run folder ``--import-run`` the arm ``--arm`` (see the module docstring).

    Raises:
        SystemExit: the run folder has no finished tasks stage.
    """
    from sdk.eval.records import load_rows, save_rows

    run, work = Path(args.import_run), Path(args.work)
    arm = work / args.arm
    task_sets(args)  # an imported run has the plain config's task set: refused in a --tasks-set folder
    if not (run / "state" / "tasks.json").is_file():
        raise SystemExit(f"{run}: no finished tasks stage: not a run folder")
    if not (work / "_tasks" / "state" / "tasks.json").is_file():
        copy_stage(run, work / "_tasks", "tasks", "tasks")
    for stage in ("tasks", "sft", "rl"):
        if (run / "state" / f"{stage}.json").is_file():
            copy_stage(run, arm, stage, stage)
    for label in ("base", *LABELS):
        if not (run / "eval" / f"{label}.jsonl").is_file():
            continue
        rows = load_rows(run / "eval" / f"{label}.jsonl")
        for split in sorted({r.split.value for r in rows}):
            out = work / f"base_{split}.jsonl" if label == "base" else arm / f"eval_{label}_{split}.jsonl"
            if label != "base" or not out.is_file():
                save_rows(out, [r for r in rows if r.split.value == split])
    pipe = pipeline(args.config, arm, args.set or [])
    record = {"arm": args.arm, "set": args.set or [], "imported_from": str(run.resolve()),
              "train_wall_s": sum(round(pipe.stats(s).get("wall_s", 0)) for s in ("sft", "rl")),
              "load_start": [0.0], "load_end": [0.0], "stages": {s: pipe.stats(s) for s in ("tasks", "sft", "rl", "eval")}}
    (arm / "arm.json").write_text(json.dumps(record, indent=2, default=str))
    print(f"imported {run} as {arm}")


def score_base(args) -> None:
    """Build the shared task set if needed and score the base model on ``--splits`` (no arm, no
    training): ``WORK/base_<split>.jsonl``, kept when already there."""
    work, wall0 = Path(args.work), time.time()
    pipe = pipeline(args.config, work / "_tasks", task_sets(args))
    try:
        pipe.run(["tasks"])
        for split in args.splits:
            if not (work / f"base_{split}.jsonl").is_file():
                score(pipe, "base", None, split, work / f"base_{split}.jsonl")
                print(f"scored base on {split} at {time.time() - wall0:.0f} s, {time.process_time():.0f} CPU-s, "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        pipe.close()


def retry(args) -> None:
    """One retry with execution feedback for each ``--retry ARM/LABEL`` on ``--splits``, saved as
    ``retry_<label>_<split>.jsonl`` beside the first attempts (already there: skipped)."""
    from sdk.eval.records import load_rows, save_rows
    from sdk.run.spec import SPECS, Stage
    from sdk.run.stage_eval import retry_rows

    work, wall0 = Path(args.work), time.time()
    for spec in args.retry:
        arm, _, label = spec.rpartition("/")
        folder = work / arm if arm else work
        pipe = pipeline(args.config, work / arm if arm else work / "_tasks", task_sets(args) + (args.set or []))
        try:
            ctx = pipe.context(SPECS[Stage.EVAL])
            adapter = None if label == "base" else adapters(pipe)[label]
            for split in args.splits:
                first = folder / (f"base_{split}.jsonl" if label == "base" else f"eval_{label}_{split}.jsonl")
                out = folder / f"retry_{label}_{split}.jsonl"
                if out.is_file() or not first.is_file():
                    continue
                tasks = split_tasks(ctx, split)
                save_rows(out, retry_rows(ctx, tasks, load_rows(first), adapter))
                print(f"retried {spec} on {split} at {time.time() - wall0:.0f} s, load {os.getloadavg()[0]:.1f}",
                      flush=True)
        finally:
            pipe.close()


def per_task(paths: list[Path], retried: bool = False) -> dict[str, dict[str, float]]:
    """``{split: {task_id: 1.0 if its first sample passed else 0.0}}`` from eval rows files named
    ``<prefix>_<split>.jsonl`` (``retried``: passed on its first attempt or its one retry)."""
    from sdk.eval.records import load_rows

    out: dict[str, dict[str, float]] = {}
    for path in paths:  # the split named by the file (``..._validation.jsonl``), since validation rows say "train"
        for row in load_rows(path):
            first = row.retry if retried else row.passed
            out.setdefault(path.stem.rpartition("_")[2], {})[row.task_id] = float(bool(first and first[0]))
    return out


def delta(a: dict[str, float], b: dict[str, float]) -> str:
    """``b - a`` in pp over their common tasks, with the paired 95 % bootstrap interval."""
    from sdk.eval.metrics import paired_over_common

    est = paired_over_common(a, b)
    return "–" if est is None else f"{est.value * 100:+.1f} ({est.low * 100:+.1f} … {est.high * 100:+.1f})"


def table(args) -> None:
    """Print the markdown table of every scored arm adapter under ``--work`` (``+retry`` lines: pass@1
    after one retry with execution feedback, compared with the same references as first attempts);
    validation columns first when the base model was scored on the validation split."""
    work = Path(args.work)
    base = per_task(sorted(work.glob("base_*.jsonl")))
    against = None
    if args.against:
        arm_name, label = args.against.split("/")
        against = per_task(sorted((work / arm_name).glob(f"eval_{label}_*.jsonl")))
    splits = (["validation"] if "validation" in base else []) + ["heldout", "ood"]
    head = "| arm/adapter |" + "".join(f" {_NAMES[s]} | Δ vs base |" for s in splits)
    head += "".join(f" Δ {_NAMES[s]} vs {args.against} |" for s in splits) if against else ""
    print(head + " train wall s | load |")
    print("|" + "---|" * (head.count("|") + 1))
    print("| base |" + "".join(f" {_frac(base, s)} | |" for s in splits) + (" |" * len(splits) if against else "")
          + " | |")
    if sorted(work.glob("retry_base_*.jsonl")):
        print(_line("base +retry", per_task(sorted(work.glob("retry_base_*.jsonl")), True), base, against, splits)
              + " | |")
    for arm in sorted(p for p in work.iterdir() if (p / "arm.json").is_file()):
        rec = json.loads((arm / "arm.json").read_text())
        load = f"{rec['load_start'][0]:.1f}→{rec['load_end'][0]:.1f}"
        for label in LABELS:
            for prefix, retried in (("eval", False), ("retry", True)):
                paths = sorted(arm.glob(f"{prefix}_{label}_*.jsonl"))
                if paths:
                    name = f"{arm.name}/{label}" + (" +retry" if retried else "")
                    print(_line(name, per_task(paths, retried), base, against, splits)
                          + f" {rec['train_wall_s']} | {load} |")


_NAMES = {"validation": "validation", "heldout": "held-out", "ood": "OOD"}


def _line(name: str, rows: dict, base: dict, against: dict | None, splits: list[str]) -> str:
    """One table line: pass@1 per split and the paired differences against the base and ``against``."""
    line = "".join(f" {_frac(rows, s)} | {delta(base.get(s, {}), rows.get(s, {}))} |" for s in splits)
    if against is not None:
        line += "".join(f" {delta(against.get(s, {}), rows.get(s, {}))} |" for s in splits)
    return f"| {name} |" + line


def _frac(rows: dict[str, dict[str, float]], split: str) -> str:
    part = rows.get(split, {})
    return f"{int(sum(part.values()))}/{len(part)}"


def progress_lines() -> None:
    """Send the pipeline's plain progress lines (SFT and RL steps, eval batches: the ``tuneloop.progress``
    logger) to stderr as ``tuneloop`` does when stderr is no terminal; without this a scoring pass of
    half an hour on a busy machine printed nothing until it ended (toolz, issue 15). The bench's
    pipelines never draw live bars, so the lines go to stderr whether or not it is a terminal."""
    import logging

    logger = logging.getLogger("tuneloop.progress")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def main() -> None:
    """Parse the command line and run one arm or print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config")
    ap.add_argument("--work", required=True, help="folder holding the shared task set, the base rows and the arms")
    ap.add_argument("--arm", help="the arm's name (its run folder under --work)")
    ap.add_argument("--set", action="append", help="a config override KEY=VALUE (repeatable), as tuneloop --set")
    ap.add_argument("--tasks-set", action="append", help="an override of the shared task set, e.g. "
                    "sources.0.options.repo_context.enabled=true: one variant per --work folder")
    ap.add_argument("--from-sft", help="reuse this arm's finished SFT stage (the arm must not change sft.*)")
    ap.add_argument("--stages", nargs="+", default=["sft", "rl"], choices=["sft", "rl"],
                    help="training stages of the arm: sft alone compares SFT recipes (no RL)")
    ap.add_argument("--eval", nargs="+", default=["sft", "tuned"], choices=LABELS, help="adapters to score")
    ap.add_argument("--splits", nargs="+", default=["ood", "heldout"], help="eval splits, scored in this order "
                    "(validation: the split carved from train, the one to choose an arm on)")
    ap.add_argument("--no-base", dest="base", action="store_false", help="leave the base model's rows to another arm")
    ap.add_argument("--table", action="store_true", help="print the table of the arms scored so far")
    ap.add_argument("--against", help="ARM/LABEL every row is also compared with, e.g. defaults/tuned")
    ap.add_argument("--import-run", help="make this finished run folder the arm --arm (no training, no scoring)")
    ap.add_argument("--base", dest="base_only", action="store_true", help="only score the base model on --splits")
    ap.add_argument("--retry", nargs="+", help="ARM/LABEL (or base): give these scored rows one retry with feedback")
    args = ap.parse_args()
    progress_lines()
    if args.table:
        table(args)
    elif args.retry:
        retry(args)
    elif args.base_only:
        score_base(args)
    elif args.arm and args.import_run:
        import_run(args)
    elif args.arm:
        run_arm(args)
    else:
        ap.error("give --arm NAME, --retry ARM/LABEL or --table")


if __name__ == "__main__":
    main()
