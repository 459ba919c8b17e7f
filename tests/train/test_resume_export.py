"""Kill -9 an SFT run mid-training and re-run the same command: it resumes from the last
checkpoint and ends where an uninterrupted run ends. Merge and export: the merged model gives the
adapter model's logits and the export folder holds no adapter files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from tests.train.killable import finish, kill_when_stalled, start

JOB = Path(__file__).with_name("resume_job.py")


def _job(model: str, out: Path, marker: Path):
    return start(JOB, model, out, marker)


def test_sigkill_mid_sft_then_rerun_resumes_and_matches_an_uninterrupted_run(tiny_model_dir, tmp_path):
    from safetensors.torch import load_file

    out, marker = tmp_path / "killed", tmp_path / "stalled"
    kill_when_stalled(_job(tiny_model_dir, out, marker), marker)
    ckpts = sorted(p.name for p in (out / "checkpoints").glob("checkpoint-*"))
    assert ckpts == ["checkpoint-2"] and not (out / "adapter").exists(), "killed after step 3, before step 4's save"

    assert finish(_job(tiny_model_dir, out, marker)) == {"steps": 6}, "the same command finishes the run"
    history = json.loads((out / "log_history.json").read_text())
    assert [h["step"] for h in history if "loss" in h] == [1, 2, 3, 4, 5, 6], "steps 1-2 restored, 3-6 trained"

    clean_marker = tmp_path / "never-stall"
    clean_marker.write_text("")
    sys.path.insert(0, str(JOB.parent))
    try:
        from resume_job import (
            main,  # the same job in this process (no second interpreter start)
        )
    finally:
        sys.path.remove(str(JOB.parent))
    main(tiny_model_dir, str(tmp_path / "clean"), str(clean_marker))
    resumed = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    clean = load_file(str(tmp_path / "clean" / "adapter" / "adapter_model.safetensors"))
    assert resumed.keys() == clean.keys()
    for k in clean:
        assert torch.allclose(resumed[k], clean[k], atol=1e-6), f"{k}: resumed run diverged (data order or RNG)"


def test_merged_export_gives_the_adapter_logits_and_holds_no_adapter_files(tiny_model_dir, tmp_path):
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM

    from sdk.serve.export import export_merged

    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                           LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"))
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.2)  # B starts at 0: make the adapter change the outputs
    model.save_pretrained(tmp_path / "adapter")

    result = export_merged(tiny_model_dir, tmp_path / "adapter", tmp_path / "export", dtype="float32", echo=False)
    files = sorted(p.name for p in Path(result.path).iterdir())
    assert "config.json" in files and any(f.endswith(".safetensors") for f in files)
    assert not [f for f in files if f.startswith("adapter")], files

    ids = torch.tensor([[3, 17, 42, 99, 7, 250, 11]])
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    with torch.no_grad():
        plain = base(ids).logits
        adapted = PeftModel.from_pretrained(base, tmp_path / "adapter").eval()(ids).logits
        merged = AutoModelForCausalLM.from_pretrained(result.path).eval()(ids).logits
    assert (adapted - plain).abs().max() > 1e-3, "the adapter must matter for the comparison to mean anything"
    assert torch.allclose(merged, adapted, atol=1e-5), (merged - adapted).abs().max()
