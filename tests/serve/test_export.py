"""Merge a LoRA adapter into a tiny random Llama built here (offline) and check the served folder."""

import json
import shlex

import pytest
import torch

from sdk.errors import ModelError
from sdk.serve.export import export_merged, lora_serve_command


@pytest.fixture(scope="module")
def base_and_adapter(tmp_path_factory):
    from peft import LoraConfig, get_peft_model
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["<pad>", "<eos>", "def", "f", "(", ")", ":", "return", "1", "x"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                      pad_token_id=0, eos_token_id=1, bos_token_id=None)
    base = LlamaForCausalLM(cfg)
    root = tmp_path_factory.mktemp("export")
    base_dir, adapter_dir = root / "base", root / "adapter"
    base.save_pretrained(base_dir)
    fast.save_pretrained(base_dir)
    peft_model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    with torch.no_grad():  # lora_B starts at zero; make the adapter change the model
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    peft_model.save_pretrained(adapter_dir)
    ids = torch.tensor([[2, 3, 4, 5, 6, 7, 8]])
    with torch.no_grad():
        tuned_logits = peft_model(ids).logits
        with peft_model.disable_adapter():
            base_logits = peft_model(ids).logits
    return base_dir, adapter_dir, ids, base_logits, tuned_logits


def test_export_merged_reproduces_the_adapter(tmp_path, base_and_adapter, capsys):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base_dir, adapter_dir, ids, base_logits, tuned_logits = base_and_adapter
    res = export_merged(base_dir, adapter_dir, tmp_path / "served", dtype="float32", served_name="acme")
    out = tmp_path / "served"
    assert res.form == "merged" and (out / "config.json").is_file()
    assert list(out.glob("*.safetensors")) and not (out / "adapter_config.json").exists()
    assert AutoTokenizer.from_pretrained(out)("def f").input_ids == [2, 3]
    merged = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    assert not any("lora" in n for n, _ in merged.named_parameters())
    with torch.no_grad():
        logits = merged(ids).logits
    torch.testing.assert_close(logits, tuned_logits, atol=1e-4, rtol=1e-4)
    assert not torch.allclose(logits, base_logits, atol=1e-3)
    assert shlex.split(res.command) == ["vllm", "serve", str(out.resolve()), "--served-model-name", "acme",
                                        "--dtype", "float32"]
    assert res.command in capsys.readouterr().out
    assert json.loads((out / "tuneloop_export.json").read_text())["form"] == "merged"


def test_export_refuses_bad_inputs(tmp_path, base_and_adapter):
    base_dir, adapter_dir, *_ = base_and_adapter
    with pytest.raises(ModelError, match="not a PEFT adapter"):
        export_merged(base_dir, base_dir, tmp_path / "o1")
    with pytest.raises(ModelError, match="no config.json"):
        export_merged(adapter_dir, adapter_dir, tmp_path / "o2")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(ModelError, match="not empty"):
        export_merged(base_dir, adapter_dir, tmp_path / "full")
    with pytest.raises(ModelError, match="unknown export dtype"):
        export_merged(base_dir, adapter_dir, tmp_path / "o3", dtype="int3")


def test_lora_serve_command_rounds_rank_up(base_and_adapter):
    base_dir, adapter_dir, *_ = base_and_adapter
    res = lora_serve_command(base_dir, adapter_dir, "acme")
    args = shlex.split(res.command)
    assert args[:3] == ["vllm", "serve", str(base_dir.resolve())]
    assert args[args.index("--lora-modules") + 1] == f"acme={adapter_dir.resolve()}"
    assert args[args.index("--max-lora-rank") + 1] == "8"     # r=4 rounds up to vLLM's smallest accepted rank
    with pytest.raises(ModelError):
        lora_serve_command(base_dir, base_dir)
