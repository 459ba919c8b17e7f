"""Fixtures: a feedback table with the quickstart's exact schema (``chat_feedback``)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

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


SERVERS = [pytest.param("postgresql+psycopg2://postgres@127.0.0.1:5432/test", id="postgres", marks=pytest.mark.postgres),
           pytest.param("mysql+pymysql://root@127.0.0.1:3306/test", id="mysql", marks=pytest.mark.mysql)]


@contextlib.contextmanager
def fresh_server_database(server_url: str, prefix: str) -> Iterator[str]:
    """A fresh schema (PostgreSQL) or database (MariaDB) on ``server_url``, dropped afterwards; yields its
    URL. Skips the test when the server is not reachable."""
    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        admin.connect().close()
    except sa.exc.OperationalError as exc:
        pytest.skip(f"server not reachable: {exc.orig}")
    name, postgres = f"{prefix}_{uuid.uuid4().hex[:10]}", server_url.startswith("postgresql")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {name}" if postgres else f"CREATE DATABASE {name}"))
    try:
        yield (f"{server_url}?options=-csearch_path%3D{name}" if postgres
               else server_url.rsplit("/", 1)[0] + f"/{name}")
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {name} CASCADE" if postgres else f"DROP DATABASE {name}"))
        admin.dispose()
