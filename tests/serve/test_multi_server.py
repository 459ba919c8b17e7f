"""The CPU multi-adapter server: per-request versions, aliases, sticky canary, 404s, outages, V3."""

from __future__ import annotations

import logging
import shutil

import pytest
from fastapi.testclient import TestClient

from tests.serve.lora_fixtures import adapters  # noqa: F401 - fixture
from sdk.errors import ModelError
from sdk.serve.multi import MultiAdapterModel
from sdk.serve.preflight import ServeError, adapter_digest, check_probe
from sdk.serve.probe import probe_adapter
from sdk.serve.routes import RoutedAdapter, RoutedName, RouteTable, canary_bucket, resolve, vllm_command
from sdk.serve.server import RouteKeeper, create_server


def table(base: str, adapters, production=1, canary=None, fraction=0.0) -> RouteTable:
    return RouteTable(application="bot", base_model=base,
                      adapters=tuple(RoutedAdapter(name="support", number=i + 1, path=str(p), sha256=adapter_digest(p),
                                                   rank=4) for i, p in enumerate(adapters)),
                      names=(RoutedName(name="support", production=production, canary=canary,
                                        canary_fraction=fraction),))


class Source:
    """A route source that can be switched to failing (the registry going down)."""

    def __init__(self, t: RouteTable) -> None:
        self.table, self.down = t, False

    def __call__(self) -> RouteTable:
        if self.down:
            raise ConnectionError("registry at 127.0.0.1:8700 refused the connection")
        return self.table


@pytest.fixture(scope="module")
def served(tiny_model_dir, adapters):
    model = MultiAdapterModel(tiny_model_dir)
    source = Source(table(tiny_model_dir, adapters[:3], production=1, canary=2, fraction=0.5))
    keeper = RouteKeeper(source, model)
    return TestClient(create_server(model, keeper)), source, keeper, model


def ask(client, model, user=None, **kw):
    body = {"model": model, "messages": [{"role": "user", "content": "def add(a, b):"}], "max_tokens": 6, **kw}
    if user:
        body["user"] = user
    return client.post("/v1/chat/completions", json=body)


def test_each_version_answers_as_itself(served, tiny_model_dir, adapters):
    client, _, _, _ = served
    answers = {}
    for n in (1, 2, 3):
        r = ask(client, f"support@{n}")
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["model"] == body["tuneloop"]["version"] == r.headers["x-tuneloop-version"] == f"support@{n}"
        assert body["tuneloop"]["adapter_sha256"] == adapter_digest(adapters[n - 1])
        answers[n] = body["choices"][0]["message"]["content"]
    assert len(set(answers.values())) > 1, "different adapters must be able to answer differently"
    assert ask(client, "support@production").json()["model"] == "support@1"
    assert ask(client, "support@canary").json()["model"] == "support@2"


def test_versions_match_a_model_with_only_that_adapter(served, tiny_model_dir, adapters):
    client, _, _, model = served
    for n in (1, 3):
        served_probe = client.get("/v1/tuneloop/probe", params={"model": f"support@{n}"}).json()
        alone = probe_adapter(tiny_model_dir, adapters[n - 1])
        check_probe(alone["logprobs"], served_probe["logprobs"], atol=1e-4)
    other = probe_adapter(tiny_model_dir, adapters[3])
    with pytest.raises(ServeError):
        check_probe(other["logprobs"], client.get("/v1/tuneloop/probe", params={"model": "support@1"}).json()["logprobs"])


def test_canary_split_is_sticky_and_near_the_fraction(served):
    client, _, _, _ = served
    users = [f"user-{i}" for i in range(40)]
    first = {u: ask(client, "support", user=u).json()["model"] for u in users}
    assert all(ask(client, "support", user=u).json()["model"] == first[u] for u in users[:8])  # sticky
    expected = {u: "support@2" if canary_bucket("support", u) < 0.5 else "support@1" for u in users}
    assert first == expected and 10 <= list(first.values()).count("support@2") <= 30
    assert ask(client, "support").json()["model"] == "support@1"  # anonymous: production


def test_unknown_model_is_404_listing_what_is_loaded(served):
    client, _, _, _ = served
    r = ask(client, "support@9")
    assert r.status_code == 404
    msg = r.json()["error"]["message"]
    assert "support@1, support@2, support@3" in msg and "support@production -> support@1" in msg
    assert ask(client, "billing@production").status_code == 404
    listed = client.get("/v1/models").json()
    assert [m["id"] for m in listed["data"]] == ["support@1", "support@2", "support@3"]


def test_registry_outage_keeps_last_routes_serving_and_logs(served, caplog):
    client, source, keeper, _ = served
    source.down = True
    try:
        with caplog.at_level(logging.WARNING):
            assert client.post("/v1/tuneloop/refresh").json()["refreshed"] is False
        assert "registry unreachable" in caplog.text and "last known routes" in caplog.text
        assert ask(client, "support@production").json()["model"] == "support@1"
        assert "refused the connection" in client.get("/healthz").json()["registry_error"]
    finally:
        source.down = False
    assert client.post("/v1/tuneloop/refresh").json()["refreshed"] is True


def test_route_change_loads_new_and_drops_old_versions(tiny_model_dir, adapters, tmp_path):
    model = MultiAdapterModel(tiny_model_dir)
    source = Source(table(tiny_model_dir, adapters[:2]))
    keeper = RouteKeeper(source, model, cache=tmp_path / "routes.json")
    client = TestClient(create_server(model, keeper))
    source.table = table(tiny_model_dir, adapters[:4], production=4).model_copy(
        update={"adapters": table(tiny_model_dir, adapters[:4]).adapters[2:]})
    keeper.refresh()
    assert sorted(model.loaded) == ["support@3", "support@4"]
    assert ask(client, "support@production").json()["model"] == "support@4"
    source.down = True  # a restart while the registry is down serves the cached routes
    again = RouteKeeper(source, MultiAdapterModel(tiny_model_dir), cache=tmp_path / "routes.json")
    assert sorted(again.model.loaded) == ["support@3", "support@4"]
    with pytest.raises(ServeError, match="no routes are cached"):
        RouteKeeper(source, MultiAdapterModel(tiny_model_dir))


def test_v3_a_folder_that_is_not_the_registered_adapter_is_not_served(tiny_model_dir, adapters, tmp_path):
    stale = tmp_path / "stale"
    shutil.copytree(adapters[0], stale)  # "step 0" adapter copied where the registry expects adapter 2
    t = table(tiny_model_dir, [adapters[0], adapters[1]])
    bad = t.adapters[1].model_copy(update={"path": str(stale)})
    model = MultiAdapterModel(tiny_model_dir)
    RouteKeeper(Source(t.model_copy(update={"adapters": (t.adapters[0], bad)})), model)
    assert sorted(model.loaded) == ["support@1"]
    assert "not the registered adapter" in model.problems["support@2"]
    with pytest.raises(ModelError):
        resolve(t, "support@2", loaded=set(model.loaded))


def test_vllm_command_from_routes(tiny_model_dir, adapters):
    cmd = vllm_command(table(tiny_model_dir, adapters[:3]).model_copy(update={
        "adapters": tuple(a.model_copy(update={"rank": r}) for a, r in zip(table(tiny_model_dir, adapters[:3]).adapters,
                                                                             (4, 16, 24)))}))
    assert "--enable-lora --max-loras 3 --max-lora-rank 32" in cmd and f"support@3={adapters[2]}" in cmd


@pytest.mark.gpu
def test_vllm_serves_every_version(tiny_model_dir, adapters):
    """vLLM multi-LoRA from the routes: each version answers as itself (needs vLLM and a GPU)."""
    vllm = pytest.importorskip("vllm")
    from vllm.lora.request import LoRARequest

    t = table(tiny_model_dir, adapters[:2])
    llm = vllm.LLM(model=tiny_model_dir, enable_lora=True, max_loras=len(t.adapters), max_lora_rank=8)
    outs = [llm.generate(["def add(a, b):"], vllm.SamplingParams(max_tokens=4, temperature=0),
                         lora_request=LoRARequest(a.label, i + 1, a.path)) for i, a in enumerate(t.adapters)]
    assert all(o[0].outputs for o in outs)
