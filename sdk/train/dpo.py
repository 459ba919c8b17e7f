"""DPO on the feedback preference pairs through TRL's ``DPOTrainer``, continuing the SFT adapter.

The feedback sources write :class:`sdk.sources.PreferencePair` records to
``run_dir/tasks/preference_pairs.jsonl`` (a good and a bad answer to the same prompt). With
``sft.dpo.enabled`` the SFT stage runs DPO on them after SFT (Rafailov et al. 2023) in TRL's
conversational preference form (``prompt`` messages, ``chosen`` / ``rejected`` assistant turns).

The reference model: TRL 1.16, given a ``PeftModel`` with a trained adapter and no
``ref_model``, copies the adapter into a frozen ``ref`` adapter, so the reference is the SFT
policy (as in the DPO paper, π_ref = π_SFT), not the bare base model, and no second model is
loaded. The DPO adapter replaces ``sft/adapter`` (the SFT-only one is kept as
``sft/adapter_sft``) and its ``lineage.json`` names that parent, so GRPO and evaluation pick it up.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from pathlib import Path

from transformers import TrainerCallback

from sdk.train.config import DpoConfig, LoraConfig
from sdk.errors import ConfigError, SourceError
from sdk.sources import PreferencePair
from sdk.train.result import TrainResult
from sdk.train.common import (
    common_args,
    peft_config,
    progress_callbacks,
    train_and_save,
)

log = logging.getLogger(__name__)


def load_pairs(path: str | Path) -> list[PreferencePair]:
    """Preference pairs from a JSONL file (missing file: none).

    Raises:
        SourceError: a line is not a valid :class:`PreferencePair` (names the line).
    """
    from sdk.jsonl import read_models

    return read_models(path, PreferencePair, SourceError,
                       "re-run the tasks stage (`tuneloop run --force`) to rewrite the file", missing_ok=True)


def dpo_rows(pairs: Sequence[PreferencePair]) -> tuple[list[dict], int]:
    """TRL conversational preference rows, and how many pairs were skipped.

    Returns:
        ``([{"prompt": [msg...], "chosen": [assistant msg], "rejected": [assistant msg]}], skipped)``;
        a pair whose chosen and rejected texts are equal (after stripping) or empty teaches nothing
        and is skipped.
    """
    rows, skipped = [], 0
    for p in pairs:
        chosen, rejected = p.chosen.strip(), p.rejected.strip()
        if not chosen or not rejected or chosen == rejected:
            skipped += 1
            continue
        rows.append({"prompt": [m.model_dump() for m in p.prompt],
                     "chosen": [{"role": "assistant", "content": p.chosen}],
                     "rejected": [{"role": "assistant", "content": p.rejected}]})
    return rows, skipped


def _chat_ids(tokenizer, messages: list[dict]) -> list[int]:
    out = tokenizer.apply_chat_template(messages, tokenize=True)
    ids = out["input_ids"] if hasattr(out, "keys") else out
    return list(ids[0] if ids and isinstance(ids[0], list) else ids)


def drop_identical_after_truncation(rows: Sequence[dict], tokenizer, max_length: int) -> tuple[list[dict], int]:
    """Rows whose chosen and rejected sequences still differ as token ids after TRL's truncation
    (``truncation_mode="keep_start"``: prompt + answer cut to ``max_length`` tokens), and how many
    were dropped (field case D1, ``identical_after_truncation``): such a pair has a zero DPO gradient.

    Args:
        rows: from :func:`dpo_rows` (conversational ``prompt``/``chosen``/``rejected``).
        tokenizer: the model's tokenizer (its chat template renders the sequences).
        max_length: ``sft.dpo.max_length``.
    """
    kept, dropped = [], 0
    for row in rows:
        chosen = _chat_ids(tokenizer, [*row["prompt"], *row["chosen"]])[:max_length]
        rejected = _chat_ids(tokenizer, [*row["prompt"], *row["rejected"]])[:max_length]
        if chosen == rejected:
            dropped += 1
        else:
            kept.append(row)
    if dropped:
        log.warning("DPO: %d preference pairs are identical after truncation to %d tokens; dropped", dropped,
                    max_length)
    return kept, dropped


def dpo_args(cfg: DpoConfig, out_dir: Path, seed: int) -> dict:
    """Keyword arguments for TRL's ``DPOConfig`` from our :class:`DpoConfig`."""
    return dict(beta=cfg.beta, loss_type=[cfg.loss_type], learning_rate=cfg.learning_rate,
                num_train_epochs=cfg.epochs, max_steps=cfg.max_steps, per_device_train_batch_size=cfg.batch_size,
                max_length=cfg.max_length, lr_scheduler_type="cosine",
                **{**common_args(out_dir, seed), "save_steps": 10})


def run_dpo(model_path: str, adapter_dir: Path | None, rows: list[dict], cfg: DpoConfig, lora: LoraConfig,
            out_dir: Path, seed: int, dtype: str = "auto", progress: bool = True,
            callbacks: Sequence[TrainerCallback] = (), load_in_4bit: bool = False) -> TrainResult:
    """Train with DPO; save the adapter to ``out_dir/adapter``. Resumes from ``out_dir/checkpoints``.

    Args:
        adapter_dir: the SFT adapter to continue (also the frozen reference), or None for a fresh
            LoRA on the base (then the reference is the base).
        rows: from :func:`dpo_rows`.
    Raises:
        ConfigError: ``rows`` is empty.
    """
    from datasets import Dataset
    from peft import PeftModel
    from trl import DPOConfig, DPOTrainer

    from sdk.models import load_model

    if not rows:
        raise ConfigError("no DPO rows: the sources wrote no usable preference pairs",
                          "add a feedback source with preference pairs, or turn DPO off (--set sft.dpo.enabled=false)")
    model, tokenizer = load_model(model_path, dtype=dtype, load_in_4bit=load_in_4bit)
    peft_cfg = None
    if adapter_dir is not None:
        model = PeftModel.from_pretrained(model, str(adapter_dir), is_trainable=True)
    else:
        peft_cfg = peft_config(lora)
    trainer = DPOTrainer(model=model, args=DPOConfig(**dpo_args(cfg, out_dir, seed)),
                         train_dataset=Dataset.from_list(rows), processing_class=tokenizer, peft_config=peft_cfg,
                         callbacks=[*progress_callbacks(out_dir, progress), *callbacks])
    history = train_and_save(trainer, out_dir)
    return TrainResult("dpo", steps=trainer.state.global_step, rows=len(rows), log_history=tuple(history))


def promote(sft_dir: Path, dpo_dir: Path) -> Path:
    """Make the DPO adapter the SFT stage's output: ``sft/adapter`` → ``sft/adapter_sft``,
    ``dpo/adapter`` → ``sft/adapter``. Returns the new adapter path (the caller writes its lineage)."""
    target, keep = sft_dir / "adapter", sft_dir / "adapter_sft"
    if keep.exists():
        shutil.rmtree(keep)
    target.rename(keep)
    shutil.copytree(dpo_dir / "adapter", target)
    return target
