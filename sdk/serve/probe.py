"""A probe of what a model answers (field case V3): teacher-forced log-probabilities of a fixed
prompt's tokens. Recorded from the trained model when a version is registered and recomputed by
the server for the version it loaded; :func:`sdk.serve.preflight.check_probe` compares them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PROBE_PROMPT = "def add(a, b):\n    return"


def probe_logprobs(model: Any, tokenizer: Any, prompt: str = PROBE_PROMPT) -> dict[str, Any]:
    """``{"prompt", "token_ids", "logprobs"}``: log p(token_i | tokens_<i) in nats for i >= 1.

    Args:
        model: a causal LM (a PEFT model with the adapter active, or a merged one), eval mode.
        tokenizer: its tokenizer.
    Returns:
        ``logprobs`` has ``len(token_ids) - 1`` floats.
    """
    import torch

    ids = tokenizer(prompt, return_tensors="pt").input_ids
    with torch.no_grad():
        logits = model(input_ids=ids.to(model.device)).logits.float()
    logp = torch.log_softmax(logits[0, :-1], dim=-1).gather(1, ids[0, 1:, None].to(logits.device))[:, 0]
    return {"prompt": prompt, "token_ids": ids[0].tolist(), "logprobs": [round(float(x), 6) for x in logp]}


def probe_adapter(base_dir: str | Path, adapter_dir: str | Path, prompt: str = PROBE_PROMPT) -> dict[str, Any]:
    """:func:`probe_logprobs` of ``base_dir`` with ``adapter_dir`` loaded (float32, CPU)."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    model = PeftModel.from_pretrained(base, str(adapter_dir)).eval()
    return probe_logprobs(model, AutoTokenizer.from_pretrained(base_dir), prompt)
