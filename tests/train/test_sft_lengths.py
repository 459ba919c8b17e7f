"""SFT row lengths: the truncation policy, padding-free exactness on CPU attention, token-budget packing."""

from __future__ import annotations

import json

import pytest
import torch

from sdk.config import LoraConfig, SftConfig
from sdk.errors import ConfigError
from sdk.train.lengths import length_policy
from sdk.train.sft import run_sft


def _rows(n_short: int, long_words: int = 0) -> list[dict]:
    rows = [{"prompt": [{"role": "user", "content": f"say {i}"}],
             "completion": [{"role": "assistant", "content": f"{i} {i}"}]} for i in range(n_short)]
    if long_words:
        rows.append({"prompt": [{"role": "user", "content": "write a lot"}],
                     "completion": [{"role": "assistant", "content": " ".join(["word"] * long_words)}]})
    return rows


def test_length_policy_drop_keeps_short_rows_and_records_long_ones():
    kept, records = length_policy([10, 50, 20], [5, 5, 5], max_length=30, policy="drop")
    assert kept == [0, 2]
    assert records == [{"row": 1, "tokens": 50, "max_length": 30, "action": "dropped"}]


def test_length_policy_truncate_keeps_rows_unless_the_completion_is_cut_away():
    # row 1: completion starts at 10 < 30 -> truncated and kept; row 2: completion starts at 40 -> nothing to learn
    kept, records = length_policy([10, 50, 60], [5, 10, 40], max_length=30, policy="truncate")
    assert kept == [0, 1]
    assert [r["action"] for r in records] == ["truncated", "dropped: completion cut entirely"]


def test_length_policy_error_names_rows_and_the_length_to_use():
    with pytest.raises(ConfigError) as err:
        length_policy([10, 50, 70], [1, 1, 1], max_length=30, policy="error")
    assert "row 1 (50 tokens)" in str(err.value) and "row 2 (70 tokens)" in str(err.value)
    assert "70" in err.value.fix


def test_sft_config_rejects_a_token_budget_below_max_length():
    with pytest.raises(ValueError, match="token_budget"):
        SftConfig(max_length=512, token_budget=256)


def _one_batch_loss(model, tok, rows, padding_free: bool, tmp_path) -> torch.Tensor:
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    args = SFTConfig(output_dir=str(tmp_path / f"pf{padding_free}"), padding_free=padding_free, max_length=None,
                     per_device_train_batch_size=len(rows), train_sampling_strategy="sequential", report_to=[],
                     use_cpu=True, bf16=False, gradient_checkpointing=False)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tok)
    batch = next(iter(trainer.get_train_dataloader()))
    with torch.no_grad():
        return trainer.compute_loss(model, dict(batch)), batch


def test_padding_free_batches_give_the_padded_loss_on_cpu_attention(tiny_model_dir, tmp_path):
    """Padding-free concatenates rows; without block-diagonal masking the later rows would attend to the
    earlier ones. The loss must equal the padded batch's, and an explicit all-ones mask (the contaminated
    variant) must not."""
    from sdk.models import load_model

    model, tok = load_model(str(tiny_model_dir), dtype="float32")
    model.eval()
    rows = _rows(3, long_words=12)
    padded, pbatch = _one_batch_loss(model, tok, rows, False, tmp_path)
    free, fbatch = _one_batch_loss(model, tok, rows, True, tmp_path)
    assert fbatch["input_ids"].shape[0] == 1 and pbatch["input_ids"].shape[0] == 4
    assert "attention_mask" not in fbatch
    assert torch.allclose(padded, free, rtol=1e-5, atol=1e-6), (padded, free)
    contaminated = {k: fbatch[k] for k in ("input_ids", "labels", "position_ids")}
    contaminated["attention_mask"] = torch.ones_like(fbatch["input_ids"])
    with torch.no_grad():
        out = model(input_ids=contaminated["input_ids"], attention_mask=contaminated["attention_mask"],
                    position_ids=contaminated["position_ids"], labels=contaminated["labels"], use_cache=False)
    assert not torch.allclose(out.loss, free, rtol=1e-4), "the control should differ: rows attending to each other"


def test_run_sft_drops_too_long_rows_records_them_and_trains_on_the_rest(tiny_model_dir, tmp_path):
    cfg = SftConfig(max_steps=2, batch_size=2, max_length=48, save_steps=100, lora=LoraConfig(r=2))
    stats = run_sft(str(tiny_model_dir), _rows(4, long_words=80), cfg, tmp_path, seed=0, progress=False)
    assert stats.details["lengths"]["dropped"] == 1 and stats.details["lengths"]["rows_out"] == 4
    recorded = [json.loads(x) for x in (tmp_path / "too_long.jsonl").read_text().splitlines()]
    assert recorded[0]["row"] == 4 and recorded[0]["tokens"] > 48
    assert stats.steps == 2 and (tmp_path / "adapter" / "adapter_config.json").is_file()


def test_run_sft_error_policy_stops_before_training(tiny_model_dir, tmp_path):
    cfg = SftConfig(max_steps=2, max_length=48, truncation="error", lora=LoraConfig(r=2))
    with pytest.raises(ConfigError, match="longer than sft.max_length=48"):
        run_sft(str(tiny_model_dir), _rows(4, long_words=80), cfg, tmp_path, seed=0, progress=False)
    assert not (tmp_path / "adapter").exists()


def test_token_budget_packs_rows_into_fewer_steps_with_the_same_tokens(tiny_model_dir, tmp_path):
    rows = _rows(12)
    plain = run_sft(str(tiny_model_dir), rows, SftConfig(epochs=1, batch_size=1, save_steps=100,
                                                         lora=LoraConfig(r=2)), tmp_path / "a", 0, progress=False)
    packed = run_sft(str(tiny_model_dir), rows, SftConfig(epochs=1, max_length=64, token_budget=128, save_steps=100,
                                                          lora=LoraConfig(r=2)), tmp_path / "b", 0, progress=False)
    assert plain.steps == 12
    assert packed.steps < 12
    assert packed.tokens_trained == plain.tokens_trained


def test_too_long_list_names_the_row_and_is_removed_by_a_clean_rerun(tmp_path):
    from datasets import Dataset

    from sdk.train.lengths import enforce_max_length

    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": "long one"}], "input_ids": [1] * 9,
                             "labels": [-100] * 4 + [1] * 5},
                            {"prompt": [{"role": "user", "content": "short"}], "input_ids": [1] * 3,
                             "labels": [-100, 1, 1]}])
    _, summary = enforce_max_length(ds, 5, "drop", tmp_path)
    record = json.loads((tmp_path / "too_long.jsonl").read_text())
    assert record["row"] == 0 and record["prompt_start"] == "long one" and summary["longest"] == 9
    enforce_max_length(ds, 50, "drop", tmp_path)
    assert not (tmp_path / "too_long.jsonl").exists(), "a stale list would name rows that were trained on"


def test_run_sft_quarantines_malformed_rows_with_reasons_and_trains_on_the_rest(tiny_model_dir, tmp_path):
    bad = [{"prompt": [{"role": "user", "content": "no completion"}]},
           {"prompt": [{"role": "user", "content": "x"}], "completion": []},
           {"prompt": [], "completion": [{"role": "assistant", "content": "y"}]},
           {"prompt": [{"role": "user", "content": "x"}], "completion": [{"role": "assistant", "content": "  "}]}]
    cfg = SftConfig(max_steps=1, batch_size=2, save_steps=100, lora=LoraConfig(r=2))
    stats = run_sft(str(tiny_model_dir), bad + _rows(4), cfg, tmp_path, seed=0, progress=False)
    reasons = [json.loads(x) for x in (tmp_path / "bad_rows.jsonl").read_text().splitlines()]
    assert [r["row"] for r in reasons] == [0, 1, 2, 3] and "completion" in reasons[0]["reason"]
    assert stats.rows == 4
    from sdk.errors import ConfigError

    with pytest.raises(ConfigError, match="4 malformed rows"):
        run_sft(str(tiny_model_dir), bad, cfg, tmp_path / "b", seed=0, progress=False)


def test_truncate_policy_when_prompts_alone_fill_max_length_says_so(tiny_model_dir, tmp_path):
    cfg = SftConfig(max_steps=1, max_length=3, truncation="truncate", lora=LoraConfig(r=2))
    with pytest.raises(ConfigError, match="prompt alone reaches sft.max_length=3") as err:
        run_sft(str(tiny_model_dir), _rows(2), cfg, tmp_path, seed=0, progress=False)
    assert "truncation" not in err.value.fix


def test_dropped_rows_warning_names_the_max_length_that_keeps_them(tmp_path, caplog):
    """Field case (validators 0.36.0, repository context on): 38 of 43 rows over the default 512 were
    dropped and the warning did not say how to keep them."""
    from datasets import Dataset

    from sdk.train.lengths import enforce_max_length

    ds = Dataset.from_list([{"input_ids": [1] * 9, "labels": [-100] * 4 + [1] * 5},
                            {"input_ids": [1] * 3, "labels": [-100, 1, 1]}])
    with caplog.at_level("WARNING"):
        enforce_max_length(ds, 5, "drop", tmp_path)
    assert "--set sft.max_length=9" in caplog.text


def test_default_max_length_keeps_a_row_whose_prompt_carries_the_default_repo_context():
    """Field case (toolz 1.0.0, repository context on by default): at the old default 512, 12 of 33
    train rows were dropped; a prompt with the full default context budget (800 tokens) plus its
    signature, docstring and a reference body must fit the default."""
    from connectors.suites.context import RepoContextOptions

    prompt = RepoContextOptions().token_budget + 100     # context + instructions, signature, docstring
    row = prompt + 120                                   # + a reference body
    kept, records = length_policy([row], [prompt], max_length=SftConfig().max_length, policy="drop")
    assert kept == [0] and records == []
