"""The LangChain callback records calls into the collector; ratings attach later by run id."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from feedback.callback import FeedbackCallbackHandler
from feedback.service import create_app
from feedback.store import ChatMessage, FeedbackEvent, Interaction, create_api_key, sessions


@pytest.fixture
def setup(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with sessions(url)() as s:
        key = create_api_key(s, "bot")
    client = TestClient(create_app(url, upgrade=False), headers={"X-API-Key": key})
    return url, client


def test_chat_call_is_recorded_and_rated_by_run_id(setup):
    url, client = setup
    handler = FeedbackCallbackHandler(client, conversation_id="c9", user_id="u1")
    model = FakeListChatModel(responses=["use tl.add(a, b)"])
    run_id = uuid.uuid4()
    out = model.invoke([SystemMessage("be terse"), HumanMessage("how to add?")],
                       config={"callbacks": [handler], "run_id": run_id})
    assert out.content == "use tl.add(a, b)"
    assert handler.rate(run_id, -1, comment="wrong helper") is not None
    assert handler.errors == []
    with sessions(url, upgrade=False)() as s:
        inter = s.scalars(sa.select(Interaction)).one()
        assert (inter.external_id, inter.conversation_id, inter.user_id) == (str(run_id), "c9", "u1")
        assert inter.latency_ms is not None and inter.latency_ms >= 0 and inter.model
        roles = [(m.role, m.content) for m in s.scalars(sa.select(ChatMessage).order_by(ChatMessage.position))]
        assert roles == [("system", "be terse"), ("user", "how to add?"), ("assistant", "use tl.add(a, b)")]
        assert s.scalars(sa.select(FeedbackEvent)).one().rating == -1


def test_collector_down_never_breaks_the_application():
    import httpx

    handler = FeedbackCallbackHandler(httpx.Client(base_url="http://127.0.0.1:1"))
    model = FakeListChatModel(responses=["fine"])
    assert model.invoke("hi", config={"callbacks": [handler]}).content == "fine"
    assert len(handler.errors) == 1 and "ConnectError" in handler.errors[0]


def test_a_retried_rating_is_stored_once(setup):
    """Issue 20.5: `rate()` made a new idempotency key per call, so a retry stored the rating twice."""
    url, client = setup
    handler = FeedbackCallbackHandler(client)
    run_id = uuid.uuid4()
    FakeListChatModel(responses=["ok"]).invoke([HumanMessage("hi")], config={"callbacks": [handler], "run_id": run_id})
    first = handler.rate(run_id, 1, comment="good")
    assert handler.rate(run_id, 1, comment="good") == first, "the retry replays the stored rating"
    assert handler.rate(run_id, -1, comment="changed my mind") != first
    with sessions(url, upgrade=False)() as s:
        assert [e.rating for e in s.scalars(sa.select(FeedbackEvent).order_by(FeedbackEvent.id))] == [1, -1]
