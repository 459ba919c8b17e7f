"""The schedule reaches TRL in order (GRPO and SFT), DPO runs on preference pairs, and the
loss-variant / KL / DPO config paths land in TRL's configs (tiny model, CPU)."""

from __future__ import annotations

import pytest

from sdk.config import DpoConfig, LoraConfig, OrderConfig, RlConfig, SftConfig
from sdk.sources import PreferencePair
from sdk.tasks.records import AnswerVerifier, Message, Source, Task
from sdk.train.dpo import dpo_args, dpo_rows, load_pairs, promote, run_dpo
from sdk.train.grpo import grpo_args, prompts_needed, run_grpo
from sdk.run.lineage import Lineage, lineage_chain, read_lineage, write_lineage
from sdk.train.sft import run_sft, sft_items, sft_rows


def _task(i: int, domain: str, rate: float) -> Task:
    return Task(domain=domain, prompt=(Message(role="user", content=f"task {i}"),), reference=f"{i}",
                verifier=AnswerVerifier(expected=str(i)), source=Source(connector="test"), difficulty=rate)


class _Recorder:
    """A TRL reward function that records the prompts it is asked about, in order."""

    __name__ = "recorder"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, prompts, completions, **kw):
        self.prompts += [p[-1]["content"] for p in prompts]
        return [float(i % 2) for i in range(len(prompts))]


def test_grpo_reads_prompts_in_curriculum_order(tiny_model_dir, tmp_path):
    tasks = [_task(i, "a" if i % 2 else "b", rate) for i, rate in enumerate([0.1, 0.9, 0.2, 0.8, 0.5, 0.6])]
    cfg = RlConfig(max_steps=3, batch_size=2, num_generations=2, max_completion_length=4, use_vllm="never",
                   order=OrderConfig(curriculum="easy_to_hard", phases=3))
    assert prompts_needed(cfg) == 3
    reward = _Recorder()
    stats = run_grpo(tiny_model_dir, None, tasks, reward, cfg, LoraConfig(r=2), tmp_path, seed=0, progress=False)
    seen = [p for j, p in enumerate(reward.prompts) if j % 2 == 0]  # each prompt twice (the group)
    assert len(seen) == 3
    rates = {f"task {i}": t.difficulty for i, t in enumerate(tasks)}
    assert rates[seen[0]] > rates[seen[1]] > rates[seen[2]], seen
    assert stats.details["order"]["rows"] == 3 and stats.details["zero_std"]["steps"] == 3
    assert stats.details["zero_std"]["zero_std_groups"] == 0, "the recorder gives every group rewards 0 and 1"
    from safetensors.torch import load_file

    lora_b = [t for k, t in load_file(str(tmp_path / "adapter" / "adapter_model.safetensors")).items() if "lora_B" in k]
    assert lora_b and all(t.abs().sum() > 0 for t in lora_b), "LoRA B starts at zero; GRPO with reward variance moves it"


def test_sft_reads_rows_in_schedule_order(tiny_model_dir, tmp_path):
    from transformers import TrainerCallback

    tasks = [_task(i, "a", None).with_(reference="x" * (40 - 5 * i)) for i in range(6)]
    tasks = [Task.model_validate({**t.model_dump(), "id": ""}) for t in tasks]
    rows, items = sft_rows(tasks, []), sft_items(tasks, [])
    assert len(rows) == len(items) == 6
    first: list[int] = []

    class Peek(TrainerCallback):
        def on_train_begin(self, args, state, control, train_dataloader=None, **kw):
            for batch in train_dataloader:
                first.extend(int((row != -100).sum()) for row in batch["labels"])

    cfg = SftConfig(max_steps=1, batch_size=2, order=OrderConfig(curriculum="short_to_long", phases=3))
    run_sft(tiny_model_dir, rows, cfg, tmp_path, seed=0, progress=False, items=items, callbacks=[Peek()])
    assert len(first) == 6, first
    assert max(first[:2]) < min(first[2:4]) and max(first[2:4]) < min(first[4:]), f"phases short to long: {first}"


def _pairs(n: int) -> list[PreferencePair]:
    return [PreferencePair(prompt=(Message(role="user", content=f"add {i} and 1"),), chosen=f"{i + 1}",
                           rejected=f"{i}", source=Source(connector="test")) for i in range(n)]


def test_dpo_continues_the_sft_adapter_and_is_promoted(tiny_model_dir, tmp_path):
    from safetensors.torch import load_file

    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(p.model_dump_json() + "\n" for p in _pairs(4)))
    pairs = load_pairs(path)
    rows, skipped = dpo_rows([*pairs, pairs[0].model_copy(update={"rejected": pairs[0].chosen})])
    assert len(rows) == 4 and skipped == 1
    assert rows[0]["chosen"] == [{"role": "assistant", "content": "1"}]
    sft_dir = tmp_path / "sft"
    run_sft(tiny_model_dir, sft_rows([_task(i, "a", None) for i in range(4)], []), SftConfig(max_steps=2, batch_size=2,
            lora=LoraConfig(r=2)), sft_dir, seed=0, progress=False)
    stats = run_dpo(tiny_model_dir, sft_dir / "adapter", rows, DpoConfig(max_steps=2, batch_size=2),
                    LoraConfig(r=2), sft_dir / "dpo", seed=0, progress=False)
    assert stats.steps == 2
    assert any("rewards/margins" in h or "loss" in h for h in stats.log_history)
    before = load_file(str(sft_dir / "adapter" / "adapter_model.safetensors"))
    after = load_file(str(sft_dir / "dpo" / "adapter" / "adapter_model.safetensors"))
    assert set(after) == set(before), "the DPO adapter is the SFT adapter continued (no 'ref' copy saved)"
    assert any(not (after[k] == before[k]).all() for k in before), "DPO moved the weights"
    write_lineage(sft_dir / "adapter", Lineage(stage="sft", base_model=tiny_model_dir, steps=2))
    new = promote(sft_dir, sft_dir / "dpo")
    write_lineage(new, Lineage(stage="dpo", base_model=tiny_model_dir, parent=str(sft_dir / "adapter_sft"), steps=2))
    assert [x.stage for x in lineage_chain(new)] == ["dpo", "sft"], "the DPO adapter names its SFT parent"
    assert load_file(str(new / "adapter_model.safetensors")).keys() == after.keys()
    assert (sft_dir / "adapter_sft" / "adapter_model.safetensors").is_file()


def test_bad_preference_file_names_the_line(tmp_path):
    from sdk.errors import SourceError

    path = tmp_path / "pairs.jsonl"
    path.write_text(_pairs(1)[0].model_dump_json() + "\n{\"prompt\": 3}\n")
    with pytest.raises(SourceError, match="pairs.jsonl:2"):
        load_pairs(path)
    assert load_pairs(tmp_path / "missing.jsonl") == []


@pytest.mark.parametrize("loss_type", ["grpo", "dapo", "dr_grpo", "bnpo"])
@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_rl_loss_variants_and_kl_reach_grpo_config(tmp_path, loss_type, beta):
    from trl import GRPOConfig

    cfg = RlConfig(loss_type=loss_type, beta=beta, use_vllm="never", save_steps=3)
    args = GRPOConfig(**grpo_args(cfg, tmp_path, seed=0))
    assert (args.loss_type, args.beta, args.save_steps, args.shuffle_dataset) == (loss_type, beta, 3, True)
    ordered = RlConfig(use_vllm="never", order=OrderConfig(curriculum="easy_to_hard"))
    assert GRPOConfig(**grpo_args(ordered, tmp_path, seed=0)).shuffle_dataset is False


@pytest.mark.parametrize("loss_type", ["sigmoid", "ipo", "hinge", "robust", "apo_zero"])
def test_dpo_config_paths_reach_trl(tmp_path, loss_type):
    from trl import DPOConfig

    args = DPOConfig(**dpo_args(DpoConfig(loss_type=loss_type, beta=0.3), tmp_path, seed=0))
    assert args.loss_type == [loss_type] and args.beta == 0.3


def test_lineage_round_trip_and_broken_files(tmp_path):
    assert read_lineage(tmp_path) is None
    write_lineage(tmp_path, Lineage(stage="rl", base_model="m", parent=str(tmp_path / "missing"), steps=3))
    got = read_lineage(tmp_path)
    assert got.stage == "rl" and got.steps == 3 and got.created.endswith("+00:00")
    assert len(lineage_chain(tmp_path)) == 1, "a missing parent ends the chain"
    (tmp_path / "lineage.json").write_text("{not json")
    assert read_lineage(tmp_path) is None


def test_plain_progress_lines_when_no_live_display(tiny_model_dir, tmp_path, caplog):
    """Issue 20.7: `tuneloop sft` printed nothing until it exited when stderr was not a terminal."""
    import logging

    tasks = [_task(i, "a", None) for i in range(4)]
    cfg = SftConfig(max_steps=2, batch_size=2, save_steps=100, lora=LoraConfig(r=2))
    with caplog.at_level(logging.INFO, logger="tuneloop.progress"):
        run_sft(tiny_model_dir, sft_rows(tasks, []), cfg, tmp_path / "sft", seed=0, progress=False)
    lines = [r.getMessage() for r in caplog.records if r.name == "tuneloop.progress"]
    assert lines[0].startswith("sft: 2 steps;"), lines  # said when training starts
    assert len(lines) > 1 and lines[1].startswith("sft: step 2/2 loss "), lines
