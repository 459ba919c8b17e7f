"""CPU serving throughput: 4 adapters loaded on one base and switched per request, against one
merged model (and one unmerged adapter), on the same prompts.

Every request generates exactly ``--tokens`` new tokens (greedy, min = max), batch 1, as the CPU
server does. Measured as pairs: each prompt is answered by every setting back to back (the order
rotated per prompt), and each setting's tokens/s is divided by the merged model's from the same few
seconds, so load drift on a shared machine cancels; ``--rounds`` repeats the prompts. Prints the
median tokens/s per setting and the median (and quartiles) of the per-prompt ratios to the merged
model. The 4-adapter setting answers request i with adapter i mod 4 (a switch on every request).
Under heavy shared load run it with ``BENCH_THREADS=1`` (two torch threads that wait on each
other at every parallel region are many times slower than one when the cores are oversubscribed).

    .venv/bin/python bench/serve.py [--model smollm2-135m] [--prompts 8] [--tokens 32] [--rounds 2]

``--model tiny`` builds the tiny random model (seconds; for a smoke run). Adapters are r=16 LoRA on
all attention projections with random B matrices (the weights do not matter for speed).

Measured 2026-12-01 on the 2-core development machine under heavy shared load, twice,
``BENCH_THREADS=1 bench/serve.py --prompts 6 --tokens 16 --rounds 3`` (SmolLM2-135M, 18 pairs, 9 min
each); ratio to merged: median [25%, 75%]:

    setting                                    run 1 (load 11-12)        run 2 (load 13-14)
    merged model (1 adapter folded in)         2.3 tok/s  1.00           2.0 tok/s  1.00
    1 adapter loaded (PEFT, unmerged)          2.6 tok/s  1.10 [0.88, 1.28]   1.7 tok/s  0.87 [0.80, 1.02]
    4 adapters loaded, switched per request    2.7 tok/s  0.99 [0.88, 1.12]   1.8 tok/s  0.90 [0.75, 1.02]

Four adapters switched per request run at 0.90-0.99 of one merged model at batch 1 on CPU, the
same as one unmerged adapter within the noise (switching itself costs nothing measurable; what
costs is the unmerged LoRA's extra matmuls, up to about 10 %). Under this load the quartiles span
about ±12 %; re-measure on a quiet machine for a tighter figure. The earlier 0.65 (summed totals of
unpaired rounds, load average 9.5) was load drift, not adapter cost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]

PROMPTS = ["Write a Python function that reverses a string.", "What is a closure in Python?",
           "Explain list comprehensions with an example.", "How do I read a file line by line?",
           "Write a function that checks whether a number is prime.", "What does `yield` do?",
           "How do I sort a dict by value?", "Write a function that merges two sorted lists."]


def make_adapters(base: str, root: Path, n: int, r: int) -> list[Path]:
    """``n`` random LoRA adapters for ``base`` under ``root``."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    out = []
    for i in range(n):
        torch.manual_seed(i)
        model = get_peft_model(AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32),
                               LoraConfig(r=r, lora_alpha=2 * r, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.normal_(0, 0.01)
        model.save_pretrained(root / f"a{i}")
        out.append(root / f"a{i}")
    return out


def one_request(model, label: str, prompt: str, tokens: int) -> float:
    """Completion tokens/s of one request (exactly ``tokens`` new tokens, greedy)."""
    t0 = time.perf_counter()
    n = model.generate(label, [{"role": "user", "content": prompt}], tokens, min_tokens=tokens).completion_tokens
    return n / (time.perf_counter() - t0)


def paired_rounds(settings: dict, prompts: list[str], tokens: int, rounds: int) -> tuple[dict, dict]:
    """Each prompt is answered by every setting back to back (order rotated per prompt), so each
    setting's tokens/s is divided by the merged model's from the same few seconds.

    Returns ({setting: [tok/s per request]}, {setting: [ratio to the merged model per prompt]}).
    """
    names = list(settings)
    speeds: dict[str, list[float]] = {k: [] for k in names}
    ratios: dict[str, list[float]] = {k: [] for k in names}
    for r in range(rounds):
        for i, prompt in enumerate(prompts):
            k = r * len(prompts) + i
            order = names[k % len(names):] + names[:k % len(names)]
            got = {}
            for name in order:
                model, labels = settings[name]
                got[name] = one_request(model, labels[k % len(labels)], prompt, tokens)
            for name in names:
                speeds[name].append(got[name])
                ratios[name].append(got[name] / got[names[0]])
        print(f"  round {r + 1}/{rounds}: " + ", ".join(
            f"{statistics.median(ratios[n][-len(prompts):]):.2f}" for n in names[1:]) + " (median ratios so far)",
            flush=True)
    return speeds, ratios


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    """(25th, 50th, 75th percentile) of ``xs``."""
    q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else [xs[0]] * 3
    return q[0], q[1], q[2]


def main() -> None:
    """Parse arguments, build the three servers, time them interleaved, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rank", type=int, default=16)
    args = ap.parse_args()
    import torch

    from sdk.models import build_tiny_model, resolve_model
    from sdk.serve.multi import MultiAdapterModel
    from sdk.serve.preflight import adapter_digest
    from sdk.serve.routes import RoutedAdapter

    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", torch.get_num_threads())))
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    base = str(build_tiny_model(tmp / "tiny")) if args.model == "tiny" else resolve_model(args.model, "~/.cache/tuneloop/models")
    paths = make_adapters(base, tmp, 4, args.rank)
    routed = [RoutedAdapter(name="bench", number=i + 1, path=str(p), sha256=adapter_digest(p), rank=args.rank)
              for i, p in enumerate(paths)]
    four, one, merged = MultiAdapterModel(base), MultiAdapterModel(base), MultiAdapterModel(base)
    for a in routed:
        four.load(a)
    one.load(routed[0])
    merged.load(routed[0])
    merged._model = merged._model.merge_and_unload()  # plain transformers model, LoRA folded in
    merged._model.set_adapter = lambda _name: None
    settings = {"merged model (1 adapter folded in)": (merged, ["bench@1"]),
                "1 adapter loaded (PEFT, unmerged)": (one, ["bench@1"]),
                "4 adapters loaded, switched per request": (four, [a.label for a in routed])}
    prompts = (PROMPTS * (args.prompts // len(PROMPTS) + 1))[:args.prompts]
    for model, labels in settings.values():  # warm-up: every adapter once
        for label in labels:
            one_request(model, label, prompts[0], 4)
    load_before = os.getloadavg()[0]
    speeds, ratios = paired_rounds(settings, prompts, args.tokens, args.rounds)
    print(f"model {args.model}, {args.prompts} prompts x {args.tokens} tokens x {args.rounds} rounds, batch 1, "
          f"{torch.get_num_threads()} threads, load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"  {'setting':<42} {'tok/s (median)':>14}  ratio to merged: median [25%, 75%] of {len(prompts) * args.rounds} pairs")
    for name in settings:
        lo, med, hi = quartiles(ratios[name])
        print(f"  {name:<42} {statistics.median(speeds[name]):14.1f}  {med:.2f} [{lo:.2f}, {hi:.2f}]")

if __name__ == "__main__":
    main()
