"""The production loop end to end on CPU with the tiny model:

collector (API keys, /v1/routes) → CPU multi-adapter server (routes read through the collector's
API) → a LangChain app (ChatOpenAI + the feedback callback, no version handling of its own) →
simulated users rating → `tuneloop loop` passes (train, register, canary, the canary rule) →
automatic promotion of a better candidate, automatic rollback of a worse one, and a manual
production rollback through the API. Checks the registry, the audit log and that every feedback
row is attributed to the version that answered it. The trainer writes real adapters with a gate
verdict (the pipeline itself is covered by tests/core/test_pipeline_e2e.py).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import sqlalchemy as sa
import yaml
from fastapi.testclient import TestClient

from feedback.callback import FeedbackCallbackHandler
from feedback.loop import load_loop_config, run_pass
from feedback.publish import verify_served
from feedback.registry import get_version
from feedback.registry_models import AdapterVersion, InteractionVersion
from feedback.service import create_app
from feedback.store import FeedbackEvent, Interaction, create_api_key, sessions
from sdk.serve.multi import MultiAdapterModel
from sdk.serve.preflight import ServeError
from sdk.serve.routes import RouteTable
from sdk.serve.server import RouteKeeper, create_server
from tests.feedback.test_loop import FakeTrainer

USERS = [f"user-{i}" for i in range(24)]


class App:
    """The application: ChatOpenAI against the server, the callback recording into the collector."""

    def __init__(self, collector: TestClient, server: TestClient) -> None:
        chat_openai = pytest.importorskip("langchain_openai").ChatOpenAI
        self.llm = chat_openai(model="support", base_url="http://testserver/v1", api_key="unused", http_client=server,
                               max_tokens=4, temperature=0)
        self.collector, self.seen = collector, {}  # run id -> version the app was answered by

    def ask_and_rate(self, user: str, likes: dict[str, bool]) -> str:
        cb = FeedbackCallbackHandler(self.collector, user_id=user, conversation_id=f"conv-{user}", raise_on_error=True)
        msg = self.llm.invoke("def add(a, b):", config={"callbacks": [cb]}, user=user)
        version = msg.response_metadata["model_name"]
        with self.collector.app.state.sessions() as s:
            run_id = s.scalars(sa.select(Interaction.external_id).order_by(Interaction.id.desc()).limit(1)).one()
        self.seen[run_id] = version
        cb.rate(run_id, 1 if likes.get(version, True) else -1)
        return version


@pytest.fixture
def world(tmp_path, tiny_model_dir):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with sessions(url)() as s:
        key = create_api_key(s, "bot")
    collector = TestClient(create_app(url, upgrade=False), headers={"X-API-Key": key})
    path = tmp_path / "loop.yaml"
    path.write_text(yaml.safe_dump({"store_url": url, "application": "bot", "adapter": "support",
                                    "run_config": "run.yaml", "min_new_feedback": 10,
                                    "canary": {"fraction": 0.5, "min_samples": 5, "max_drop": 0.1}}))
    return url, collector, load_loop_config(path), FakeTrainer(tiny_model_dir, [True, True, True])


def seed_feedback(collector: TestClient, n: int) -> None:
    for i in range(n):
        r = collector.post("/v1/interactions", headers={"Idempotency-Key": f"seed-{i}"}, json={
            "external_id": f"seed-{i}", "model": "base", "messages": [
                {"role": "user", "content": "def add(a, b):"}, {"role": "assistant", "content": "return a + b"}]})
        collector.post("/v1/feedback", headers={"Idempotency-Key": f"seed-fb-{i}"},
                       json={"interaction_id": r.json()["id"], "rating": 1})


def test_collector_server_callback_loop_canary_promotion_and_rollback(world, tiny_model_dir):
    url, collector, cfg, trainer = world
    seed_feedback(collector, 10)
    assert run_pass(cfg, trainer).action == "promoted-first"  # support@1

    model = MultiAdapterModel(tiny_model_dir)
    keeper = RouteKeeper(lambda: RouteTable.model_validate(collector.get("/v1/routes").json()), model)
    server = TestClient(create_server(model, keeper))
    app = App(collector, server)
    for u in USERS[:10]:
        assert app.ask_and_rate(u, {}) == "support@1"

    assert run_pass(cfg, trainer).action == "canary-started"  # support@2, trained from support@1
    server.post("/v1/tuneloop/refresh")
    with sessions(url, upgrade=False)() as s:  # V3 after publishing: listed, same digest, same probe
        v2 = get_version(s, "bot", "support", 2)
    verify_served(server, v2)
    with pytest.raises(ServeError, match="not the trained one"):
        verify_served(server, replace(v2, probe={**v2.probe, "logprobs": [x - 0.5 for x in v2.probe["logprobs"]]}))
    with pytest.raises(ServeError, match="registry"):
        verify_served(server, replace(v2, adapter_sha256="0" * 64))
    while True:  # users like support@2 more; the rule waits until each side has 5 ratings
        for u in USERS:
            app.ask_and_rate(u, {"support@1": False, "support@2": True})
        result = run_pass(cfg, trainer)
        if result.action != "canary-wait":
            break
    assert result.action == "canary-promote", result.detail
    server.post("/v1/tuneloop/refresh")
    assert app.ask_and_rate(USERS[0], {}) == "support@2"

    assert run_pass(cfg, trainer).action == "canary-started"  # support@3 (enough new feedback)
    server.post("/v1/tuneloop/refresh")
    for _ in range(2):
        for u in USERS:
            app.ask_and_rate(u, {"support@2": True, "support@3": False})
    result = run_pass(cfg, trainer)
    assert result.action == "canary-rollback" and "dropped 1.000" in result.detail

    r = collector.post("/v1/adapters/support/rollback", json={"reason": "support tickets", "by": "oncall"})
    assert r.status_code == 200 and r.json()["label"] == "support@1"
    server.post("/v1/tuneloop/refresh")
    assert app.ask_and_rate(USERS[1], {}) == "support@1"
    bad = collector.post("/v1/adapters/support/rollback", json={"reason": "again", "by": "oncall"})
    assert bad.status_code == 409 and "no earlier one" in bad.json()["error"]

    states = {v["label"]: v["state"] for v in collector.get("/v1/adapters").json()}
    assert states == {"support@1": "production", "support@2": "retired", "support@3": "retired"}
    log = [(e["number"], e["action"], e["actor"].split(" (")[0]) for e in collector.get("/v1/adapters/support/events").json()]
    assert [x for x in log if x[1] != "register"] == [
        (1, "promote", "tuneloop loop"), (2, "canary", "tuneloop loop"), (2, "promote", "tuneloop loop"),
        (1, "retire", "tuneloop loop"), (3, "canary", "tuneloop loop"), (3, "canary-rollback", "tuneloop loop"),
        (1, "rollback", "oncall"), (2, "rollback", "oncall")]

    with sessions(url, upgrade=False)() as s:  # every rated interaction the app made is attributed correctly
        rows = s.execute(sa.select(Interaction.external_id, AdapterVersion.name, AdapterVersion.number)
                         .join(FeedbackEvent, FeedbackEvent.interaction_id == Interaction.id)
                         .join(InteractionVersion, InteractionVersion.interaction_id == Interaction.id)
                         .join(AdapterVersion, AdapterVersion.id == InteractionVersion.version_id)).all()
        unattributed = s.scalar(sa.select(sa.func.count()).select_from(Interaction).outerjoin(
            InteractionVersion, InteractionVersion.interaction_id == Interaction.id)
            .where(InteractionVersion.interaction_id.is_(None)))
    assert {ext: f"{n}@{k}" for ext, n, k in rows} == app.seen
    assert unattributed == 10  # only the seeded pre-registry interactions
    page = collector.get("/v1/adapters/support/canary").text
    assert "support@3" in page and "canary-rollback" in page
