"""Fixtures: a feedback table with the quickstart's exact schema (``chat_feedback``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

SCHEMA = """CREATE TABLE chat_feedback(id INTEGER PRIMARY KEY, conversation_id TEXT, message_id TEXT,
user_id TEXT, created_at TEXT, app TEXT, prompt TEXT, response TEXT, rating INTEGER NULL,
correction TEXT NULL, meta TEXT)"""

COLUMNS = ("conversation_id", "message_id", "user_id", "created_at", "app", "prompt", "response",
           "rating", "correction", "meta")


def make_db(path: Path, rows: list[dict]) -> Path:
    """Create ``chat_feedback`` in a SQLite file at ``path`` holding ``rows`` (missing keys NULL)."""
    con = sqlite3.connect(path)
    con.execute(SCHEMA)
    for row in rows:
        values = [json.dumps(row[c]) if c == "meta" and not isinstance(row.get(c), (str, type(None)))
                  else row.get(c) for c in COLUMNS]
        con.execute(f"INSERT INTO chat_feedback({','.join(COLUMNS)}) VALUES ({','.join('?' * len(COLUMNS))})", values)
    con.commit()
    con.close()
    return path


def row(mid: str, rating: int | None = 1, *, conv: str = "c1", user: str = "u1", at: str = "2026-01-01T10:00:00+00:00",
        prompt: str = "How do I add?", response: str = "Use add().", correction: str | None = None, meta=None) -> dict:
    """One chat_feedback row with sensible defaults."""
    return dict(conversation_id=conv, message_id=mid, user_id=user, created_at=at, app="support",
                prompt=prompt, response=response, rating=rating, correction=correction, meta=meta)


@pytest.fixture
def feedback_db(tmp_path: Path):
    """A factory: ``feedback_db(rows) -> Path`` of a fresh SQLite file."""
    counter = iter(range(1000))
    return lambda rows: make_db(tmp_path / f"feedback{next(counter)}.db", rows)
