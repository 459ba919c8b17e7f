"""4-bit QLoRA guard (CPU, with bitsandbytes when installed) and the gradient-flow guard."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from sdk.errors import ModelError
from sdk.train.qlora import (
    GradientFlowGuard,
    QLoraGuard,
    disable_cpu_repacking,
    missing_gradients,
    repacked_modules,
)


def _lora_grads(model, batch):
    model.zero_grad()
    model.train()
    model(**batch, labels=batch["input_ids"]).loss.backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if "lora_A" in n}


@pytest.fixture(scope="module")
def fp_model_dir(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2)  # 4-bit blocks need dims >= 64
    path = tmp_path_factory.mktemp("q") / "m"
    LlamaForCausalLM(cfg).save_pretrained(path)
    return path


def _qlora(path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    q = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.float32)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, quantization_config=q)
    model = get_peft_model(model, LoraConfig(r=4, target_modules="all-linear", task_type="CAUSAL_LM"))
    torch.manual_seed(1)
    for n, p in model.named_parameters():
        if "lora_" in n:
            torch.nn.init.normal_(p, std=0.1)
    return model


def test_guard_keeps_4bit_gradients_exact_after_an_eval_forward(fp_model_dir):
    bnb = pytest.importorskip("bitsandbytes")
    batch = {"input_ids": torch.randint(0, 256, (1, 12), generator=torch.Generator().manual_seed(0))}
    reference = _lora_grads(_qlora(fp_model_dir), batch)

    guarded = _qlora(fp_model_dir)
    assert disable_cpu_repacking(guarded) == 14
    guarded.eval()
    with torch.no_grad():
        guarded(**batch)
    assert repacked_modules(guarded) == []
    got = _lora_grads(guarded, batch)
    for name, g in reference.items():
        assert torch.allclose(got[name], g, rtol=1e-4, atol=1e-6), name

    unguarded = _qlora(fp_model_dir)
    if not next(m for m in unguarded.modules() if isinstance(m, bnb.nn.Linear4bit)).support_avx512bf16_for_cpu:
        pytest.skip("this CPU has no AVX512-BF16: bitsandbytes never repacks here")
    unguarded.eval()
    with torch.no_grad():
        unguarded(**batch)
    assert len(repacked_modules(unguarded)) == 14, "the eval-mode forward repacked every 4-bit layer"
    with pytest.raises(ModelError, match="repacked"):
        QLoraGuard().on_train_begin(None, None, None, model=unguarded)


def test_gradient_flow_guard_catches_a_cut_graph(tiny_model_dir):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                           LoraConfig(r=2, target_modules="all-linear", task_type="CAUSAL_LM"))
    batch = {"input_ids": torch.tensor([[5, 6, 7, 8]])}
    model(**batch, labels=batch["input_ids"]).loss.backward()
    assert missing_gradients(model) == []
    state = SimpleNamespace(global_step=0)
    GradientFlowGuard().on_pre_optimizer_step(None, state, None, model=model)  # fine

    model.zero_grad(set_to_none=True)
    layer0 = model.base_model.model.model.layers[0]
    hook = layer0.register_forward_hook(lambda mod, inp, out: out.detach() if torch.is_tensor(out) else
                                        (out[0].detach(), *out[1:]))
    out = model(**batch, labels=batch["input_ids"])
    hook.remove()
    out.loss.backward()
    missing = missing_gradients(model)
    assert missing and all("layers.0." in n for n in missing), "the layer before the cut gets nothing"
    with pytest.raises(ModelError, match="no gradient"):
        GradientFlowGuard().on_pre_optimizer_step(None, state, None, model=model)
    GradientFlowGuard(steps=1).on_pre_optimizer_step(None, SimpleNamespace(global_step=1), None, model=model)


@pytest.mark.gpu
def test_qlora_on_gpu_keeps_gradients_after_generation(fp_model_dir):
    """On CUDA: a 4-bit model with LoRA, guarded, generates in eval mode and then still trains
    with the same LoRA gradients as before generating (the repacking path is CPU-only; this
    checks that nothing else in the 4-bit path breaks gradients after eval-mode use)."""
    pytest.importorskip("bitsandbytes")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    q = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16)
    model = AutoModelForCausalLM.from_pretrained(fp_model_dir, quantization_config=q, device_map={"": 0})
    model = get_peft_model(model, LoraConfig(r=4, target_modules="all-linear", task_type="CAUSAL_LM"))
    for n, p in model.named_parameters():
        if "lora_B" in n:
            torch.nn.init.normal_(p, std=0.1)
    disable_cpu_repacking(model)
    batch = {"input_ids": torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(0)).cuda()}
    before = _lora_grads(model, batch)
    model.eval()
    with torch.no_grad():
        model.generate(**batch, max_new_tokens=4, do_sample=False)
    after = _lora_grads(model, batch)
    assert repacked_modules(model) == [] and missing_gradients(model) == []
    for name, g in before.items():
        assert torch.allclose(after[name].float(), g.float(), rtol=1e-3, atol=1e-5), name
