"""SandboxReward inside TRL's GRPOTrainer (through sdk.train.grpo.run_grpo) on the tiny model."""

from __future__ import annotations

import json

import pytest

from sdk.rewards.trl import SandboxReward

from .helpers import add_task, fake_factory


@pytest.mark.slow
def test_sandbox_reward_runs_inside_grpo_trainer(tmp_path):
    from sdk.config import LoraConfig, RlConfig
    from sdk.models import build_tiny_model
    from sdk.train.grpo import run_grpo

    model = build_tiny_model(tmp_path / "tiny")
    log = tmp_path / "rewards.jsonl"
    reward = SandboxReward(sandbox_factory=fake_factory, log_path=log)
    cfg = RlConfig(max_steps=1, num_generations=2, batch_size=2, max_completion_length=12, use_vllm="never")
    run_grpo(str(model), None, [add_task()], reward, cfg, LoraConfig(r=4, alpha=8), tmp_path / "rl", seed=0,
             dtype="float32", progress=False)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) >= 2 and all(r["task_id"] == add_task().id for r in rows)
    assert all(isinstance(r["score"], float) for r in rows) and rows[0]["step"] == 0
