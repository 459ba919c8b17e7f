"""GRPO through TRL's ``GRPOTrainer``, continuing the SFT LoRA adapter, rewarded by the sandbox.

Each train task becomes one dataset row: ``prompt`` (chat messages) and ``task_json`` (the
whole :class:`~sdk.tasks.records.Task`), which TRL forwards to the reward function as a keyword
argument. The reward is any TRL-compatible callable (``sdk.rewards`` provides the sandboxed one).

Deviations from TRL defaults, and why: ``beta=0`` by default (no reference model: half the
memory, as in DAPO and TRL's own default); on CPU no vLLM and fp32. On GPU with vLLM installed,
generation runs in vLLM's ``colocate`` mode unless ``rl.use_vllm: never``. Groups whose rewards are all
equal are left out of the loss (``rl.drop_zero_std_groups``, :mod:`sdk.train.zero_std`), and the
shuffled data order depends only on seed and epoch, so a resumed run sees the prompts an uninterrupted
one would (:mod:`sdk.train.grpo_trainer`).
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from transformers import TrainerCallback

from sdk.train.config import RlConfig
from sdk.errors import ConfigError
from sdk.tasks.records import Task
from sdk.train.adaptive import adaptive_stream
from sdk.train.common import (
    common_args,
    on_gpu,
    progress_callbacks,
    train_and_save,
)
from sdk.train.curriculum import Item, is_default, order_rows
from sdk.train.difficulty import zero_std_summary
from sdk.train.midway import MidwaySaver, midway_step
from sdk.train.qlora import guards
from sdk.train.result import TrainResult

log = logging.getLogger(__name__)


def grpo_rows(tasks: Sequence[Task]) -> list[dict]:
    """``[{"prompt": [msg...], "task_json": str}]`` for tasks with an automatic verifier."""
    return [{"prompt": [m.model_dump() for m in t.prompt], "task_json": t.model_dump_json()}
            for t in tasks if t.verifier.kind != "reference"]


def grpo_items(tasks: Sequence[Task]) -> list[Item]:
    """Schedule items aligned with :func:`grpo_rows`: domain, measured difficulty and the prompt's
    length in characters (``short_to_long`` orders by it; for change tasks it grows with the
    retrieved or oracle context, ``metadata["context_chars"]``)."""
    return [Item(t.domain, t.difficulty, len(t.prompt[-1].content)) for t in tasks if t.verifier.kind != "reference"]


def vllm_args(mode: str) -> dict:
    """GRPOConfig vLLM arguments: colocated vLLM on a GPU when installed and allowed.

    Raises:
        ConfigError: ``use_vllm: always`` without a GPU or without vLLM installed.
    """
    available = on_gpu() and importlib.util.find_spec("vllm") is not None
    if mode == "always" and not available:
        raise ConfigError("rl.use_vllm is `always` but vLLM or a CUDA GPU is missing",
                          "install `tuneloop[gpu]` on a GPU machine, or set rl.use_vllm: auto")
    if mode == "never" or not available:
        return {"use_vllm": False}
    return {"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3}


def grpo_args(cfg: RlConfig, out_dir: Path, seed: int) -> dict:
    """Keyword arguments for TRL's ``GRPOConfig`` from our :class:`RlConfig`."""
    return dict(
        max_steps=cfg.max_steps, learning_rate=cfg.learning_rate, per_device_train_batch_size=cfg.batch_size,
        num_generations=cfg.num_generations, max_completion_length=cfg.max_completion_length,
        temperature=cfg.temperature, beta=cfg.beta, loss_type=cfg.loss_type, mask_truncated_completions=False,
        shuffle_dataset=is_default(cfg.order),  # a curriculum/mixing schedule is the data order
        **vllm_args(cfg.use_vllm), **{**common_args(out_dir, seed), "save_steps": cfg.save_steps})


def prompts_needed(cfg: RlConfig) -> int:
    """Prompts GRPO consumes in ``max_steps`` (one process: ``batch_size / num_generations`` per step,
    times ``WORLD_SIZE`` under ``accelerate launch``)."""
    import os

    return cfg.max_steps * (cfg.batch_size // cfg.num_generations) * int(os.environ.get("WORLD_SIZE", "1"))


def train_dataset(rows: list[dict], items: Sequence[Item], cfg: RlConfig, callbacks: Sequence[TrainerCallback],
                  seed: int):
    """The GRPO dataset for ``cfg.order``: ``(dataset, order summary, callbacks)``.

    Adaptive mixing gives a stream (:func:`sdk.train.adaptive.adaptive_stream`), its summary as a
    callable read after training, and the callbacks with the mixer's appended; every other order
    gives the :mod:`sdk.train.curriculum` schedule of the prompts ``max_steps`` consumes.

    Raises:
        ConfigError: adaptive mixing without a held-out monitor among ``callbacks``.
    """
    from datasets import Dataset

    if cfg.order.mixing == "adaptive":  # a stream whose domain weights follow held-out progress
        mixer, dataset, mixing_cb = adaptive_stream(rows, [x.domain for x in items], cfg.order, callbacks, seed)
        return dataset, mixer.summary, [*callbacks, mixing_cb]
    rows, order = order_rows(rows, items, cfg.order, prompts_needed(cfg), seed)
    return Dataset.from_list(rows), order, list(callbacks)


def _policy(model_path: str, adapter_dir: Path | None, lora_cfg, dtype: str, load_in_4bit: bool):
    """``(model, tokenizer, peft_config)``: the base with ``adapter_dir`` trainable, or the base and a
    fresh LoRA config for TRL to attach."""
    from peft import PeftModel

    from sdk.models import load_model
    from sdk.train.common import peft_config

    model, tokenizer = load_model(model_path, dtype=dtype, load_in_4bit=load_in_4bit)
    if adapter_dir is not None:
        return PeftModel.from_pretrained(model, str(adapter_dir), is_trainable=True), tokenizer, None
    return model, tokenizer, peft_config(lora_cfg)


def run_grpo(model_path: str, adapter_dir: Path | None, tasks: Sequence[Task], reward_fn: Callable,
             cfg: RlConfig, lora_cfg, out_dir: Path, seed: int, dtype: str = "auto",
             progress: bool = True, callbacks: Sequence[TrainerCallback] = (),
             rollout_func: Callable | None = None, load_in_4bit: bool = False) -> TrainResult:
    """Run GRPO; save the adapter to ``out_dir/adapter``.

    ``rollout_func``: a TRL rollout function for multi-turn tool rollouts
    (:class:`sdk.rollout.trl_rollout.ToolRolloutFunc`); None = TRL's single-turn generation.

    With ``cfg.order`` set, the dataset is the curriculum/mixing schedule (:mod:`sdk.train.curriculum`)
    of exactly the prompts ``max_steps`` consumes, and TRL's shuffling is off.

    Args:
        model_path: base model folder.
        adapter_dir: SFT adapter to continue (trainable), or None to start a fresh LoRA.
        tasks: train tasks with automatic verifiers.
        reward_fn: TRL reward callable ``(prompts, completions, **columns) -> list[float | None]``.
        callbacks: extra trainer callbacks (e.g. :class:`sdk.train.qlora.GradientFlowGuard`).
    Returns:
        :class:`TrainResult`; ``details`` holds the schedule summary (``order``) and the
        zero-variance group counts (``zero_std``: TRL's ``frac_reward_zero_std`` and the groups
        :mod:`sdk.train.zero_std` dropped when ``cfg.drop_zero_std_groups``).
    Raises:
        ConfigError: no task has an automatic verifier.
    """
    from trl import GRPOConfig

    from sdk.train.grpo_trainer import TuneloopGRPOTrainer

    rows = grpo_rows(tasks)
    if not rows:
        raise ConfigError("no GRPO rows: no train task has an automatic verifier",
                          "add a test-suite source (pytest, jsonl, humaneval), or turn GRPO off (--set rl.enabled=false)")
    items = grpo_items(tasks)
    dataset, order, callbacks = train_dataset(rows, items, cfg, callbacks, seed)
    model, tokenizer, peft_cfg = _policy(model_path, adapter_dir, lora_cfg, dtype, load_in_4bit)
    args = GRPOConfig(**grpo_args(cfg, out_dir, seed))
    midway = MidwaySaver(out_dir / "midway" / "adapter", midway_step(cfg.max_steps)) if cfg.eval_midway else None
    callbacks = [*guards(model), *callbacks, *([midway] if midway else [])]
    trainer = TuneloopGRPOTrainer(
        model=model, reward_funcs=reward_fn, args=args, train_dataset=dataset,
        processing_class=tokenizer, peft_config=peft_cfg, rollout_func=rollout_func,
        callbacks=[*progress_callbacks(out_dir, progress), *callbacks], drop_zero_std_groups=cfg.drop_zero_std_groups)
    history = train_and_save(trainer, out_dir)
    generated = int(sum(h.get("completions/mean_length", 0) * cfg.batch_size for h in history if "loss" in h))
    zero_std = zero_std_summary(history, cfg.batch_size // cfg.num_generations)
    if zero_std["zero_std_groups"] or zero_std["dropped_groups"]:
        log.info("GRPO: %d of %d groups had rewards with no variance (no gradient); %d left out of the loss",
                 zero_std["zero_std_groups"], zero_std["groups"], zero_std["dropped_groups"])
    return TrainResult("rl", steps=trainer.state.global_step, rows=len(rows), tokens_generated=generated,
                       log_history=tuple(history),
                       details={"order": order() if callable(order) else order, "zero_std": zero_std,
                                **({"midway": midway.record} if midway and midway.record else {})})
