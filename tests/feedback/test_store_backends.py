"""The store's migrations, the collector and the collector source on PostgreSQL and MariaDB.

Each test run gets its own PostgreSQL schema / MariaDB database (unique name, dropped after).
"""

from __future__ import annotations

import pytest
from conftest import SERVERS, fresh_server_database
from fastapi.testclient import TestClient

from connectors.feedback_tables.collector import CollectorFeedbackSource
from feedback.service import create_app
from feedback.store import create_api_key, sessions


@pytest.fixture(params=SERVERS)
def store_url(request):
    with fresh_server_database(request.param, "tlfb") as url:
        yield url


def test_collect_then_read_back_on_server(store_url):
    with sessions(store_url)() as s:
        key = create_api_key(s, "bot")
    client = TestClient(create_app(store_url, upgrade=False), headers={"X-API-Key": key})

    def post(path, body, idem):
        r = client.post(path, json=body, headers={"Idempotency-Key": idem})
        assert r.status_code == 201, r.text
        return r.json()

    post("/v1/interactions", {"external_id": "r1", "messages": [{"role": "user", "content": "q"},
                                                              {"role": "assistant", "content": "a"}]}, "i1")
    post("/v1/feedback", {"external_id": "r1", "user_id": "u", "rating": -1}, "f1")
    assert post("/v1/feedback", {"external_id": "r1", "user_id": "u", "rating": -1}, "f1")["replayed"] is True
    post("/v1/corrections", {"external_id": "r1", "user_id": "u", "content": "a, fixed"}, "c1")
    result = CollectorFeedbackSource({"url": store_url, "application": "bot"}, ".", "feedback/bot").read()
    assert [e.messages[-1].content for e in result.sft_examples] == ["a, fixed"]
    assert [(p.chosen, p.rejected) for p in result.preference_pairs] == [("a, fixed", "a")]
    assert result.counts["rows_read"] == 1
