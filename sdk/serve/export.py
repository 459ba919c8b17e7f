"""Export a tuned adapter in the forms vLLM serves, and print the exact ``vllm serve`` command.

Two forms (vLLM's documented ways to serve a fine-tune):

* **merged** (:func:`export_merged`): the LoRA weights folded into the base with PEFT's
  ``merge_and_unload``, saved as a plain Hugging Face folder (``config.json``,
  ``*.safetensors``, tokenizer, generation config). Served with
  ``vllm serve <folder> --served-model-name <name>``; no LoRA overhead at inference.
* **adapter** (:func:`lora_serve_command`): the base plus the unmerged adapter, served with
  ``vllm serve <base> --enable-lora --lora-modules <name>=<adapter>``; several adapters can
  share one base.

A 4-bit (QLoRA) base cannot be merged exactly: the base is reloaded here in ``dtype`` (not
quantised) before merging. vLLM itself is not needed to export; it is the ``gpu`` extra.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from sdk.errors import ModelError
from sdk.types import Frozen

_DTYPES = ("float32", "bfloat16", "float16")
_VLLM_LORA_RANKS = (8, 16, 32, 64, 128, 256, 512)


class ExportResult(Frozen):
    """Where the servable model went and how to serve it.

    Attributes:
        path: the exported folder (merged form) or the adapter folder (adapter form).
        command: the exact shell command that serves it with vLLM.
        form: ``merged`` or ``adapter``.
    """

    path: str
    command: str
    form: str


def export_merged(base_path: str | Path, adapter_path: str | Path, out_dir: str | Path, dtype: str = "bfloat16",
                  served_name: str = "tuneloop", echo: bool = True, release: dict | None = None) -> ExportResult:
    """Merge a PEFT LoRA adapter into its base model and save a folder vLLM can serve.

    Args:
        base_path: the base model folder (the one the adapter was trained on).
        adapter_path: the PEFT adapter folder (``adapter_config.json`` + weights).
        out_dir: where the merged model is written (created; must be empty or absent).
        dtype: weights dtype of the saved model: ``float32``, ``bfloat16`` or ``float16``.
        served_name: the model name clients will send in OpenAI-compatible requests.
        echo: print the command.
        release: what the caller checked before releasing the adapter (stage, gate verdict,
            override), written into ``tuneloop_export.json`` under ``release``.
    Returns:
        An :class:`ExportResult` with ``form="merged"``.
    Raises:
        ModelError: a folder is missing, ``out_dir`` is not empty, an unknown dtype, or loading
            or merging fails (the message names the step).
    """
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base_path, adapter_path, out_dir = Path(base_path), Path(adapter_path), Path(out_dir)
    _check_inputs(base_path, adapter_path, out_dir, dtype)
    try:
        base = AutoModelForCausalLM.from_pretrained(base_path, dtype=getattr(torch, dtype))
        merged = PeftModel.from_pretrained(base, adapter_path).merge_and_unload()
    except Exception as exc:  # noqa: BLE001 - any load failure becomes one ModelError with its step
        raise ModelError(f"could not load and merge adapter {adapter_path} into {base_path}: {exc}",
                         "pass the base model folder the adapter was trained on") from exc
    out_dir.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(out_dir, safe_serialization=True)
    tok_src = adapter_path if (adapter_path / "tokenizer_config.json").is_file() else base_path
    AutoTokenizer.from_pretrained(tok_src).save_pretrained(out_dir)
    (out_dir / "tuneloop_export.json").write_text(json.dumps(
        {"form": "merged", "base": str(base_path.resolve()), "adapter": str(adapter_path.resolve()),
         "dtype": dtype, "release": release}, indent=2))
    for path in out_dir.iterdir():  # safetensors writes 0600: a served folder is read by other users
        if path.is_file():
            path.chmod(0o644)
    command = serve_command(out_dir, served_name, dtype)
    if echo:
        print(f"merged model written to {out_dir}\nserve it with:\n  {command}")
    return ExportResult(path=str(out_dir), command=command, form="merged")


def serve_command(model_dir: str | Path, served_name: str = "tuneloop", dtype: str = "bfloat16") -> str:
    """``vllm serve`` command for a plain (merged) model folder, shell-quoted."""
    args = ["vllm", "serve", str(Path(model_dir).resolve()), "--served-model-name", served_name, "--dtype", dtype]
    return shlex.join(args)


def lora_serve_command(base_path: str | Path, adapter_path: str | Path, served_name: str = "tuneloop",
                       max_lora_rank: int | None = None) -> ExportResult:
    """``vllm serve`` command for the base plus the unmerged adapter (vLLM's LoRA serving).

    ``max_lora_rank`` defaults to the adapter's ``r`` rounded up to a value vLLM accepts
    (8, 16, 32, ...; vLLM refuses adapters above its limit).

    Raises:
        ModelError: the adapter folder has no ``adapter_config.json``.
    """
    cfg_path = Path(adapter_path) / "adapter_config.json"
    if not cfg_path.is_file():
        raise ModelError(f"{adapter_path} is not a PEFT adapter folder (no adapter_config.json)",
                         "pass the `adapter` folder of an SFT or RL stage, e.g. runs/x/rl/adapter")
    r = int(json.loads(cfg_path.read_text()).get("r", 16))
    rank = max_lora_rank or next((v for v in _VLLM_LORA_RANKS if v >= r), r)
    args = ["vllm", "serve", str(Path(base_path).resolve()), "--enable-lora", "--lora-modules",
            f"{served_name}={Path(adapter_path).resolve()}", "--max-lora-rank", str(rank)]
    return ExportResult(path=str(Path(adapter_path)), command=shlex.join(args), form="adapter")


def _check_inputs(base: Path, adapter: Path, out: Path, dtype: str) -> None:
    if dtype not in _DTYPES:
        raise ModelError(f"unknown export dtype {dtype!r}", f"use one of {', '.join(_DTYPES)}")
    if not (base / "config.json").is_file():
        raise ModelError(f"{base} is not a model folder (no config.json)", "pass the base model's local folder")
    if not (adapter / "adapter_config.json").is_file():
        raise ModelError(f"{adapter} is not a PEFT adapter folder (no adapter_config.json)",
                         "pass the `adapter` folder of an SFT or RL stage, e.g. runs/x/rl/adapter")
    if out.exists() and any(out.iterdir()):
        raise ModelError(f"export folder {out} is not empty",
                         "pass --force to replace it, or --out NEW_FOLDER (tuneloop export), or delete the old export")
