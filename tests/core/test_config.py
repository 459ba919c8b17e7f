"""Config validation: misspelled keys, cross-field checks, overrides, missing files."""

import pytest

from sdk.config import load_config, parse_config
from sdk.errors import ConfigError

SRC = [{"type": "pytest", "domain": "acme"}]


def test_misspelled_key_names_the_fix():
    with pytest.raises(ConfigError) as err:
        parse_config({"sources": SRC, "rl": {"max_stpes": 3}})
    assert "rl.max_stpes" in err.value.what and "did you mean `max_steps`" in err.value.what


def test_a_missing_required_key_says_what_it_is_and_where_to_add_it():
    with pytest.raises(ConfigError) as err:
        parse_config({"sources": [{"type": "pytest", "options": {"path": "."}}]})
    assert "`sources.0.domain` is required: domain for the source's tasks" in err.value.what
    assert "add `domain: ...` there" in err.value.what and "Field required" not in err.value.what


def test_group_size_must_divide_batch():
    with pytest.raises(ConfigError) as err:
        parse_config({"sources": SRC, "rl": {"batch_size": 6, "num_generations": 4}})
    assert "multiple of rl.num_generations" in err.value.what


def test_empty_sources_is_an_error():
    with pytest.raises(ConfigError, match="sources"):
        parse_config({})


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("sources: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_folder_and_non_utf8_config_say_what_is_wrong(tmp_path):
    """A folder or a non-UTF-8 file given as the config is a ConfigError with its fix, not a traceback."""
    with pytest.raises(ConfigError, match="is a folder, not a YAML file"):
        load_config(tmp_path)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"run_dir: caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8 text") as err:
        load_config(latin)
    assert "UTF-8" in err.value.fix


def test_overrides_and_relative_paths(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("run_dir: out\nsources:\n  - {type: pytest, domain: acme}\n")
    cfg = load_config(path, {"rl.max_steps": 2, "sft.enabled": False})
    assert cfg.rl.max_steps == 2 and cfg.sft.enabled is False
    assert cfg.run_path == (tmp_path / "out").resolve()


def test_shipped_configs_validate():
    """Every YAML under examples/ is a RunConfig, a LoopConfig where it names a ``store_url``, or the
    production-loop example trainer's settings (the accelerate configs under configs/ are checked by
    tests/train/test_accelerate_configs.py)."""
    from pathlib import Path

    import yaml

    from feedback.loop import load_loop_config

    root = Path(__file__).resolve().parents[2]
    configs = sorted(p for ext in ("*.yaml", "*.yml") for p in (root / "examples").rglob(ext))
    names = {str(p.relative_to(root)) for p in configs}
    assert {"examples/quickstart/config.yaml", "examples/tool_agent/agent.yaml"} <= names, names
    kinds = []
    for path in configs:
        data = yaml.safe_load(path.read_text()) or {}
        if "store_url" in data:
            kinds.append(type(load_loop_config(path)).__name__)  # raises naming the bad key
        elif path.parent.name == "production_loop" and path.name.startswith("trainer"):
            # the example trainer's own settings (examples/production_loop/trainer.py reads these keys)
            assert set(data) <= {"max_steps", "learning_rate", "lora_r", "gate_tokens"}, (path, data)
            kinds.append("LoopConfig")
        else:
            kinds.append(type(load_config(path)).__name__)
    assert set(kinds) <= {"RunConfig", "LoopConfig"} and kinds.count("RunConfig") >= 2, kinds
