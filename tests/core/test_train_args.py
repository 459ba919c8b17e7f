"""Trainer arguments chosen per device: CPU defaults here, GPU defaults by simulation."""

import pytest

from sdk.config import RlConfig
from sdk.errors import ConfigError
from sdk.train import common, grpo
from sdk.train.sft import answer_text, sft_rows
from sdk.sources import SftExample
from sdk.tasks import Message, Source, Task, UnitTestVerifier


def test_cpu_defaults():
    args = common.device_args()
    assert args == {"bf16": False, "use_cpu": True, "gradient_checkpointing": False}


def test_gpu_defaults(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    assert common.device_args() == {"bf16": True, "use_cpu": False, "gradient_checkpointing": True}


def test_vllm_only_with_gpu_and_package(monkeypatch):
    assert grpo.vllm_args("auto") == {"use_vllm": False}
    with pytest.raises(ConfigError, match="vLLM"):
        grpo.vllm_args("always")
    monkeypatch.setattr(grpo, "on_gpu", lambda: True)
    monkeypatch.setattr(grpo.importlib.util, "find_spec", lambda name: object())
    assert grpo.vllm_args("auto")["vllm_mode"] == "colocate"
    assert grpo.vllm_args("never") == {"use_vllm": False}


def test_grpo_args_map_config(tmp_path):
    args = grpo.grpo_args(RlConfig(max_steps=3, loss_type="dr_grpo", beta=0.04), tmp_path, seed=1)
    assert args["loss_type"] == "dr_grpo" and args["beta"] == 0.04 and args["max_steps"] == 3
    assert args["bf16"] is False and args["output_dir"].endswith("checkpoints")


def test_sft_rows_are_prompt_completion():
    task = Task(domain="d", prompt=(Message(role="user", content="write f"),),
                verifier=UnitTestVerifier(tests={"t.py": "x"}), reference="def f():\n    return 1\n",
                source=Source(connector="t"))
    ex = SftExample(messages=(Message(role="user", content="q"), Message(role="assistant", content="a")),
                    source=Source(connector="t"))
    bad = SftExample(messages=(Message(role="user", content="no answer"),), source=Source(connector="t"))
    rows = sft_rows([task, task.with_(reference=None)], [ex, bad])
    assert len(rows) == 2
    assert rows[0]["completion"][0]["content"] == answer_text(task) == "```python\ndef f():\n    return 1\n```"
    assert rows[1] == {"prompt": [{"role": "user", "content": "q"}], "completion": [{"role": "assistant", "content": "a"}]}
