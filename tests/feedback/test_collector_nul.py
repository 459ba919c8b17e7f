"""NUL characters in collector requests (hostile field input): PostgreSQL refuses U+0000 in text,
so the same request was a 201 on SQLite and a 500 (the event lost, the client retrying) on
PostgreSQL. Every text field now stores U+FFFD in its place, with a warning, on every backend."""

from __future__ import annotations

import uuid

import pytest
from conftest import SERVERS, fresh_server_database
from fastapi.testclient import TestClient

from feedback.limits import CollectorSettings
from feedback.service import create_app
from feedback.store import ChatMessage, create_api_key, sessions

BODIES = [
    {"external_id": "n1", "messages": [{"role": "user", "content": "a\u0000b"}, {"role": "assistant", "content": "4"}]},
    {"external_id": "n2\u0000", "messages": [{"role": "user", "content": "ab"}, {"role": "assistant", "content": "4"}]},
    {"external_id": "n4", "user_id": "u\u0000", "messages": [{"role": "user", "content": "ab"},
                                                             {"role": "assistant", "content": "4"}]},
]


def _client(url: str) -> TestClient:
    with sessions(url)() as s:
        key = create_api_key(s, "support-bot")
    app = create_app(url, upgrade=False, settings=CollectorSettings())
    return TestClient(app, headers={"X-API-Key": key}, raise_server_exceptions=False)


def _post(client: TestClient, path: str, body: dict):
    return client.post(path, json=body, headers={"Idempotency-Key": uuid.uuid4().hex})


def _check(url: str, caplog) -> str:
    client = _client(url)
    with caplog.at_level("WARNING"):
        ids = []
        for body in BODIES:
            response = _post(client, "/v1/interactions", body)
            assert response.status_code == 201, response.text
            ids.append(response.json()["id"])
        rated = _post(client, "/v1/feedback", {"interaction_id": ids[0], "rating": 1, "comment": "x\u0000y"})
        assert rated.status_code == 201, rated.text
    assert "U+FFFD" in caplog.text
    with sessions(url, upgrade=False)() as s:
        first = s.query(ChatMessage).filter(ChatMessage.interaction_id == ids[0]).order_by(ChatMessage.id).first()
        assert first.content == "a\ufffdb"
        content = first.content
    page = client.get("/v1/feedback").json()
    assert "x\ufffdy" in str(page)
    return content


def test_nul_characters_are_replaced_on_sqlite(tmp_path, caplog):
    assert _check(f"sqlite:///{tmp_path / 'store.db'}", caplog) == "a\ufffdb"


@pytest.mark.parametrize("server", SERVERS[:1])
def test_nul_characters_are_replaced_on_postgres(server, caplog):
    with fresh_server_database(server, "nul") as url:
        assert _check(url, caplog) == "a\ufffdb"
