"""The reward log and its per-checkpoint summary (hacking flags per checkpoint for the report)."""

from __future__ import annotations

from types import SimpleNamespace

from sdk.rewards.reward_log import read_reward_log, summarize_by_step
from sdk.rewards.trl import SandboxReward

from .helpers import add_task, fake_factory

HONEST = "```python\ndef add(a, b):\n    return a + b\n```"
CHEAT = "```python\nimport sys\nsys.exit(0)\n```"


def test_flags_per_checkpoint(tmp_path):
    log = tmp_path / "r.jsonl"
    reward = SandboxReward(sandbox_factory=fake_factory, log_path=log)
    tj = [add_task().model_dump_json()] * 2
    reward(["p"] * 2, [HONEST, CHEAT], task_json=tj, trainer_state=SimpleNamespace(global_step=0))
    reward(["p"] * 2, [HONEST, HONEST], task_json=tj, trainer_state=SimpleNamespace(global_step=5))
    with log.open("a") as fh:
        fh.write('{"torn')  # a crash mid-write
    rows, bad = read_reward_log(log)
    assert len(rows) == 4 and bad == 1
    first, second = summarize_by_step(rows, every=5)
    assert (first["step"], first["samples"], first["hacking"], first["flags"]) == (0, 2, 1, {"exit_trick": 1})
    assert first["mean_score"] == 0.5 and first["hidden_gap"] == 0.0
    assert (second["step"], second["hacking"], second["flags"], second["mean_score"]) == (5, 0, {}, 1.0)


def test_missing_log_is_empty(tmp_path):
    assert read_reward_log(tmp_path / "none.jsonl") == ([], 0)
    assert summarize_by_step([{"score": None, "status": "infrastructure"}]) == [{
        "step": None, "samples": 1, "judged": 0, "mean_score": None, "hacking": 0, "flags": {},
        "statuses": {"infrastructure": 1}, "hidden_gap": None}]
