"""Zero-variance GRPO groups left out of the loss (sdk.train.zero_std): the pure functions, the trainer
override on a hand-made batch (no model), and run_grpo on the tiny model."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from trl import GRPOTrainer

from sdk.config import LoraConfig, RlConfig
from sdk.tasks.records import AnswerVerifier, Message, Source, Task
from sdk.train.zero_std import (
    ZeroStdDroppingGRPOTrainer,
    local_drop_rows,
    weighted_rewards,
    zero_variance_groups,
)

NAN = float("nan")


def test_zero_variance_groups_compare_judged_rewards_exactly():
    rewards = torch.tensor([1.0, 1.0, 0.0, 1.0, NAN, 0.5, NAN, NAN, 0.25, 0.25])
    assert zero_variance_groups(rewards, 2).tolist() == [True, False, True, True, True]
    assert zero_variance_groups(torch.tensor([0.0, NAN, 1.0, 0.0, NAN, 0.0]), 3).tolist() == [False, True]
    with pytest.raises(ValueError, match="groups of 4"):
        zero_variance_groups(torch.zeros(6), 4)


def test_equal_rewards_are_dropped_where_trl_rounding_leaves_nonzero_advantages():
    from trl.trainer.utils import nanstd

    rewards = torch.full((8,), 0.7)
    group = rewards.view(1, 8)
    std = nanstd(group, dim=1)
    adv = (rewards - group.mean(dim=1)) / (std + 1e-4)  # TRL's formula
    assert (adv != 0).all(), "float32 rounding: this is why the test is on rewards, not advantages"
    assert not torch.isclose(std, torch.zeros_like(std)).item(), "and TRL's frac_reward_zero_std misses it"
    assert zero_variance_groups(rewards, 8).tolist() == [True]


def test_weighted_rewards_follow_trl_aggregation():
    per_func = torch.tensor([[1.0, 0.3], [1.0, 0.7], [NAN, NAN], [NAN, 2.0]])
    out = weighted_rewards(per_func, torch.tensor([1.0, 0.0]))  # the second is a metric (weight 0)
    assert out[:2].tolist() == [1.0, 1.0] and math.isnan(out[2]) and out[3] == 0.0
    assert zero_variance_groups(out, 2).tolist() == [True, True], "a varying metric is no reward variance"


def test_local_rows_are_sliced_like_trl_advantages():
    groups = torch.tensor([True, False, False, True])  # 8 rows over 2 processes x 4
    assert local_drop_rows(groups, 2, 0, 4).tolist() == [True, True, False, False]
    assert local_drop_rows(groups, 2, 1, 4).tolist() == [False, False, True, True]
    split = torch.tensor([True, False, True])  # 6 rows over 2 processes x 3: group 1 straddles them
    assert local_drop_rows(split, 2, 0, 3).tolist() == [True, True, False]
    assert local_drop_rows(split, 2, 1, 3).tolist() == [False, True, True]


def _fake_trainer(monkeypatch, drop: bool, rewards: list[float]):
    """A ZeroStdDroppingGRPOTrainer without a model: TRL's scoring replaced by a hand-made batch of
    len(rewards) completions, 3 tokens each (the second-to-last completion has 2)."""
    n = len(rewards)
    mask = torch.ones(n, 3, dtype=torch.long)
    mask[-2, 2] = 0
    trl_out = {"completion_mask": mask, "advantages": torch.zeros(n), "num_items_in_batch": mask.sum()}

    def scored(self, inputs):
        self._calculate_rewards(inputs, [], [], [])
        return dict(trl_out)

    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", scored)
    monkeypatch.setattr(GRPOTrainer, "_calculate_rewards", lambda self, *a: torch.tensor(rewards).unsqueeze(1))
    trainer = ZeroStdDroppingGRPOTrainer.__new__(ZeroStdDroppingGRPOTrainer)
    trainer.__dict__.update(
        drop_zero_std_groups=drop, num_generations=2, reward_weights=torch.ones(1),
        model=SimpleNamespace(training=True), _metrics={"train": {"zero_std/dropped_groups": [],
                                                                   "zero_std/groups": []}},
        accelerator=SimpleNamespace(num_processes=1, process_index=0, gather=lambda t: t.reshape(1)))
    return trainer, trl_out


def test_override_zeroes_exactly_the_rows_of_the_zero_variance_group(monkeypatch):
    trainer, trl_out = _fake_trainer(monkeypatch, drop=True, rewards=[0.0, 1.0, 0.5, 0.5])
    out = trainer._generate_and_score_completions([{}] * 4)
    assert out["completion_mask"].tolist() == [[1, 1, 1], [1, 1, 1], [0, 0, 0], [0, 0, 0]]
    assert trl_out["completion_mask"].sum() == 11, "TRL's tensor is not modified in place"
    assert out["num_items_in_batch"].item() == 6, "the dapo normaliser counts the kept tokens only"
    assert trainer._metrics["train"] == {"zero_std/dropped_groups": [1.0], "zero_std/groups": [2.0]}


def test_option_off_returns_trl_output_untouched(monkeypatch):
    trainer, trl_out = _fake_trainer(monkeypatch, drop=False, rewards=[0.0, 1.0, 0.5, 0.5])
    out = trainer._generate_and_score_completions([{}] * 4)
    assert out["completion_mask"] is trl_out["completion_mask"]
    assert out["num_items_in_batch"] is trl_out["num_items_in_batch"]
    assert trainer._metrics["train"] == {"zero_std/dropped_groups": [], "zero_std/groups": []}


def test_eval_batches_are_not_masked(monkeypatch):
    trainer, trl_out = _fake_trainer(monkeypatch, drop=True, rewards=[0.5, 0.5, 0.5, 0.5])
    trainer.model.training = False
    assert trainer._generate_and_score_completions([{}] * 4)["completion_mask"] is trl_out["completion_mask"]


# --- run_grpo on the tiny model ---------------------------------------------------------------------

def _tasks(k: int) -> list[Task]:
    return [Task(domain="d", prompt=(Message(role="user", content=f"task {i}"),), reference=str(i),
                 verifier=AnswerVerifier(expected=str(i)), source=Source(connector="test")) for i in range(k)]


class _Const:
    """Reward 1.0 for every completion: every group has zero variance."""

    __name__ = "const"

    def __call__(self, prompts, completions, **kw):
        return [1.0] * len(prompts)


class _HalfConst:
    """``task 0`` always gets 1.0 (zero variance); every other prompt's group gets 0 and 1."""

    __name__ = "half_const"

    def __call__(self, prompts, completions, **kw):
        return [1.0 if p[-1]["content"] == "task 0" else float(i % 2) for i, p in enumerate(prompts)]


def _adapter(model_dir: str, path) -> dict[str, torch.Tensor]:
    """A saved LoRA adapter with non-zero B (so the adapter matters); returns its tensors."""
    from peft import LoraConfig as PeftLoraConfig
    from peft import get_peft_model
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(model_dir),
                           PeftLoraConfig(r=2, lora_alpha=4, target_modules="all-linear", task_type="CAUSAL_LM"))
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.2)
    model.save_pretrained(path)
    return load_file(str(path / "adapter_model.safetensors"))


def _no_nan(history: list[dict]) -> list[str]:
    return [f"{h.get('step')}:{k}" for h in history for k, v in h.items() if isinstance(v, float) and math.isnan(v)]


@pytest.mark.parametrize("loss_type", ["dapo", "grpo", "bnpo", "dr_grpo"])
def test_constant_reward_drops_every_group_gives_loss_zero_and_leaves_lora_unchanged(tiny_model_dir, tmp_path,
                                                                                     loss_type):
    """Every mask row zeroed: no 0/0 in any loss type's normaliser. (The LoRA would also stay put without
    dropping, since advantages and the KL gradient are 0 at the start; the next test tells the two apart.)"""
    from safetensors.torch import load_file

    from sdk.train.grpo import run_grpo

    before = _adapter(tiny_model_dir, tmp_path / "sft")
    steps = 2 if loss_type == "dapo" else 1
    cfg = RlConfig(max_steps=steps, batch_size=4, num_generations=2, max_completion_length=8, learning_rate=0.5,
                   beta=0.1, loss_type=loss_type, use_vllm="never")
    stats = run_grpo(tiny_model_dir, tmp_path / "sft", _tasks(4), _Const(), cfg, LoraConfig(r=2), tmp_path / "rl",
                     seed=0, progress=False)
    history = stats.log_history
    assert [h["loss"] for h in history if "loss" in h] == [0.0] * steps
    assert not _no_nan(history), _no_nan(history)
    assert stats.details["zero_std"]["dropped_groups"] == 2 * steps == stats.details["zero_std"]["groups"]
    after = load_file(str(tmp_path / "rl" / "adapter" / "adapter_model.safetensors"))
    assert after.keys() == before.keys()
    assert all(torch.equal(after[k], before[k]) for k in before), "an all-dropped step must not move the LoRA"


def test_dropping_renormalises_the_dapo_loss_over_the_kept_group(tiny_model_dir, tmp_path):
    """One step, same seed, so the same completions: with dropping on, the zero-variance group's tokens
    leave the dapo normaliser, so the gradient is the off-run gradient times (all tokens / kept tokens)."""
    from sdk.train.grpo import run_grpo

    runs = {}
    for drop in (False, True):
        cfg = RlConfig(max_steps=1, batch_size=4, num_generations=2, max_completion_length=8, use_vllm="never",
                       loss_type="dapo", drop_zero_std_groups=drop)
        stats = run_grpo(tiny_model_dir, None, _tasks(2), _HalfConst(), cfg, LoraConfig(r=2), tmp_path / str(drop),
                         seed=0, progress=False)
        runs[drop] = next(h for h in stats.log_history if "loss" in h)
    off, on = runs[False], runs[True]
    assert "zero_std/dropped_groups" not in off and on["zero_std/dropped_groups"] == 1.0
    assert off["completions/clipped_ratio"] == on["completions/clipped_ratio"] == 1.0, "all 8 tokens long"
    assert off["grad_norm"] > 0  # the loss value itself is 0 on a first step (advantages sum to 0 per group)
    assert on["grad_norm"] == pytest.approx(2 * off["grad_norm"], rel=1e-4), (on["grad_norm"], off["grad_norm"])


def test_field_case_r4_equal_reward_groups_are_dropped_and_the_mixed_group_kept():
    """CASES.md R4: groups [1,1,1,1], [0,0,0,0] and [0.35,0.35,0.35,0.95] in float32 -> the first two
    carry no signal and are dropped (and counted); the third stays."""
    from sdk.train.zero_std import drop_rows, zero_variance_groups

    rewards = torch.tensor([1, 1, 1, 1, 0, 0, 0, 0, 0.35, 0.35, 0.35, 0.95], dtype=torch.float32)
    groups = zero_variance_groups(rewards, 4)
    assert groups.tolist() == [True, True, False] and int(groups.sum()) == 2
    mask = drop_rows(torch.ones(12, 3), groups.repeat_interleave(4))
    assert mask[:8].sum() == 0 and torch.equal(mask[8:], torch.ones(4, 3))
