"""Change tasks end to end on the tiny model (issue 17): the ``git_history`` source on the generated
6-commit repository -> tasks -> SFT -> expert iteration -> eval -> report, with
``examples/change_tasks/config.yaml`` cut to a smoke-sized run. About 100 s on a loaded 2-core
machine, hence ``slow`` (``pytest -m slow tests/connectors/test_history_pipeline.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sdk.config import load_config
from sdk.run.pipeline import Pipeline
from tests.connectors.history_repo import build

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "change_tasks" / "config.yaml"


@pytest.mark.slow
def test_change_tasks_train_and_evaluate_end_to_end(tiny_model_dir, tmp_path):
    repo = tmp_path / "calc"
    build(repo)
    cfg = load_config(CONFIG, {"run_dir": str(tmp_path / "run"), "model.name": tiny_model_dir,
                               "sources.0.options.path": str(repo), "sources.0.options.reruns": 0,
                               "sources.0.options.heldout_fraction": 0.5, "sft.max_steps": 2,
                               "eval.max_new_tokens": 16, "rl.max_completion_length": 16})
    report = Pipeline(cfg, progress=False).run()
    run = cfg.run_path
    counts = json.loads((run / "tasks" / "counts.json").read_text())
    assert sum(counts["splits"]["train"].values()) == 2 and sum(counts["splits"]["heldout"].values()) == 1
    rl = json.loads((run / "state" / "rl.json").read_text())["stats"]
    assert rl["algorithm"] == "expert_iteration" and rl["rounds"][0]["sampled"] == 4
    rewards = [json.loads(x) for x in (run / "rl" / "rewards.jsonl").read_text().splitlines()]
    assert len(rewards) == 4 and all(r["status"] in ("no_code", "compile_error", "failed", "ok") for r in rewards)
    assert report.honesty["grader_self_test"]["rate"] == 1.0, "the held-out change's own diff earns full marks"
    assert (run / "sft" / "adapter" / "adapter_config.json").is_file() and report.by_split["heldout"]
    change = report.change_completion  # the report names change completion, base vs tuned, with intervals
    held = change["by_split"]["heldout"]
    assert held["n_tasks"] == 1 and {"value", "low", "high"} <= set(held["base"]) <= set(held["delta"])
    task = change["tasks"][0]
    assert {"fail_to_pass_failing", "pass_to_pass_broken", "diff"} <= set(task["base"])
    assert not task["base"]["completed"] or not task["base"]["fail_to_pass_failing"]
    assert 'id="change-completion"' in (run / "report.html").read_text()
