"""Shared fixtures for the eval tests: rows of two models and the inputs of a full report."""

import pytest

from sdk.config import GateConfig
from sdk.eval.cost import StageCost
from sdk.eval.gate import check_gate
from sdk.eval.run import compare
from eval_rows import make_rows
from sdk.tasks.records import Split


@pytest.fixture
def report_inputs():
    base = (make_rows("base", ["1", "0", "0", "0", "1", "0", "0", "0"])
            + make_rows("base", ["1", "0", "0"], Split.HELDOUT, "python/ledger", 8)
            + make_rows("base", ["1", "1", "0", "-"], Split.OOD, "humaneval", 20))
    tuned = (make_rows("tuned", ["1", "1", "1", "0", "1", "1", "0", "H"])
             + make_rows("tuned", ["0", "1", "1"], Split.HELDOUT, "python/ledger", 8,
                         components={"regressions": 1.0, "hidden_gap": 0.0})
             + make_rows("tuned", ["1", "1", "0", "1"], Split.OOD, "humaneval", 20))
    comparison = compare(base, tuned, n_resamples=300)
    gate = check_gate(GateConfig(enabled=True, max_regressions=0), comparison)
    sft_log = [{"loss": 2.0 - 0.1 * s, "learning_rate": 1e-3, "epoch": s / 10, "step": s} for s in range(1, 11)]
    sft_log.append({"train_runtime": 12.0, "train_loss": 1.5, "epoch": 1.0, "step": 10})
    grpo_log = [{"loss": 0.01 * s, "reward": 0.2 + 0.05 * s, "reward_std": 0.3, "kl": float("nan"), "step": s}
                for s in range(1, 6)]
    costs = [StageCost(stage="tasks", kind="data", wall_s=3.0, cpu_s=4.0),
             StageCost(stage="sft", wall_s=100.0, cpu_s=190.0, tokens_trained=40_000),
             StageCost(stage="grpo", wall_s=120.0, cpu_s=230.0, tokens_generated=9_000, tokens_trained=9_000),
             StageCost(stage="eval_base", kind="eval", wall_s=30.0, cpu_s=55.0, tokens_generated=300),
             StageCost(stage="eval_tuned", kind="eval", wall_s=31.0, cpu_s=57.0, tokens_generated=310)]
    counts = {"train": {"python/billing": 40}, "heldout": {"python/billing": 8, "python/ledger": 3},
              "ood": {"humaneval": 4}, "quarantined": {"reference fails its tests": 2, "duplicate": 1}}
    return dict(comparison=comparison, gate=gate, task_counts=counts,
                train_logs={"sft": sft_log, "grpo": grpo_log}, costs=costs, rows=base + tuned,
                meta={"run_dir": "runs/demo", "model": "smollm2-135m", "<script>": "x<y"})
