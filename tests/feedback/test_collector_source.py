"""Feedback collected by the service comes back out as training records (the loop closes)."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from connectors.feedback_tables.collector import CollectorFeedbackSource
from feedback.service import create_app
from feedback.store import create_api_key, sessions
from sdk.errors import ConfigError


def _post(client, path, body):
    response = client.post(path, json=body, headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def test_collected_ratings_and_corrections_become_records(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with sessions(url)() as s:
        key, other = create_api_key(s, "bot"), create_api_key(s, "other")
    app = create_app(url, upgrade=False)
    client, other_client = (TestClient(app, headers={"X-API-Key": k}) for k in (key, other))
    def call(ext, answer, c=client):
        return _post(c, "/v1/interactions", {"external_id": ext, "conversation_id": "c1", "messages": [
            {"role": "system", "content": "rules"}, {"role": "user", "content": f"q {ext} mail bob@example.com"},
            {"role": "assistant", "content": answer}]})
    call("a", "good answer"), call("b", "bad answer"), call("c", "meh"), call("d", "stars"), call("x", "x", other_client)
    _post(client, "/v1/feedback", {"external_id": "a", "user_id": "u1", "rating": 1})
    _post(client, "/v1/feedback", {"external_id": "b", "user_id": "u1", "rating": 1})
    _post(client, "/v1/feedback", {"external_id": "b", "user_id": "u1", "rating": -1})  # changed their mind
    _post(client, "/v1/corrections", {"external_id": "b", "user_id": "u1", "content": "fixed answer"})
    _post(client, "/v1/corrections", {"external_id": "c", "user_id": "u2", "content": "better"})  # no rating
    _post(client, "/v1/feedback", {"external_id": "d", "user_id": "u3", "rating": 4, "scale": "stars_1_5"})
    _post(other_client, "/v1/feedback", {"external_id": "x", "rating": 1})

    result = CollectorFeedbackSource({"url": url, "application": "bot"}, tmp_path, "feedback/bot").read()
    targets = sorted(e.messages[-1].content for e in result.sft_examples)
    assert targets == ["better", "fixed answer", "good answer", "stars"]
    assert sorted((p.chosen, p.rejected) for p in result.preference_pairs) == [("better", "meh"), ("fixed answer", "bad answer")]
    assert result.counts["duplicates_dropped"] == 1
    ex = result.sft_examples[0]
    assert ex.messages[0].role == "system" and "bob@example.com" not in ex.messages[1].content


def test_collector_source_refuses_incremental_and_bad_names(tmp_path):
    with pytest.raises(ConfigError):
        CollectorFeedbackSource({"state_dir": "st"}, tmp_path, "f")
    with pytest.raises(ConfigError):
        CollectorFeedbackSource({"application": "x'; DROP TABLE y; --"}, tmp_path, "f")
