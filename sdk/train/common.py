"""Shared training wiring: device defaults, LoRA config, callbacks, saving.

Run bookkeeping (stage cost, markers) lives in :mod:`sdk.run.bookkeeping`, free of torch.

tuneloop writes no training loop: SFT and GRPO run through TRL's trainers with PEFT LoRA.
This module only chooses their arguments. On CPU: fp32 (``bf16=False``), ``use_cpu=True``,
no gradient checkpointing, no vLLM (measured in shared/DESIGN.md). On a CUDA GPU: bf16 where
supported and gradient checkpointing on.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from sdk.train.config import LoraConfig
from sdk.train.quiet import quiet_warnings
from sdk.jsonl import write_json


def on_gpu() -> bool:
    """True when a CUDA device is visible to torch."""
    import torch

    return torch.cuda.is_available()


def device_args() -> dict[str, Any]:
    """Trainer arguments that depend on the hardware (CPU vs CUDA GPU)."""
    import torch

    if on_gpu():
        return {"bf16": torch.cuda.is_bf16_supported(), "use_cpu": False, "gradient_checkpointing": True}
    return {"bf16": False, "use_cpu": True, "gradient_checkpointing": False}


def common_args(out_dir: Path, seed: int) -> dict[str, Any]:
    """Arguments shared by SFT and GRPO configs: logging every step, no hub, no external trackers."""
    return {
        "output_dir": str(out_dir / "checkpoints"),
        "logging_steps": 1,
        "save_strategy": "steps",
        "save_steps": 10,
        "save_total_limit": 2,
        "report_to": [],
        "seed": seed,
        "data_seed": seed,
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        **device_args(),
    }


def peft_config(cfg: LoraConfig):
    """A PEFT ``LoraConfig`` for a causal LM from our :class:`sdk.config.LoraConfig`."""
    from peft import LoraConfig as PeftLoraConfig

    return PeftLoraConfig(r=cfg.r, lora_alpha=cfg.alpha, lora_dropout=cfg.dropout,
                          target_modules=cfg.target_modules, task_type="CAUSAL_LM")


def last_checkpoint(out_dir: Path) -> str | None:
    """The newest ``checkpoint-N`` folder under ``out_dir/checkpoints``, for resuming after a crash."""
    ckpts = sorted((out_dir / "checkpoints").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    return str(ckpts[-1]) if ckpts else None


def progress_callbacks(out_dir: Path, show: bool = True) -> list[TrainerCallback]:
    """A JSONL log under ``out_dir/log.jsonl``; with ``show``, a rich live display (TRL's
    ``RichProgressCallback``), else plain progress lines on the ``tuneloop.progress`` logger (the CLI
    prints them on stderr when it is not a terminal; silent where nothing listens)."""
    from trl.trainer.callbacks import RichProgressCallback

    live = [RichProgressCallback()] if show else [PlainProgressCallback(out_dir.name)]
    return [JsonlLogCallback(out_dir / "log.jsonl"), *live]


class PlainProgressCallback(TrainerCallback):
    """One line per logged step at most every ``every_s`` seconds (and the last step): the stage,
    step of max, loss or reward, elapsed and estimated time left — for logs and CI, where a live
    display is noise. Lines go to the ``tuneloop.progress`` logger at INFO."""

    def __init__(self, label: str, every_s: float = 10.0) -> None:
        self.label, self.every_s = label, every_s
        self._start = self._last = 0.0

    def on_train_begin(self, args, state, control, **kwargs):  # noqa: D102 - TrainerCallback hook
        """Start the clock and say how many steps come, so a slow first step (GRPO's generation and
        sandbox scoring on CPU can take minutes) is not mistaken for a hang (new-user trial)."""
        import logging

        self._start = self._last = time.monotonic()
        logging.getLogger("tuneloop.progress").info(
            f"{self.label}: {state.max_steps or '?'} steps; a line follows each logged step (the first may take minutes)")

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: D102 - TrainerCallback hook
        """Log one progress line when enough time passed or the run ends."""
        import logging

        now, step, total = time.monotonic(), state.global_step, state.max_steps or 0
        if not logs or (now - self._last < self.every_s and step < total):
            return
        self._last = now
        done = now - self._start
        left = f", ~{done / step * (total - step):.0f} s left" if step and total > step else ""
        metric = next((f"{k} {logs[k]:.4g}" for k in ("loss", "reward", "train_loss") if isinstance(logs.get(k), (int, float))), "")
        logging.getLogger("tuneloop.progress").info(f"{self.label}: step {step}/{total} {metric} ({done:.0f} s{left})")


class JsonlLogCallback(TrainerCallback):
    """Append every trainer log entry (with its step) to a JSONL file, so a run can be followed
    with ``tail -f run_dir/<stage>/log.jsonl`` and inspected after a crash."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: D102 - TrainerCallback hook
        """Append the log entry with its step to the JSONL file."""
        if logs and state.is_world_process_zero:
            with self.path.open("a") as fh:
                fh.write(json.dumps({"step": state.global_step, "max_steps": state.max_steps,
                                     "time": time.time(), **logs}, default=str) + "\n")


def train_and_save(trainer, out_dir: Path) -> list[dict]:
    """Quiet the trainer, train (resuming from the newest checkpoint under ``out_dir``), save the
    adapter to ``out_dir/adapter`` and the log history to ``out_dir/log_history.json``.

    Returns the trainer's log history (one dict per logged step, TRL's keys).
    """
    quiet_trainer(trainer)
    trainer.train(resume_from_checkpoint=last_checkpoint(out_dir))
    trainer.save_model(str(out_dir / "adapter"))
    history = trainer.state.log_history
    write_json(out_dir / "log_history.json", history)
    return history


def quiet_trainer(trainer) -> None:
    """Drop transformers' ``PrinterCallback`` (it prints every log dict when tqdm is off);
    the logs still reach ``trainer.state.log_history`` and the rich progress display."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)


def quiet_libraries() -> None:
    """Silence library chatter (deprecation warnings, per-dataset-map bars) during our stages."""
    import datasets
    from transformers.utils import logging as hf_logging

    quiet_warnings()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    datasets.disable_progress_bars()
