"""Attribution: a LangChain app calling the CPU server through ChatOpenAI, recorded by the callback,
has every interaction tied to the version that answered, with no extra code in the app."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fastapi.testclient import TestClient

from feedback.attribution import feedback_by_version, parse_label
from feedback.callback import FeedbackCallbackHandler
from feedback.registration import registration_from_folder
from feedback.registry import register
from feedback.routes import route_table
from feedback.service import create_app
from feedback.store import create_api_key, sessions
from feedback.transitions import promote, start_canary
from sdk.serve.multi import MultiAdapterModel
from sdk.serve.server import RouteKeeper, create_server
from tests.serve.lora_fixtures import adapters  # noqa: F401 - fixture


def test_parse_label():
    assert parse_label("support@12") == ("support", 12)
    assert parse_label("support@production") is None and parse_label(None) is None


@pytest.fixture
def stack(tmp_path, tiny_model_dir, adapters):
    """Store with support@1 (production) and support@2 (canary, 50 %), collector, server."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    make = sessions(url)
    with make() as s:
        key = create_api_key(s, "bot")
        for path in adapters[:2]:
            reg = replace(registration_from_folder(path, base_model=tiny_model_dir), gate_passed=True)
            register(s, "bot", "support", reg, actor="ann")
        promote(s, "bot", "support", 1, actor="ann", reason="first")
        start_canary(s, "bot", "support", 2, 0.5, {"min_samples": 3, "max_drop": 0.1}, actor="ann", reason="try")
    collector = TestClient(create_app(url, upgrade=False), headers={"X-API-Key": key})

    def routes():
        with make() as s:
            return route_table(s, "bot")
    model = MultiAdapterModel(tiny_model_dir)
    server = TestClient(create_server(model, RouteKeeper(routes, model)))
    return make, collector, server


def test_every_interaction_is_attributed_to_the_serving_version(stack):
    ChatOpenAI = pytest.importorskip("langchain_openai").ChatOpenAI
    make, collector, server = stack
    llm = ChatOpenAI(model="support", base_url="http://testserver/v1", api_key="unused", http_client=server,
                     max_tokens=4, temperature=0)
    served = {}
    for i in range(12):
        cb = FeedbackCallbackHandler(collector, user_id=f"user-{i}", raise_on_error=True)
        msg = llm.invoke("def add(a, b):", config={"callbacks": [cb]}, user=f"user-{i}")
        served[f"user-{i}"] = msg.response_metadata["model_name"]
        cb.rate(_last_run(cb, collector), 1 if served[f"user-{i}"] == "support@2" else -1)
    assert set(served.values()) == {"support@1", "support@2"}
    with make() as s:
        per_version = feedback_by_version(s, "bot", "support")
    assert {n: len(v) for n, v in per_version.items()} == {
        n: list(served.values()).count(f"support@{n}") for n in (1, 2)}
    assert all(r.good == (r.number == 2) for rows in per_version.values() for r in rows)
    metrics = collector.get("/v1/adapters/support/metrics").json()
    assert metrics["2"]["positive_rate"] == 1.0 and metrics["1"]["positive_rate"] == 0.0


def _last_run(cb: FeedbackCallbackHandler, collector) -> str:
    """The external id (LangChain run id) of the interaction the callback just recorded."""
    import sqlalchemy as sa

    from feedback.store import Interaction

    with collector.app.state.sessions() as s:
        return s.scalars(sa.select(Interaction.external_id).order_by(Interaction.id.desc()).limit(1)).one()
