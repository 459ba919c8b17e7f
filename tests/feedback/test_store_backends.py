"""The store's migrations, the collector and the collector source on PostgreSQL and MariaDB.

Each test run gets its own PostgreSQL schema / MariaDB database (unique name, dropped after).
"""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from connectors.feedback_tables.collector import CollectorFeedbackSource
from feedback.service import create_app
from feedback.store import create_api_key, sessions

SERVERS = [pytest.param("postgresql+psycopg2://postgres@127.0.0.1:5432/test", id="postgres", marks=pytest.mark.postgres),
           pytest.param("mysql+pymysql://root@127.0.0.1:3306/test", id="mysql", marks=pytest.mark.mysql)]


@pytest.fixture(params=SERVERS)
def store_url(request):
    admin = sa.create_engine(request.param, isolation_level="AUTOCOMMIT")
    try:
        admin.connect().close()
    except sa.exc.OperationalError as exc:
        pytest.skip(f"server not reachable: {exc.orig}")
    name = f"tlfb_{uuid.uuid4().hex[:10]}"
    postgres = request.param.startswith("postgresql")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {name}" if postgres else f"CREATE DATABASE {name}"))
    url = (f"{request.param}?options=-csearch_path%3D{name}" if postgres
           else request.param.rsplit("/", 1)[0] + f"/{name}")
    yield url
    with admin.connect() as conn:
        conn.execute(sa.text(f"DROP SCHEMA {name} CASCADE" if postgres else f"DROP DATABASE {name}"))
    admin.dispose()


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
