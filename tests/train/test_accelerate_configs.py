"""The shipped accelerate configs parse with accelerate's own loader and use only launcher options."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs" / "accelerate").glob("*.yaml"))
EXPECTED = {"deepspeed_zero2.yaml": ("DEEPSPEED", 2), "deepspeed_zero3.yaml": ("DEEPSPEED", 3),
            "fsdp2.yaml": ("FSDP", None)}


def test_the_three_configs_are_shipped():
    assert sorted(p.name for p in CONFIGS) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_loads_and_every_nested_key_is_a_launch_option(path):
    from accelerate.commands.config.config_args import ClusterConfig
    from accelerate.commands.launch import launch_command_parser

    cfg = ClusterConfig.from_yaml_file(str(path))  # raises on unknown top-level keys
    kind, stage = EXPECTED[path.name]
    assert cfg.distributed_type.value == kind and cfg.mixed_precision == "bf16" and not cfg.use_cpu
    options = {o.lstrip("-") for a in launch_command_parser()._actions for o in a.option_strings}
    nested = cfg.deepspeed_config if kind == "DEEPSPEED" else cfg.fsdp_config
    assert nested, "the DeepSpeed/FSDP section must not be empty"
    unknown = [k for k in nested if k not in options]
    assert not unknown, f"{path.name}: keys accelerate launch does not know: {unknown}"
    if stage is not None:
        assert cfg.deepspeed_config["zero_stage"] == stage
    else:
        assert cfg.fsdp_config["fsdp_version"] == 2 and cfg.fsdp_config["fsdp_state_dict_type"] == "FULL_STATE_DICT"


def test_parser_accepts_the_documented_launch_command():
    from accelerate.commands.launch import launch_command_parser

    readme = (CONFIGS[0].parent / "README.md").read_text()
    lines = readme.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("accelerate launch"))
    command = lines[start]
    while command.endswith("\\"):
        start += 1
        command = command[:-1] + lines[start]
    args = launch_command_parser().parse_args(command.split()[2:])
    assert args.config_file == "configs/accelerate/deepspeed_zero2.yaml" and args.num_processes == 4
    assert args.module and args.training_script == "sdk.run.cli"
    assert args.training_script_args == ["run", "config.yaml", "--stage", "sft", "--stage", "rl"]
    assert yaml.safe_load((CONFIGS[0].parents[2] / args.config_file).read_text())["distributed_type"] == "DEEPSPEED"
