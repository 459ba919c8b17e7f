"""The serving preflight path runs field cases V1–V4 on every version before it answers: the CPU server
on load (the registered probe compared with the loaded model's, zero or duplicated LoRA payloads
refused) and ``vllm_command`` before it prints vLLM's command line; and the registry's database going away
while serving (the last routes keep serving, the failure is logged)."""

from __future__ import annotations

import shutil

import pytest
from fastapi.testclient import TestClient

from tests.serve.lora_fixtures import adapters  # noqa: F401 - fixture
from sdk.serve.multi import MultiAdapterModel
from sdk.serve.preflight import ServeError, adapter_digest, adapter_tensors, preflight_adapter
from sdk.serve.probe import probe_adapter
from sdk.serve.routes import RoutedAdapter, RoutedName, RouteTable, vllm_command
from sdk.serve.server import RouteKeeper, create_server


def routed(number: int, path, probe: dict | None = None, sha: str | None = None) -> RoutedAdapter:
    extra = {"probe_prompt": probe["prompt"], "probe": tuple(probe["logprobs"])} if probe else {}
    return RoutedAdapter(name="support", number=number, path=str(path), sha256=sha or adapter_digest(path), rank=4,
                         **extra)


def routes(base: str, *adapters: RoutedAdapter) -> RouteTable:
    return RouteTable(application="bot", base_model=base, adapters=adapters,
                      names=(RoutedName(name="support", production=adapters[0].number),))


def zeroed_copy(src, dst):
    """A copy of the adapter whose every tensor is zero (a sync that ships nothing)."""
    from safetensors.torch import save_file

    shutil.copytree(src, dst)
    save_file({k: t.zero_() for k, t in adapter_tensors(dst).items()}, str(dst / "adapter_model.safetensors"))
    return dst


def test_a_version_whose_probe_differs_from_the_registered_one_is_not_served(tiny_model_dir, adapters):
    good = probe_adapter(tiny_model_dir, adapters[0])
    wrong = {**good, "logprobs": [x - 0.3 for x in probe_adapter(tiny_model_dir, adapters[1])["logprobs"]]}
    model = MultiAdapterModel(tiny_model_dir)
    client = TestClient(create_server(model, RouteKeeper(lambda: routes(
        tiny_model_dir, routed(1, adapters[0], good), routed(2, adapters[1], wrong)), model)))
    assert sorted(model.loaded) == ["support@1"]  # support@1's registered probe matched on load
    assert "support@2: the served adapter is not the trained one: probe log-probabilities differ" in \
        model.problems["support@2"]
    listed = client.get("/v1/models").json()
    assert [m["id"] for m in listed["data"]] == ["support@1"] and "probe" in listed["refused"]["support@2"]
    r = client.post("/v1/chat/completions", json={"model": "support@2", "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 404 and "loaded: support@1" in r.json()["error"]["message"]


def test_v4_zero_or_duplicated_lora_payloads_are_not_served(tiny_model_dir, adapters, tmp_path):
    zero = zeroed_copy(adapters[0], tmp_path / "zero")
    with pytest.raises(ServeError, match="support@9: the weight sync sent .* all zero"):
        preflight_adapter(zero, label="support@9")
    twin = shutil.copytree(adapters[0], tmp_path / "twin")  # the same weights published as a new version
    model = MultiAdapterModel(tiny_model_dir)
    model.sync(routes(tiny_model_dir, routed(1, adapters[0]), routed(2, twin), routed(3, zero), routed(4, adapters[1])))
    assert sorted(model.loaded) == ["support@1", "support@4"]
    assert "same as support@1's" in model.problems["support@2"] and "all zero" in model.problems["support@3"]


def test_vllm_command_runs_the_preflight_on_every_version(tiny_model_dir, adapters, tmp_path):
    ok = routes(tiny_model_dir, routed(1, adapters[0]), routed(2, adapters[1]))
    assert "--max-loras 2" in vllm_command(ok)
    bad = routes(tiny_model_dir, routed(1, adapters[0]), routed(2, adapters[1], sha="0" * 64),
                 routed(3, shutil.copytree(adapters[0], tmp_path / "twin")))
    with pytest.raises(ServeError) as err:
        vllm_command(bad)
    assert "not starting vLLM" in err.value.what
    assert "support@2: the folder" in err.value.what and "not the registered adapter" in err.value.what
    assert "support@3: its LoRA tensors are the same as support@1's" in err.value.what
    assert "--max-loras 3" in vllm_command(bad, check=False)  # the plain command, for a caller that checked


def test_route_table_carries_the_registered_probe_to_the_server(tiny_model_dir, adapters, tmp_path):
    from feedback.registration import registration_from_folder
    from feedback.registry import register
    from feedback.routes import route_table
    from feedback.store import create_api_key, sessions

    url = f"sqlite:///{tmp_path / 'store.db'}"
    with sessions(url)() as s:
        create_api_key(s, "bot")
        register(s, "bot", "support", registration_from_folder(adapters[2], base_model=tiny_model_dir, probe=True),
                 actor="ann")
        table = route_table(s, "bot")
    (a,) = table.adapters
    assert a.probe and a.probe == tuple(probe_adapter(tiny_model_dir, adapters[2])["logprobs"])
    model = MultiAdapterModel(tiny_model_dir)
    model.sync(table)
    assert sorted(model.loaded) == ["support@1"] and not model.problems


def test_registry_database_unreachable_while_serving_keeps_the_last_routes_and_logs(tiny_model_dir, adapters,
                                                                                   tmp_path, caplog):
    """The routes read straight from the registry's database (``tuneloop adapters serve`` without
    --collector); the database folder disappears (a lost mount): serving goes on, the failure is logged."""
    import logging

    import sqlalchemy as sa
    from sqlalchemy.orm import Session
    from sqlalchemy.pool import NullPool

    from feedback.registration import registration_from_folder
    from feedback.registry import register
    from feedback.routes import route_table
    from feedback.store import create_api_key, sessions
    from feedback.transitions import promote
    from sdk.run.lineage import Lineage, write_lineage

    folder = shutil.copytree(adapters[3], tmp_path / "v1")
    write_lineage(folder, Lineage(stage="sft", base_model=tiny_model_dir, promotable=True))
    (tmp_path / "db").mkdir()
    url = f"sqlite:///{tmp_path / 'db' / 'store.db'}"
    with sessions(url)() as s:
        create_api_key(s, "bot")
        register(s, "bot", "support", registration_from_folder(folder), actor="ann")
        promote(s, "bot", "support", 1, actor="ann", reason="first")

    def from_database():
        engine = sa.create_engine(url, poolclass=NullPool)
        try:
            with Session(engine) as s:
                return route_table(s, "bot")
        finally:
            engine.dispose()

    model = MultiAdapterModel(tiny_model_dir)
    client = TestClient(create_server(model, RouteKeeper(from_database, model)))
    body = {"model": "support", "messages": [{"role": "user", "content": "def add(a, b):"}], "max_tokens": 3}
    (tmp_path / "db").rename(tmp_path / "db-gone")
    with caplog.at_level(logging.WARNING):
        assert client.post("/v1/tuneloop/refresh").json()["refreshed"] is False
    assert "registry unreachable (OperationalError" in caplog.text and "serving the last known routes (support@1)" \
        in caplog.text
    assert client.post("/v1/chat/completions", json=body).json()["model"] == "support@1"
    assert "unable to open database file" in client.get("/healthz").json()["registry_error"]
    (tmp_path / "db-gone").rename(tmp_path / "db")
    assert client.post("/v1/tuneloop/refresh").json()["refreshed"] is True
    assert client.get("/healthz").json()["registry_error"] is None
