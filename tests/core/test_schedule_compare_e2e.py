"""The schedule comparison (``rl.compare``) through the pipeline on the tiny random model.

The quickstart cut to a few tasks, two GRPO steps per arm, probes every step. A random model solves
nothing, so the difficulty measurement is faked with mixed pass rates where the filter must keep
tasks (everything else about the filter runs for real); a later run uses the real measurement,
where every task is never solved and the arm is recorded as skipped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sdk.config import load_config
from sdk.errors import ConfigError
from sdk.run.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart" / "config.yaml"
_SOURCES = [s["type"] + ":" + s.get("options", {}).get("path", "")
            for s in yaml.safe_load(QUICKSTART.read_text())["sources"]]
FB = next(i for i, s in enumerate(_SOURCES) if s.startswith("sql_feedback"))  # the feedback table's source index
POOL = next(i for i, s in enumerate(_SOURCES) if s == "jsonl:general.jsonl")  # self-distillation's replay pool


def overrides(tmp_path: Path, model: str) -> dict:
    return {
        "run_dir": str(tmp_path / "run"), "model.name": model,
        "sources.0.limit": 10, "sources.1.limit": 2,
        f"sources.{FB}.options.url": f"sqlite:///{tmp_path / 'feedback.db'}",
        f"sources.{POOL}.limit": 1, "sft.self_distill.enabled": False,  # the replay pool is not under test here
        "sft.max_steps": 2, "sft.batch_size": 2, "rl.algorithm": "grpo",
        "tasks.heldout_fraction": 0.4, "tasks.validation_fraction": 0.0,  # the split this test was written for
        "rl.max_steps": 2, "rl.num_generations": 2, "rl.batch_size": 2, "rl.max_completion_length": 8,
        "rl.heldout.per_domain": 1, "rl.heldout.max_new_tokens": 8,
        "rl.compare": {"enabled": True, "every": 1,
                       "difficulty": {"enabled": True, "k": 2, "max_new_tokens": 4, "max_tasks": 4}},
        "eval.max_new_tokens": 8, "eval.limit_per_split": 2,
    }


def fake_measure(tasks, generate, score, k, cache, key_of, threshold=1.0, batch_tasks=8):
    """Pass rates without generating: the first task by id never solved, the others half the time."""
    from sdk.train.difficulty import estimate

    first = min(t.id for t in tasks)
    return {t.id: estimate(t.id, [0.0] * k if t.id == first else [1.0, 0.0] * (k // 2), threshold) for t in tasks}


@pytest.fixture(scope="module")
def compared(tiny_model_dir, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("compare")
    subprocess.run([sys.executable, str(QUICKSTART.parent / "seed_feedback.py"), str(tmp_path / "feedback.db")],
                   check=True, capture_output=True)
    cfg = load_config(QUICKSTART, overrides(tmp_path, tiny_model_dir))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("sdk.train.difficulty.measure", fake_measure)
        report = Pipeline(cfg, progress=False).run()
    return cfg, report


def curves(run: Path) -> tuple[dict, dict]:
    return tuple(json.loads((run / s / "heldout_curve.json").read_text()) for s in ("rl", "rl_compare"))


def test_both_arms_write_curves_at_the_same_steps(compared):
    cfg, _ = compared
    main, alt = curves(cfg.run_path)
    assert [e["step"] for e in main["evaluations"]] == [e["step"] for e in alt["evaluations"]] == [0, 1, 2]
    assert main["probe"] == alt["probe"] and main["probe"]["tasks"], "the same probe tasks for both arms"
    assert main["steps_trained"] == alt["steps_trained"] == 2
    assert main["settings"]["curriculum"] == "none" and not main["settings"]["difficulty"]["enabled"]
    diff = alt["settings"]["difficulty"]
    assert alt["settings"]["curriculum"] == "easy_to_hard"
    assert (diff["measured"], diff["kept"], diff["dropped"]) == (4, 3, 1) and diff["not_sampled"] > 0
    assert alt["settings"]["train_tasks"] == 3, "the unmeasured rest is left out of the arm"
    assert main["evaluations"][0]["overall"] == alt["evaluations"][0]["overall"], "same start, greedy probes"
    lineage = json.loads((cfg.run_path / "rl_compare" / "adapter" / "lineage.json").read_text())
    assert lineage["promotable"] is False and lineage["stage"] == "rl_compare"


def test_report_and_html_hold_both_arms(compared):
    cfg, report = compared
    sc = report.schedule_comparison
    assert set(sc["arms"]) == {"main", "compare"} and sc["steps"] == [0, 1, 2]
    assert sc["arms"]["main"]["label"] == "plain"
    assert sc["arms"]["compare"]["label"] == "easy_to_hard curriculum + difficulty filter"
    assert sc["arms"]["compare"]["final"]["step"] == 2 and sc["last_step"]["step"] == 2
    assert sc["verdict"] and "probe tasks, 2 GRPO steps" in sc["verdict"] and sc["cost"]["wall_s"] > 0
    page = (cfg.run_path / "report.html").read_text()
    assert '<section id="schedule-comparison">' in page and 'data-plot="schedule-comparison"' in page
    assert "<td>rl_compare</td>" in page and "<td>rl</td>" in page
    assert json.loads((cfg.run_path / "report.json").read_text())["schedule_comparison"] == sc


def _copy(cfg, tmp_path: Path, **rl_compare):
    run = tmp_path / "copy"
    shutil.copytree(cfg.run_path, run)
    comp = cfg.rl.compare.model_copy(update=rl_compare)
    return cfg.model_copy(update={"run_dir": str(run), "rl": cfg.rl.model_copy(update={"compare": comp})}), run


def test_a_changed_comparison_reruns_only_its_stage(compared, tmp_path):
    cfg, _ = compared
    order = cfg.rl.compare.order.model_copy(update={"curriculum": "short_to_long"})
    changed, run = _copy(cfg, tmp_path, order=order)
    pipe = Pipeline(changed, progress=False)
    assert all(pipe.is_complete(s) for s in ("tasks", "sft", "rl", "eval")) and not pipe.is_complete("rl_compare")
    kept = {p: p.stat().st_mtime_ns for p in (run / "rl" / "adapter" / "adapter_model.safetensors",
                                                run / "eval" / "tuned.jsonl")}
    report = pipe.run()  # real difficulty measurement: the random model never solves a task
    assert all(p.stat().st_mtime_ns == t for p, t in kept.items()), "rl and eval were not redone"
    alt = json.loads((run / "rl_compare" / "heldout_curve.json").read_text())
    assert "nothing to train on after the difficulty filter" in alt["skipped"]
    assert report.schedule_comparison["verdict"].startswith(
        "no comparison: the short_to_long curriculum + difficulty filter arm did not run")


def test_disabling_the_comparison_removes_the_stage(compared, tmp_path):
    cfg, _ = compared
    off, run = _copy(cfg, tmp_path, enabled=False)
    pipe = Pipeline(off, progress=False)
    assert not pipe.stage_enabled("rl_compare")
    # the main arm's probes were part of its run: without the comparison it trains again, so a report
    # alone would describe an evaluation of the old arm and is refused, naming what to re-run
    assert not pipe.is_complete("rl") and pipe.is_complete("sft")
    with pytest.raises(ConfigError, match=r"rl changed since it ran") as err:
        pipe.run(("rl_compare", "report"))
    assert "tuneloop eval CONFIG" in err.value.fix
    report = pipe.run(("rl", "rl_compare", "eval", "report"))
    assert report.schedule_comparison is None
    assert "schedule-comparison" not in (run / "report.html").read_text()
