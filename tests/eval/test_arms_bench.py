"""bench/arms.py's table: pass counts per split and paired intervals against the base and another arm."""

from __future__ import annotations

import importlib.util
import json
from argparse import Namespace
from pathlib import Path

from sdk.eval.records import EvalRow, save_rows

ARMS = Path(__file__).resolve().parents[2] / "bench" / "arms.py"


def _arms():
    spec = importlib.util.spec_from_file_location("arms_bench", ARMS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rows(path: Path, split: str, passes: list[bool]) -> None:
    save_rows(path, [EvalRow(task_id=f"{split}{i}", domain="d", split=split, model="m", completions=("x",),
                             rewards=(1.0 if p else 0.0,), passed=(p,), statuses=("ok" if p else "failed",),
                             flags=((),)) for i, p in enumerate(passes)])


def test_table_counts_and_pairs_on_the_same_tasks(tmp_path, capsys):
    arms = _arms()
    _rows(tmp_path / "base_heldout.jsonl", "heldout", [False] * 10)
    _rows(tmp_path / "base_ood.jsonl", "ood", [True] * 3 + [False] * 7)
    for name, held, ood in (("a", [True] * 2 + [False] * 8, [True] * 1 + [False] * 9),
                            ("b", [True] * 2 + [False] * 8, [True] * 3 + [False] * 7)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "arm.json").write_text(json.dumps({"train_wall_s": 5, "load_start": [1.0, 0, 0],
                                                              "load_end": [2.0, 0, 0]}))
        _rows(tmp_path / name / "eval_tuned_heldout.jsonl", "heldout", held)
        _rows(tmp_path / name / "eval_tuned_ood.jsonl", "ood", ood)
    arms.table(Namespace(work=str(tmp_path), against="a/tuned"))
    lines = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]]
             for ln in capsys.readouterr().out.splitlines()[2:]}
    assert lines["base"][:3:2] == ["0/10", "3/10"]
    a, b = lines["a/tuned"], lines["b/tuned"]
    assert a[0] == "2/10" and a[1].startswith("+20.0") and a[2] == "1/10" and a[3].startswith("-20.0")
    assert b[2] == "3/10" and b[3].startswith("+0.0"), "same OOD tasks passed as the base: no change"
    assert b[4].startswith("+0.0") and b[5].startswith("+20.0"), "b against a: held-out equal, OOD +2 tasks"
    assert a[6] == "5" and a[7] == "1.0→2.0"


def test_table_adds_pass_at_1_after_one_retry(tmp_path, capsys):
    """A ``retry_<label>_<split>.jsonl`` beside an arm's rows (bench/arms.py --retry) adds a ``+retry``
    line that counts a task passed on its first attempt or its retry, compared with the base's first attempts."""
    arms = _arms()
    _rows(tmp_path / "base_heldout.jsonl", "heldout", [False] * 10)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "arm.json").write_text(json.dumps({"train_wall_s": 5, "load_start": [1.0], "load_end": [2.0]}))
    _rows(tmp_path / "a" / "eval_tuned_heldout.jsonl", "heldout", [True] * 2 + [False] * 8)
    rows = [EvalRow(task_id=f"heldout{i}", domain="d", split="heldout", model="m", completions=("x",),
                    rewards=(0.0,), passed=(i < 2,), statuses=("failed",), flags=((),), retry=(i < 5,))
            for i in range(10)]
    save_rows(tmp_path / "a" / "retry_tuned_heldout.jsonl", rows)
    save_rows(tmp_path / "retry_base_heldout.jsonl", [r.model_copy(update={"passed": (False,), "retry": (i == 0,)})
                                                      for i, r in enumerate(rows)])
    arms.table(Namespace(work=str(tmp_path), against=None))
    lines = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]]
             for ln in capsys.readouterr().out.splitlines()[2:]}
    assert lines["a/tuned"][0] == "2/10" and lines["a/tuned +retry"][0] == "5/10"
    assert lines["a/tuned +retry"][1].startswith("+50.0") and lines["base +retry"][0] == "1/10"


def test_import_run_splits_eval_rows_per_split_and_keeps_existing_base(tmp_path):
    """--import-run: a finished run folder becomes an arm (stages copied, rows split per split);
    base rows already under WORK are never replaced."""
    arms = _arms()
    run, work = tmp_path / "run", tmp_path / "work"
    for stage in ("tasks", "sft"):
        (run / stage).mkdir(parents=True)
        (run / stage / "x.txt").write_text(stage)
    (run / "state").mkdir()
    (run / "state" / "tasks.json").write_text("{}")
    (run / "state" / "sft.json").write_text(json.dumps({"stats": {"wall_s": 12.4}}))
    (run / "eval").mkdir()
    _rows(run / "eval" / "tuned.jsonl", "heldout", [True, False])
    _rows(run / "eval" / "base.jsonl", "ood", [True])
    work.mkdir()
    _rows(work / "base_ood.jsonl", "ood", [False, False])
    config = str(Path(__file__).resolve().parents[2] / "examples" / "quickstart" / "config.yaml")
    arms.import_run(Namespace(import_run=str(run), work=str(work), arm="demo", set=None, config=config))
    assert (work / "_tasks" / "tasks" / "x.txt").is_file() and (work / "demo" / "sft" / "x.txt").is_file()
    assert arms.per_task([work / "demo" / "eval_tuned_heldout.jsonl"]) == {"heldout": {"heldout0": 1.0, "heldout1": 0.0}}
    assert len((work / "base_ood.jsonl").read_text().splitlines()) == 2, "existing base rows kept"
    assert json.loads((work / "demo" / "arm.json").read_text())["train_wall_s"] == 12


def test_base_only_scores_missing_splits_in_order_and_builds_no_arm(tmp_path, monkeypatch):
    """--base: the task set is built (run(["tasks"]) only) and the base model scored on the splits it
    has no rows for, in the order given; no arm folder, no training stage."""
    arms = _arms()
    calls = []

    class Pipe:
        def run(self, stages):
            calls.append(("run", tuple(stages)))

        def close(self):
            calls.append(("close",))

    monkeypatch.setattr(arms, "pipeline", lambda config, run_dir, sets: Pipe())
    monkeypatch.setattr(arms, "score", lambda pipe, label, adapter, split, out: calls.append((label, adapter, split)))
    _rows(tmp_path / "base_heldout.jsonl", "heldout", [False])
    arms.score_base(Namespace(config="c.yaml", work=str(tmp_path), splits=["ood", "heldout", "train"]))
    assert calls == [("run", ("tasks",)), ("base", None, "ood"), ("base", None, "train"), ("close",)]
    assert not [p for p in tmp_path.iterdir() if p.is_dir()]


def test_tasks_set_is_one_variant_per_work_folder(tmp_path):
    """``--tasks-set`` overrides build the work folder's one task set: recorded on first use, repeated
    by every later call, and a different variant (or an imported plain run) is refused there."""
    import pytest

    arms = _arms()
    ctx = ["sources.0.options.repo_context.enabled=true"]
    assert arms.task_sets(Namespace(work=str(tmp_path), tasks_set=ctx)) == ctx
    assert json.loads((tmp_path / "tasks_set.json").read_text()) == ctx
    assert arms.task_sets(Namespace(work=str(tmp_path), tasks_set=list(ctx))) == ctx
    with pytest.raises(SystemExit, match="another --work folder"):
        arms.task_sets(Namespace(work=str(tmp_path), tasks_set=None))
    assert arms.task_sets(Namespace(work=str(tmp_path / "plain"), tasks_set=None)) == []


def test_compare_pairs_two_task_set_variants_by_function_not_id(tmp_path):
    """bench/arms_compare.py: with repository context on, every prompt (and so every task id) differs
    from the plain folder's; rows pair on domain + locator, so B − A counts the same functions."""
    from sdk.tasks.records import Message, Source, Split, Task, UnitTestVerifier
    from sdk.tasks.taskset import TaskSet

    spec = importlib.util.spec_from_file_location("arms_compare", ARMS.with_name("arms_compare.py"))
    cmp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cmp)
    passed = {"plain": ([False] * 4, [True, False, False, False]), "ctx": ([False] * 4, [True, True, True, False])}
    for variant, (base, tuned) in passed.items():
        tasks = [Task(domain="acme", prompt=(Message(role="user", content=f"{variant} prompt of f{i}"),),
                      verifier=UnitTestVerifier(tests={"t.py": "def test_x():\n    pass\n"}), split=Split.HELDOUT,
                      source=Source(connector="pytest", locator=f"pkg/m.py::f{i}")) for i in range(4)]
        TaskSet(tasks[::-1] if variant == "ctx" else tasks).save(tmp_path / variant / "_tasks" / "tasks" / "tasks.jsonl")
        for path, flags in ((tmp_path / variant / "base_heldout.jsonl", base),
                            (tmp_path / variant / "arm" / "eval_tuned_heldout.jsonl", tuned)):
            save_rows(path, [EvalRow(task_id=t.id, domain="acme", split="heldout", model="m", completions=("x",),
                                     rewards=(float(p),), passed=(p,), statuses=("ok",), flags=((),))
                             for t, p in zip(tasks, flags)])
    lines = cmp.compare(tmp_path / "plain" / "arm", tmp_path / "ctx" / "arm", ["sft", "tuned"], ["heldout", "ood"])
    rows = {tuple(c.strip() for c in ln.split("|")[1:3]): [c.strip() for c in ln.split("|")[3:-1]] for ln in lines[2:]}
    assert set(rows) == {("heldout", "base"), ("heldout", "tuned"), ("ood", "base")}, "no sft rows, no OOD rows"
    assert rows[("heldout", "tuned")][:2] == ["1/4", "3/4"]
    assert rows[("heldout", "tuned")][4].startswith("+50.0") and rows[("heldout", "tuned")][4].endswith("n=4)")
    assert rows[("heldout", "base")][4].startswith("+0.0")


def test_table_shows_the_validation_split_first_named_by_its_file(tmp_path, capsys):
    """Validation rows are train-split tasks (``row.split`` says train): the table reads the split from
    the file name, so ``--splits validation`` rows get their own columns, before held-out and OOD."""
    arms = _arms()
    _rows(tmp_path / "base_validation.jsonl", "train", [False] * 4)
    _rows(tmp_path / "base_heldout.jsonl", "heldout", [False] * 10)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "arm.json").write_text(json.dumps({"train_wall_s": 5, "load_start": [1.0], "load_end": [2.0]}))
    _rows(tmp_path / "a" / "eval_sft_validation.jsonl", "train", [True] * 2 + [False] * 2)
    _rows(tmp_path / "a" / "eval_sft_heldout.jsonl", "heldout", [True] + [False] * 9)
    arms.table(Namespace(work=str(tmp_path), against="a/sft"))
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| arm/adapter | validation | Δ vs base | held-out |") and "Δ validation vs a/sft" in out[0]
    lines = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]] for ln in out[2:]}
    assert lines["base"][:5:2] == ["0/4", "0/10", "0/0"]
    a = lines["a/sft"]
    assert a[0] == "2/4" and a[1].startswith("+50.0") and a[2] == "1/10" and a[6].startswith("+0.0")
    assert len(a) == len(lines["base"]) == out[0].count("|") - 2


def test_sft_only_arm_trains_sft_alone_and_scores_its_adapter_once(tmp_path, monkeypatch):
    """``--stages sft``: the arm's pipeline runs the sft stage only; its ``tuned`` adapter is its ``sft``
    adapter, so each split is scored once, as ``sft``."""
    arms = _arms()
    calls, adapter = [], tmp_path / "sft_adapter"

    class Pipe:
        def run(self, stages):
            calls.append(("run", tuple(stages)))
            (tmp_path / "_tasks" / "tasks").mkdir(parents=True, exist_ok=True)
            (tmp_path / "_tasks" / "state").mkdir(exist_ok=True)
            (tmp_path / "_tasks" / "state" / "tasks.json").write_text("{}")

        def stats(self, stage):
            return {"wall_s": 1}

        def close(self):
            pass

    monkeypatch.setattr(arms, "pipeline", lambda config, run_dir, sets: Pipe())
    monkeypatch.setattr(arms, "adapters", lambda pipe: {"sft": adapter, "tuned": adapter})
    monkeypatch.setattr(arms, "score", lambda pipe, label, ad, split, out: calls.append((label, ad, split)))
    arms.run_arm(Namespace(config="c.yaml", work=str(tmp_path), arm="e2", set=["sft.epochs=2"], tasks_set=None,
                           from_sft=None, stages=["sft"], eval=["sft", "tuned"], splits=["validation", "heldout"],
                           base=False))
    assert calls == [("run", ("tasks",)), ("run", ("sft",)), ("sft", adapter, "validation"),
                     ("sft", adapter, "heldout")]
    record = json.loads((tmp_path / "e2" / "arm.json").read_text())
    assert record["stages_run"] == ["sft"]
    assert sorted(record["eval_cpu_s"]) == ["sft_heldout", "sft_validation"]  # scoring CPU per adapter and split
    assert record["score_cpu_s"] == sum(record["eval_cpu_s"].values())


def test_progress_lines_reach_stderr(capsys):
    import logging

    logger = logging.getLogger("tuneloop.progress")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    logger.handlers.clear()
    try:
        _arms().progress_lines()
        logging.getLogger("tuneloop.progress").info("eval base: 32/40 tasks, 1 passed (900 s, ~225 s left)")
        err = capsys.readouterr().err
    finally:
        logger.handlers[:], logger.level, logger.propagate = saved[0], saved[1], saved[2]
    assert "eval base: 32/40 tasks, 1 passed" in err


def test_rescoring_a_stopped_arm_takes_training_cost_from_its_stages(tmp_path, monkeypatch):
    """An arm whose run was stopped after SFT but before ``arm.json`` was written: a later call that only
    scores keeps the SFT stage's own wall and CPU seconds, not the few seconds of the scoring call."""
    arms = _arms()
    (tmp_path / "e2" / "state").mkdir(parents=True)
    (tmp_path / "e2" / "state" / "sft.json").write_text("{}")

    class Pipe:
        def run(self, stages):
            (tmp_path / "_tasks" / "tasks").mkdir(parents=True, exist_ok=True)

        def stats(self, stage):
            return {"wall_s": 3339.9, "cpu_s": 1208.6} if stage == "sft" else {}

        def close(self):
            pass

    monkeypatch.setattr(arms, "pipeline", lambda config, run_dir, sets: Pipe())
    monkeypatch.setattr(arms, "copy_stage", lambda *a: None)
    monkeypatch.setattr(arms, "adapters", lambda pipe: {})
    arms.run_arm(Namespace(config="c.yaml", work=str(tmp_path), arm="e2", set=None, tasks_set=None,
                           from_sft=None, stages=["sft"], eval=["sft"], splits=["heldout"], base=False))
    record = json.loads((tmp_path / "e2" / "arm.json").read_text())
    assert (record["train_wall_s"], record["train_cpu_s"]) == (3340, 1209)
    assert "wall_s" in record and "rescore_wall_s" not in record  # no earlier record: this call's wall is its own
