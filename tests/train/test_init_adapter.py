"""sft.init_adapter continues an existing adapter (the loop trains from production): same LoRA
shape as the parent, every LoRA B moved away from the parent's."""

from __future__ import annotations

import json

from sdk.train.config import SftConfig
from tests.serve.lora_fixtures import make_adapter


def test_sft_continues_the_given_adapter(tiny_model_dir, tmp_path):
    from safetensors.torch import load_file

    from sdk.train.sft import run_sft

    parent = make_adapter(tiny_model_dir, tmp_path / "parent", seed=3, r=4)
    rows = [{"prompt": [{"role": "user", "content": f"add {i}"}],
             "completion": [{"role": "assistant", "content": f"return a + {i}"}]} for i in range(8)]
    cfg = SftConfig(max_steps=2, batch_size=4, init_adapter=str(parent), learning_rate=1e-2)
    result = run_sft(tiny_model_dir, rows, cfg, tmp_path / "sft", seed=0, progress=False)
    out = tmp_path / "sft" / "adapter"
    assert result.steps == 2
    assert json.loads((out / "adapter_config.json").read_text())["target_modules"] and \
        sorted(json.loads((out / "adapter_config.json").read_text())["target_modules"]) == ["o_proj", "q_proj", "v_proj"]
    before, after = load_file(str(parent / "adapter_model.safetensors")), load_file(str(out / "adapter_model.safetensors"))
    assert before.keys() == after.keys()
    moved = [k for k in before if "lora_B" in k and not (before[k] - after[k]).abs().max() < 1e-7]
    assert moved == [k for k in before if "lora_B" in k]
