"""Field cases V1-V4 (CASES.md, "Serving adapters") as named tests of sdk.serve.preflight."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from tests.serve.lora_fixtures import adapters  # noqa: F401 - fixture
from sdk.serve.preflight import (ServeError, adapter_digest, check_adapter_servable, check_probe, check_weight_sync,
                                 lora_rank_plan)


def test_v1_rank_pattern_sets_the_rank_and_names_the_module():
    cfg = {"r": 16, "rank_pattern": {"q_proj": 64}}
    plan = lora_rank_plan(cfg)
    assert (plan.rank, plan.module, plan.server_rank) == (64, "q_proj", 64)
    assert lora_rank_plan({"r": 12}).server_rank == 16  # rounded up to the allowed set
    with pytest.raises(ServeError, match=r"rank 64 \(set by rank_pattern\['q_proj'\]\).*maximum LoRA rank 32") as e:
        lora_rank_plan(cfg, server_max=32)
    assert "--max-lora-rank 64" in e.value.fix


def test_v1_rank_above_every_allowed_rank_is_unservable():
    with pytest.raises(ServeError, match="unservable as an adapter, export merged"):
        lora_rank_plan({"r": 768})


def test_v2_saved_embeddings_and_head_are_refused_with_merged_export():
    with pytest.raises(ServeError, match="embed_tokens, lm_head") as e:
        check_adapter_servable({"r": 8, "modules_to_save": ["embed_tokens", "lm_head"]})
    assert "export it merged" in e.value.fix
    check_adapter_servable({"r": 8, "modules_to_save": ["score"]})  # a classifier head is fine


def test_v3_digest_changes_with_weights_and_empty_copy_is_refused(adapters, tmp_path):
    a, b = adapters[0], adapters[1]
    assert adapter_digest(a) == adapter_digest(a) != adapter_digest(b)
    empty = tmp_path / "copied"
    shutil.copytree(a, empty)
    (empty / "adapter_model.safetensors").write_bytes(b"")
    with pytest.raises(ServeError, match="no adapter weights"):
        adapter_digest(empty)
    (empty / "adapter_model.safetensors").unlink()
    with pytest.raises(ServeError, match="no adapter weights"):
        adapter_digest(empty)
    json.loads((a / "adapter_config.json").read_text())  # untouched


def test_v3_probe_mismatch_stops_with_a_message():
    check_probe([-1.0, -2.0], [-1.0, -2.0004])
    with pytest.raises(ServeError, match="not the trained one"):
        check_probe([-1.0, -2.0], [-1.0, -2.5])
    with pytest.raises(ServeError, match="probe length"):
        check_probe([-1.0], [-1.0, -2.0])


def test_v4_weight_sync_that_sends_nothing_is_refused():
    base_only = {"model.layers.0.q_proj.weight": torch.ones(2, 2)}
    with pytest.raises(ServeError, match="no adapter tensor"):
        check_weight_sync(base_only, None)
    zeros = {**base_only, "q_proj.lora_A.weight": torch.zeros(2, 2), "q_proj.lora_B.weight": torch.zeros(2, 2)}
    with pytest.raises(ServeError, match="all zero"):
        check_weight_sync(zeros, None)
    moved = {"q_proj.lora_A.weight": torch.ones(2, 2), "q_proj.lora_B.weight": torch.full((2, 2), 0.1)}
    first = check_weight_sync(moved, None)
    with pytest.raises(ServeError, match="same adapter tensors"):
        check_weight_sync(moved, first)
    moved2 = {**moved, "q_proj.lora_B.weight": torch.full((2, 2), 0.2)}
    assert check_weight_sync(moved2, first) != first
