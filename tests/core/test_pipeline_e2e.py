"""The main job end to end on a tiny random model: sources → tasks → SFT → GRPO → eval → report.

Uses the quickstart's own package, HumanEval (OOD) and a seeded feedback table, cut to a few
tasks so it runs in about a minute on 2 CPU cores. Asserts the artefacts of every stage, that a
re-run skips complete stages, and that the CLI turns bad input into one clear message.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from sdk.config import load_config
from sdk.run.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart" / "config.yaml"
_SOURCES = [s["type"] + ":" + s.get("options", {}).get("path", "")
            for s in yaml.safe_load(QUICKSTART.read_text())["sources"]]
FB = next(i for i, s in enumerate(_SOURCES) if s.startswith("sql_feedback"))  # the feedback table's source index
POOL = next(i for i, s in enumerate(_SOURCES) if s == "jsonl:general.jsonl")  # self-distillation's replay pool
FB_URL = f"sources.{FB}.options.url"


def small_overrides(tmp_path: Path, model: str) -> dict:
    return {
        "run_dir": str(tmp_path / "run"), "model.name": model,
        "sources.0.limit": 10, "sources.1.limit": 3,
        FB_URL: f"sqlite:///{tmp_path / 'feedback.db'}", f"sources.{POOL}.limit": 3,
        "sft.max_steps": 3, "sft.batch_size": 2, "sft.self_distill.max_new_tokens": 12,
        "rl.expert.k": 2, "rl.expert.max_tasks": 3,  # quickstart: expert iteration
        "rl.expert.replay_self_distill": True,  # the rounds read the SFT stage's self-distillation rows file
        "rl.max_steps": 1, "rl.num_generations": 2, "rl.batch_size": 2, "rl.max_completion_length": 12,
        "eval.max_new_tokens": 12, "eval.limit_per_split": 3,
        "rl.heldout.max_new_tokens": 12, "rl.compare.difficulty.max_new_tokens": 12,  # quickstart: rl.compare on
    }


@pytest.fixture(scope="module")
def finished_run(tiny_model_dir, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("e2e")
    subprocess.run([sys.executable, str(QUICKSTART.parent / "seed_feedback.py"), str(tmp_path / "feedback.db")],
                   check=True, capture_output=True)
    cfg = load_config(QUICKSTART, small_overrides(tmp_path, tiny_model_dir))
    report = Pipeline(cfg, progress=False).run()
    return cfg, report


def test_every_stage_leaves_its_artefacts(finished_run):
    cfg, report = finished_run
    run = cfg.run_path
    counts = json.loads((run / "tasks" / "counts.json").read_text())
    assert counts["splits"]["ood"] == {"basics": 3}
    assert counts["sft_examples"] > 50, "feedback corrections and good answers become SFT examples"
    for stage in ("sft", "rl"):
        assert (run / stage / "adapter" / "adapter_config.json").is_file()
    assert json.loads((run / "sft" / "log_history.json").read_text())
    assert (run / "sft" / "self_distill_rows.jsonl").is_file(), "kept for rl.expert.replay_self_distill"
    rl = json.loads((run / "state" / "rl.json").read_text())["stats"]
    assert rl["algorithm"] == "expert_iteration" and [r["round"] for r in rl["rounds"]] == [1, 2]
    assert rl["validation"]["probe_split"] == "none" and "validation_tasks" in rl["validation"]
    assert (run / "rl" / "rewards.jsonl").stat().st_size > 0, "every sampled reward is logged"
    eval_stats = json.loads((run / "state" / "eval.json").read_text())["stats"]
    assert eval_stats["models"] == ["base", "sft", "rl_midway", "rl", "tuned"], "checkpoints are evaluated points"
    chosen = eval_stats["selection"]["chosen"]  # eval.select: validation (the default)
    assert chosen in ("sft", "rl_midway", "rl") and report.selection["chosen"] == chosen
    assert Pipeline(cfg, progress=False).adapter_for_eval() == run / eval_stats["selection"]["adapter"]
    assert len(report.cost_benefit["points"]) == 4 and report.rl_vs_sft is not None
    assert report.honesty["grader_self_test"]["rate"] == 1.0, "references pass through the eval path"
    base = [json.loads(x) for x in (run / "eval" / "base.jsonl").read_text().splitlines()]
    assert {r["split"] for r in base} == {"heldout", "ood"} and all(r["completions"] for r in base)
    assert (run / "report.html").read_text().startswith("<!DOCTYPE html>")
    on_disk = json.loads((run / "report.json").read_text())
    assert set(on_disk["by_split"]) >= {"heldout", "ood"} and on_disk == report.to_json()


def test_lora_weights_changed(finished_run):
    from safetensors.torch import load_file

    cfg, _ = finished_run
    sft = load_file(str(cfg.run_path / "sft" / "adapter" / "adapter_model.safetensors"))
    lora_b = [t for k, t in sft.items() if "lora_B" in k]
    assert lora_b and all(t.abs().sum() > 0 for t in lora_b), "LoRA B starts at zero; SFT must move every one"


def test_rerun_skips_complete_stages(finished_run, capsys):
    cfg, _ = finished_run
    pipe = Pipeline(cfg, progress=False)
    assert all(pipe.is_complete(s) for s in ("tasks", "sft", "rl", "eval"))
    before = (cfg.run_path / "sft" / "adapter" / "adapter_model.safetensors").stat().st_mtime
    pipe.run(("tasks", "sft", "rl"))
    assert (cfg.run_path / "sft" / "adapter" / "adapter_model.safetensors").stat().st_mtime == before
    changed = cfg.model_copy(update={"rl": cfg.rl.model_copy(update={"max_steps": 2})})
    assert Pipeline(changed, progress=False).is_complete("sft") and not Pipeline(changed).is_complete("rl")


@pytest.mark.parametrize("edit, expect", [
    ({"model.name": "/nonexistent/model"}, "/nonexistent/model does not exist"),
    ({"sft.epocs": 1}, "did you mean `epochs`"),
    ({FB_URL: "postgresql://nobody@127.0.0.1:1/none"}, "fix:"),
])
def test_cli_bad_input_is_one_clear_message(tmp_path, tiny_model_dir, edit, expect):
    from sdk.run.cli import app

    sets = [f"--set={k}={v}" for k, v in {**small_overrides(tmp_path, tiny_model_dir), **edit}.items()]
    stage = ["--stage", "sft"] if "model.name" in edit else ["--stage", "tasks"]
    result = CliRunner().invoke(app, ["run", str(QUICKSTART), *stage, *sets])
    assert result.exit_code != 0
    assert expect in result.output and "Traceback" not in result.output


def test_cli_empty_test_suite(tmp_path, tiny_model_dir):
    from sdk.run.cli import app

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("def f():\n    return 1\n")
    (tmp_path / "tests").mkdir()
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"run_dir: {tmp_path / 'run'}\nmodel: {{name: {tiny_model_dir}}}\n"
                   "sources:\n  - {type: pytest, domain: x, options: {path: ., package: pkg}}\n")
    result = CliRunner().invoke(app, ["run", str(cfg), "--stage", "tasks"])
    assert result.exit_code != 0 and "fix:" in result.output and "Traceback" not in result.output


def test_failed_gate_exits_and_marks_adapter_not_promotable(finished_run):
    from sdk.errors import GateError
    from sdk.run.lineage import read_lineage

    cfg, _ = finished_run
    pipe = Pipeline(cfg, progress=False)
    lineage = read_lineage(pipe.adapter_for_eval())
    assert lineage.promotable is None and set(lineage.heldout_pass_at_1) == {"base", "tuned"}
    strict = cfg.model_copy(update={"gate": cfg.gate.model_copy(update={"enabled": True, "min_heldout_gain": 0.5})})
    with pytest.raises(GateError):
        Pipeline(strict, progress=False).run(("report",))
    lineage = read_lineage(pipe.adapter_for_eval())
    assert lineage.promotable is False and lineage.gate_reasons
    assert (cfg.run_path / "report.json").is_file()


def test_changed_config_retrains_instead_of_resuming_old_checkpoints(finished_run, tmp_path):
    """A changed stage config must not let TRL resume the previous run's last checkpoint."""
    import shutil

    cfg, _ = finished_run
    run = tmp_path / "copy"
    shutil.copytree(cfg.run_path, run)
    (run / "sft" / "log.jsonl").unlink()

    def sft_with(steps):
        return cfg.model_copy(update={"run_dir": str(run), "sft": cfg.sft.model_copy(
            update={"max_steps": steps, "save_steps": 1})})

    Pipeline(sft_with(2), progress=False).run(("sft",))  # leaves checkpoint-1 and checkpoint-2
    Pipeline(sft_with(3), progress=False).run(("sft",))  # new config: must train steps 1..3 again
    steps = [r["step"] for r in map(json.loads, (run / "sft" / "log.jsonl").read_text().splitlines())
             if "loss" in r]
    assert steps == [1, 2, 3], f"the retrain starts at step 1 and its log holds only the new run: {steps}"


def test_rebuilt_task_set_invalidates_training(finished_run):
    """The fingerprint chain carries the task-set version: new data after `tasks --force` redoes sft."""
    cfg, _ = finished_run
    pipe = Pipeline(cfg, progress=False)
    counts_path = cfg.run_path / "tasks" / "counts.json"
    original = counts_path.read_text()
    try:
        assert pipe.is_complete("sft") and pipe.is_complete("eval")
        counts = json.loads(original)
        counts_path.write_text(json.dumps({**counts, "data_version": "0" * 16}))
        assert not pipe.is_complete("sft") and not pipe.is_complete("eval")
    finally:
        counts_path.write_text(original)


def _copy_run(cfg, tmp_path: Path):
    """The finished run copied into ``tmp_path`` (tests below change it) and its --set list."""
    import shutil

    run = tmp_path / "copy"
    shutil.copytree(cfg.run_path, run)
    sets = [f"--set=run_dir={run}", f"--set=model.name={cfg.model.name}",
            f"--set={FB_URL}={cfg.sources[FB].options['url']}"]
    for key, value in small_overrides(tmp_path, cfg.model.name).items():
        if key not in ("run_dir", "model.name", FB_URL):
            sets.append(f"--set={key}={value}")
    return run, sets


def test_export_refuses_a_failed_gate_unless_overridden(finished_run, tmp_path):
    """Issue 20.1: `export` merged an adapter whose gate had failed and said nothing of it."""
    from sdk.run.cli import app

    cfg, _ = finished_run
    run, sets = _copy_run(cfg, tmp_path)
    strict = [*sets, "--set=gate.enabled=true", "--set=gate.min_heldout_gain=0.5"]
    assert CliRunner().invoke(app, ["report", str(QUICKSTART), *strict]).exit_code == 3
    refused = CliRunner().invoke(app, ["export", str(QUICKSTART), *strict])
    assert refused.exit_code == 3 and "--override-gate" in refused.output and not (run / "export").exists()
    done = CliRunner().invoke(app, ["export", str(QUICKSTART), *strict, "--override-gate", "internal demo only"])
    assert done.exit_code == 0, done.output
    record = json.loads((run / "export" / "tuneloop_export.json").read_text())
    assert record["dtype"] == "float32", "trained in fp32 on CPU: exported in fp32"
    assert record["release"]["gate"] == "failed" and record["release"]["override"]["reason"] == "internal demo only"
    assert all(p.stat().st_mode & 0o044 == 0o044 for p in (run / "export").iterdir()), "served files are readable"
    again = CliRunner().invoke(app, ["export", str(QUICKSTART), *sets])  # gate off in this config: the old refusal
    assert again.exit_code == 2 and "--force" in again.output  # does not hold, but the folder is taken
    replaced = CliRunner().invoke(app, ["export", str(QUICKSTART), *sets, "--force"])
    assert replaced.exit_code == 0, replaced.output
    release = json.loads((run / "export" / "tuneloop_export.json").read_text())["release"]
    assert release["gate"] == "not applied" and "refused" in release["gate_reasons"][0]


def test_stale_stages_are_refused_and_force_redoes_only_its_stage(finished_run, tmp_path):
    """Issue 20.2: after `sft --force` with a new setting, `report` showed the old evaluation and `export`
    merged an RL adapter trained on the previous SFT adapter; `sft --force` also rebuilt the tasks."""
    from sdk.run.cli import app

    cfg, _ = finished_run
    run, sets = _copy_run(cfg, tmp_path)
    tasks_marker = (run / "state" / "tasks.json").stat().st_mtime_ns
    changed = [*sets, "--set=sft.max_steps=2"]
    res = CliRunner().invoke(app, ["sft", str(QUICKSTART), *changed, "--force"])
    assert res.exit_code == 0, res.output
    assert (run / "state" / "tasks.json").stat().st_mtime_ns == tasks_marker, "--force redoes sft, not the tasks"
    report = CliRunner().invoke(app, ["report", str(QUICKSTART), *changed])
    assert report.exit_code == 2 and "eval changed since it ran" in report.output
    forgot = CliRunner().invoke(app, ["report", str(QUICKSTART), *sets])  # without the --set the sft ran with
    assert forgot.exit_code == 2 and "sft.max_steps 2 → 3" in " ".join(forgot.output.split()), "names the change"
    assert "tuneloop eval CONFIG" in report.output
    export = CliRunner().invoke(app, ["export", str(QUICKSTART), *changed])
    assert export.exit_code == 2 and "out of date" in export.output and not (run / "export").exists()


def test_report_names_version_adapter_and_settings_and_never_greens_a_disabled_gate(finished_run):
    """Issue 20.9: "Gate: PASSED (gate disabled)" in green under "Do not ship"; no version, adapter or settings."""
    cfg, report = finished_run
    meta = report.meta
    assert meta["tuneloop_version"] and meta["adapter"].endswith("adapter") and "LoRA r=" in meta["settings"]
    from sdk.eval.html import render_html

    page = render_html(report)  # the file on disk is rewritten by the strict-gate tests above
    assert "PASSED (gate disabled)" not in page and "not applied" in page and "LoRA r=" in page
