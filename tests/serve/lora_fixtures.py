"""Helpers (not a conftest: tests/feedback imports its own `conftest` by name): LoRA adapters with random
(non-zero) B matrices on the tiny model, built offline; import `adapters` into a test module to use the fixture."""

from __future__ import annotations

from pathlib import Path

import pytest


def make_adapter(base_dir: str, out: Path, seed: int, r: int = 4, scale: float = 0.5) -> Path:
    """Save a PEFT LoRA adapter for ``base_dir`` at ``out`` whose weights differ by ``seed``."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    model = get_peft_model(base, LoraConfig(r=r, lora_alpha=2 * r, target_modules=["q_proj", "v_proj", "o_proj"]))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, scale)
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def adapters(tiny_model_dir, tmp_path_factory) -> list[Path]:
    """Four adapters (seeds 1-4) for the tiny model."""
    root = tmp_path_factory.mktemp("adapters")
    return [make_adapter(tiny_model_dir, root / f"a{i}", seed=i) for i in range(1, 5)]
