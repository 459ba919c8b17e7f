"""Kill -9 a GRPO run mid-training and re-run the same command: it resumes from the last checkpoint,
finishes, and the prompts it sees after resuming are those an uninterrupted run with the same seed
sees, in the same order (the job crosses epochs, where TRL's sampler alone would restart its order)."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path

from tests.train.killable import finish, kill_when_stalled, start

JOB = Path(__file__).with_name("grpo_resume_job.py")


def _job(model: str, out: Path, marker: Path, seen: Path):
    return start(JOB, model, out, marker, seen, env={"OMP_NUM_THREADS": "1"})  # see _one_thread


@contextmanager
def _one_thread():
    """One torch thread, as the job processes get: on a loaded 2-core machine two threads made a tiny-model
    GRPO step take ~9 s instead of ~0.2 s (measured); the same thread count keeps sampling identical."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _seen(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _by_step(rows: list[dict], key: str) -> dict[int, list[str]]:
    """``{trained step (1-based): what its generation saw}``; the reward runs before the step."""
    return {r["step"] + 1: r[key] for r in rows}


def test_sigkill_mid_grpo_then_rerun_resumes_with_the_uninterrupted_prompt_order(tiny_model_dir, tmp_path):
    import torch
    from safetensors.torch import load_file

    out, marker, seen = tmp_path / "killed", tmp_path / "stalled", tmp_path / "killed.jsonl"
    kill_when_stalled(_job(tiny_model_dir, out, marker, seen), marker)
    ckpts = sorted(p.name for p in (out / "checkpoints").glob("checkpoint-*"))
    assert ckpts == ["checkpoint-2"] and not (out / "adapter").exists(), "killed after step 3, before step 4's save"

    assert finish(_job(tiny_model_dir, out, marker, seen)) == {"steps": 6}, "the same command finishes the run"
    history = json.loads((out / "log_history.json").read_text())
    assert [h["step"] for h in history if "loss" in h] == [1, 2, 3, 4, 5, 6], "steps 1-2 restored, 3-6 trained"
    rows = _seen(seen)
    first_pid = rows[0]["pid"]
    resumed = [r for r in rows if r["pid"] != first_pid]
    assert [r["step"] + 1 for r in resumed] == [3, 4, 5, 6], "resumed from checkpoint-2, not from scratch"

    clean_marker, clean_seen = tmp_path / "never-stall", tmp_path / "clean.jsonl"
    clean_marker.write_text("")
    sys.path.insert(0, str(JOB.parent))
    try:  # the same job in this process (no second interpreter start)
        from grpo_resume_job import main
    finally:
        sys.path.remove(str(JOB.parent))
    with _one_thread():
        main(tiny_model_dir, str(tmp_path / "clean"), str(clean_marker), str(clean_seen))
    clean = _seen(clean_seen)
    assert [r["step"] + 1 for r in clean] == [1, 2, 3, 4, 5, 6]
    before = _by_step([r for r in rows if r["pid"] == first_pid], "prompts")
    assert all(before[s] == _by_step(clean, "prompts")[s] for s in (1, 2, 3)), "same seed, same start"
    got, want = _by_step(resumed, "prompts"), _by_step(clean, "prompts")
    assert got == {s: want[s] for s in (3, 4, 5, 6)}, "prompts after the resume differ from the uninterrupted run"
    got, want = _by_step(resumed, "completions"), _by_step(clean, "completions")
    assert got == {s: want[s] for s in (3, 4, 5, 6)}, "sampling RNG not restored: completions differ"

    resumed_lora = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    clean_lora = load_file(str(tmp_path / "clean" / "adapter" / "adapter_model.safetensors"))
    assert resumed_lora.keys() == clean_lora.keys()
    for k in clean_lora:
        assert torch.allclose(resumed_lora[k], clean_lora[k], atol=1e-6), f"{k}: the resumed run diverged"


def test_epoch_sampler_gives_trl_order_and_the_same_order_when_started_at_a_later_epoch():
    from trl.trainer.utils import RepeatSampler

    from sdk.train.grpo_trainer import EpochRepeatSampler

    kw = {"data_source": list(range(7)), "mini_repeat_count": 2, "batch_size": 3, "repeat_count": 1,
          "shuffle": True, "seed": 5}
    trl = RepeatSampler(**kw)
    trl_epochs = [list(trl) for _ in range(4)]  # one sampler iterated epoch after epoch: TRL's order
    assert not hasattr(RepeatSampler, "set_epoch"), "TRL now has set_epoch: EpochRepeatSampler may be redundant"
    assert list(RepeatSampler(**kw)) == trl_epochs[0] != trl_epochs[2], "a fresh TRL sampler restarts at epoch 0"

    ours = EpochRepeatSampler.like(RepeatSampler(**kw))
    for epoch in range(4):
        ours.set_epoch(epoch)
        assert list(ours) == trl_epochs[epoch]
    resumed = EpochRepeatSampler(**kw)
    resumed.set_epoch(2)
    assert list(resumed) == trl_epochs[2], "a sampler built on resume continues at epoch 2's order"
    assert list(EpochRepeatSampler(**{**kw, "shuffle": False})) == [i for i in range(6) for _ in range(2)]
