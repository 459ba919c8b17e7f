"""Where SFT tokens/s comes from on CPU: TRL training steps timed on the same rows, settings interleaved.

Each setting gets its own trainer (same model, same LoRA r/alpha/targets, same rows); every round
runs one pass of each setting's batches (``trainer.training_step``: forward + backward), so load
drift on a shared machine hits all settings alike. Prints tokens/s (non-padding tokens) and the
ratio to TRL's defaults (gradient checkpointing on, batch 8, random order, LoRA dropout 0.05).

    .venv/bin/python bench/micro_sft.py [--rows 8] [--rounds 2]

Measured 2026-11-30 on the 2-core development machine (one other job at low priority), SmolLM2-135M,
8 HumanEval rows (2,451 tokens), 2 rounds:

    A TRL defaults (gc, bs8, random)         48.6 tok/s  ratio 1.00
    C no gc, bs4, length-grouped             83.3 tok/s  ratio 1.71
    D C + LoRA dropout 0                    114.4 tok/s  ratio 2.35
    E no gc, padding-free bs4                87.3 tok/s  ratio 1.79

tuneloop's defaults are C + D (no gradient checkpointing on CPU, ``sft.group_by_length``,
``lora.dropout: 0``); padding-free (E) is exact but no faster here, so it is opt-in.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]

# name: (gradient checkpointing, padding-free, batch size, LoRA dropout, length-grouped)
SETTINGS = {"A TRL defaults (gc, bs8, random)": (True, False, 8, 0.05, False),
            "C no gc, bs4, length-grouped": (False, False, 4, 0.05, True),
            "D C + LoRA dropout 0": (False, False, 4, 0.0, True),
            "E no gc, padding-free bs4": (False, True, 4, 0.05, False)}


def make_trainer(path: str, rows: list[dict], gc: bool, padding_free: bool, batch: int, dropout: float):
    """An SFTTrainer ready for ``training_step`` (optimizer built, train mode)."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from sdk.config import LoraConfig
    from sdk.models import load_model
    from sdk.train.common import peft_config

    model, tok = load_model(path, dtype="float32")
    args = SFTConfig(output_dir="/tmp/micro_sft", bf16=False, use_cpu=True, report_to=[], gradient_checkpointing=gc,
                     padding_free=padding_free, max_length=None, per_device_train_batch_size=batch)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tok,
                         peft_config=peft_config(LoraConfig(dropout=dropout)))
    trainer.create_optimizer_and_scheduler(num_training_steps=10)
    trainer.current_gradient_accumulation_steps = 1
    trainer.model.train()
    return trainer


def batches(trainer, grouped: bool) -> list[dict]:
    """The trainer's rows collated into its batch size; sorted by length first when ``grouped``."""
    ds = trainer.train_dataset
    idx = sorted(range(len(ds)), key=lambda i: len(ds[i]["input_ids"])) if grouped else list(range(len(ds)))
    bs = trainer.args.per_device_train_batch_size
    return [trainer.data_collator([{"input_ids": ds[i]["input_ids"], "labels": ds[i]["labels"]}
                                   for i in idx[s:s + bs]]) for s in range(0, len(idx), bs)]


def n_tokens(batch: dict) -> int:
    """Non-padding tokens of a collated batch."""
    return int(batch["attention_mask"].sum()) if "attention_mask" in batch else int(batch["position_ids"].shape[1])


def main(rows_n: int, rounds: int, path: str) -> None:
    from connectors.suites.jsonl_bench import HumanEvalSource
    from sdk.train.sft import sft_rows

    tasks = [t for t in HumanEvalSource({}, Path("."), "humaneval").read().tasks if t.reference][:rows_n]
    rows = sft_rows(tasks, [])
    trainers = {k: make_trainer(path, rows, *v[:4]) for k, v in SETTINGS.items()}
    data = {k: batches(trainers[k], SETTINGS[k][4]) for k in SETTINGS}
    secs, toks = dict.fromkeys(SETTINGS, 0.0), dict.fromkeys(SETTINGS, 0)
    for rnd in range(rounds):
        for k, trainer in trainers.items():
            t0 = time.perf_counter()
            for b in data[k]:
                trainer.training_step(trainer.model, b, None)
                toks[k] += n_tokens(b)
            secs[k] += time.perf_counter() - t0
        print(f"round {rnd}: " + ", ".join(f"{k.split()[0]} {toks[k] / secs[k]:.1f}" for k in SETTINGS), flush=True)
    base = toks[next(iter(SETTINGS))] / secs[next(iter(SETTINGS))]
    print(f"SmolLM2-135M, {len(rows)} HumanEval rows ({sum(n_tokens(b) for b in data[next(iter(SETTINGS))])} tokens), "
          f"{rounds} rounds")
    for k in SETTINGS:
        print(f"  {k:36s} {toks[k] / secs[k]:7.1f} tok/s  ratio {toks[k] / secs[k] / base:.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=8, help="HumanEval rows")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    from sdk.models import resolve_model
    from sdk.train.common import quiet_libraries

    quiet_libraries()
    main(a.rows, a.rounds, resolve_model("smollm2-135m", "~/.cache/tuneloop/models"))
