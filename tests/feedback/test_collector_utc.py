"""The collector's store writes aware UTC timestamps (field input: on SQLite they were stored as naive
text, so every reader of the store's tables, a ``sql_feedback`` source among them, saw naive times)."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import datetime, timedelta, timezone

import sqlalchemy as sa
from fastapi.testclient import TestClient

from connectors.feedback_tables.collector import CollectorFeedbackSource
from connectors.feedback_tables.source import SqlFeedbackSource
from feedback.service import create_app
from feedback.store import FeedbackEvent, UTCDateTime, create_api_key, sessions


def _post(client, path, body):
    response = client.post(path, json=body, headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 201, response.text


def test_feedback_is_stored_and_read_back_as_aware_utc(tmp_path):
    db = tmp_path / "store.db"
    url = f"sqlite:///{db}"
    with sessions(url)() as s:
        key = create_api_key(s, "bot")
    client = TestClient(create_app(url, upgrade=False), headers={"X-API-Key": key})
    _post(client, "/v1/interactions", {"external_id": "a", "messages": [
        {"role": "user", "content": "q"}, {"role": "assistant", "content": "good answer"}]})
    _post(client, "/v1/feedback", {"external_id": "a", "user_id": "u1", "rating": 1})
    with sqlite3.connect(db) as con:
        (raw,) = con.execute("SELECT created_at FROM feedback_events").fetchone()
    assert raw.endswith("+00:00"), raw
    stored = datetime.fromisoformat(raw)
    assert abs(datetime.now(timezone.utc) - stored) < timedelta(minutes=5)
    with sessions(url, upgrade=False)() as s:
        (event,) = s.scalars(sa.select(FeedbackEvent)).all()
    assert event.created_at == stored and event.created_at.tzinfo is not None
    result = CollectorFeedbackSource({"url": url, "application": "bot"}, tmp_path, "feedback/bot").read()
    assert len(result.sft_examples) == 1 and result.counts["naive_timestamps"] == 0
    plain = SqlFeedbackSource({"url": url, "query": "SELECT e.id AS row_id, e.interaction_id AS message_id, "
                               "e.created_at, e.rating, 'q' AS prompt, 'r' AS response FROM feedback_events e",
                               "rating": "thumbs"}, tmp_path, "feedback/bot").read()
    assert len(plain.sft_examples) == 1 and plain.counts["naive_timestamps"] == 0


def test_naive_values_are_taken_as_utc_and_offsets_converted():
    kind, dialect = UTCDateTime(), sa.create_engine("sqlite://").dialect
    naive = datetime(2026, 1, 1, 12)
    assert kind.process_bind_param(naive, dialect) == datetime(2026, 1, 1, 12, tzinfo=timezone.utc)
    plus2 = datetime(2026, 1, 1, 14, tzinfo=timezone(timedelta(hours=2)))
    assert kind.process_bind_param(plus2, dialect).utcoffset() == timedelta(0)
    assert kind.process_result_value(naive, dialect).tzinfo is timezone.utc  # rows written before the change
    assert kind.process_bind_param(None, dialect) is None
