"""Field case L3: incremental reads page by keyset (one short LIMIT statement per batch, no
server-side cursor), the watermark can live in the store's ``ingestion_cursors`` table, and a
crash (an error or SIGKILL between the log append and the cursor commit) then a resume gives
every row exactly once."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from conftest import SERVERS, fresh_server_database, row

from connectors.feedback_tables import incremental as inc
from connectors.feedback_tables.source import SqlFeedbackSource
from sdk.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def options(url: str, state: Path, batch: int, cursor_url: str | None = None, table: str = "chat_feedback") -> dict:
    return {"url": url, "table": table, "timezone": "UTC", "state_dir": str(state), "batch_size": batch,
            **({"cursor_url": cursor_url} if cursor_url else {})}


def rows(n: int) -> list[dict]:
    return [row(f"m{i % 37}", 1 if i % 3 else -1, user=f"u{i % 5}", at=f"2026-01-01T10:{i // 60 % 60:02d}:{i % 60:02d}Z",
                response=f"answer {i}", correction="fixed" if i % 11 == 0 else None) for i in range(n)]


class Statements:
    """Every statement the engines run while active, with its execution options."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict]] = []

    def __enter__(self) -> Statements:  # noqa: PYI034
        sa.event.listen(sa.engine.Engine, "before_cursor_execute", self._record)
        return self

    def __exit__(self, *exc: object) -> None:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", self._record)

    def _record(self, conn, cursor, statement, parameters, context, executemany) -> None:
        self.seen.append((statement, dict(context.execution_options) if context is not None else {}))

    def reads(self, table: str) -> list[tuple[str, dict]]:
        return [(s, o) for s, o in self.seen if s.lstrip().upper().startswith("SELECT") and f"FROM {table}" in s
                and "1=0" not in s]


def test_incremental_read_pages_by_keyset_without_server_side_cursors(feedback_db, tmp_path):
    db = feedback_db(rows(50))
    with Statements() as st:
        got = SqlFeedbackSource(options(f"sqlite:///{db}", tmp_path / "st", 7), tmp_path, "feedback/x").read()
    pages = st.reads("chat_feedback")
    assert len(pages) == 8  # 7 full pages of 7, one of 1
    assert all("LIMIT" in s and not o.get("stream_results") for s, o in pages)
    full = SqlFeedbackSource({"url": f"sqlite:///{db}", "table": "chat_feedback", "timezone": "UTC"}, tmp_path,
                             "feedback/x").read()
    assert got.counts["rows_read"] == 50 and got.sft_examples == full.sft_examples


def test_cursor_url_needs_state_dir(tmp_path):
    with pytest.raises(ConfigError, match="state_dir"):
        SqlFeedbackSource({"table": "t", "cursor_url": "sqlite:///s.db"}, tmp_path, "f")


def test_watermark_in_the_store_survives_a_crash_between_log_and_commit(feedback_db, tmp_path, monkeypatch):
    db = feedback_db(rows(120))
    url, store = f"sqlite:///{db}", f"sqlite:///{tmp_path / 'store.db'}"
    reference = SqlFeedbackSource(options(url, tmp_path / "ref", 10), tmp_path, "feedback/x").read()
    real, calls = inc.StoreCursor.save, []

    def crash_on_fifth(self, state):  # the log holds the 5th batch; its commit never happens
        calls.append(state["rows"])
        if len(calls) == 5:
            raise KeyboardInterrupt
        real(self, state)

    monkeypatch.setattr(inc.StoreCursor, "save", crash_on_fifth)
    with pytest.raises(KeyboardInterrupt):
        SqlFeedbackSource(options(url, tmp_path / "st", 10, store), tmp_path, "feedback/x").read()
    monkeypatch.setattr(inc.StoreCursor, "save", real)
    engine = sa.create_engine(store)
    with engine.connect() as conn:
        (body,) = conn.execute(sa.text("SELECT watermark FROM ingestion_cursors")).scalars().all()
    assert json.loads(body)["rows"] == 40 and not (tmp_path / "st" / "state.json").exists()
    resumed = SqlFeedbackSource(options(url, tmp_path / "st", 10, store), tmp_path, "feedback/x").read()
    assert (tmp_path / "st" / "events.jsonl").read_bytes() == (tmp_path / "ref" / "events.jsonl").read_bytes()
    assert resumed.sft_examples == reference.sft_examples and resumed.preference_pairs == reference.preference_pairs
    with engine.connect() as conn:
        assert json.loads(conn.execute(sa.text("SELECT watermark FROM ingestion_cursors")).scalar_one())["rows"] == 120
    engine.dispose()


CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    from connectors.feedback_tables import incremental as fi
    from connectors.feedback_tables.source import SqlFeedbackSource
    real = fi.StoreCursor.save
    def slow_save(self, state):
        time.sleep(0.02)   # the batch is in the log, not yet committed: the kill lands here
        real(self, state)
    fi.StoreCursor.save = slow_save
    SqlFeedbackSource({opts!r}, {base!r}, "feedback/x").read()
""")


def _committed_rows(store: str) -> int:
    engine = sa.create_engine(store)
    try:
        with engine.connect() as conn:
            body = conn.execute(sa.text("SELECT watermark FROM ingestion_cursors")).scalar()
    except sa.exc.DBAPIError:
        body = None  # not migrated yet
    finally:
        engine.dispose()
    return json.loads(body)["rows"] if body else 0


def _kill_and_resume(url: str, store: str, n: int, batch: int, tmp_path: Path, table: str) -> list[dict]:
    """Ingest in a child, SIGKILL it mid-way, resume here; returns the log's rows."""
    state = tmp_path / "killed"
    opts = options(url, state, batch, store, table)
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(root=str(ROOT), opts=opts, base=str(tmp_path))],
                             cwd=ROOT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and child.poll() is None and _committed_rows(store) < n // 4:
        time.sleep(0.05)
    assert child.poll() is None, "ingestion finished before it could be killed"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert 0 < _committed_rows(store) < n
    resumed = SqlFeedbackSource(opts, tmp_path, "feedback/x").read()
    assert resumed.counts["rows_read"] == n and _committed_rows(store) == n
    return [json.loads(line) for line in (state / "events.jsonl").read_text().splitlines()]


def test_sigkill_then_resume_with_the_watermark_in_the_store(feedback_db, tmp_path):
    db = feedback_db(rows(300))
    events = _kill_and_resume(f"sqlite:///{db}", f"sqlite:///{tmp_path / 'store.db'}", 300, 10, tmp_path,
                              "chat_feedback")
    assert sorted(e["seq"] for e in events) == list(range(1, 301))


@pytest.fixture(params=SERVERS)
def server_db(request):
    """A fresh schema (PostgreSQL) or database (MariaDB) holding ``chat_feedback`` with 50,000 rows."""
    postgres = request.param.startswith("postgresql")
    with fresh_server_database(request.param, "l3") as url:
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            conn.execute(sa.text(f"CREATE TABLE chat_feedback (id {'BIGSERIAL' if postgres else 'BIGINT AUTO_INCREMENT'} "
                                 "PRIMARY KEY, message_id TEXT, user_id TEXT, created_at TEXT, prompt TEXT, response TEXT, "
                                 "rating INTEGER)"))
            conn.execute(sa.text("INSERT INTO chat_feedback (message_id, user_id, created_at, prompt, response, rating) "
                                 "VALUES (:m, :u, '2026-01-01T10:00:00Z', :p, :r, :g)"),
                         [{"m": f"m{g}", "u": f"u{g % 50}", "p": f"question {g}", "r": f"answer {g}",
                           "g": -1 if g % 3 == 0 else 1} for g in range(1, 50_001)])
        engine.dispose()
        yield url


def test_l3_fifty_thousand_rows_batches_of_1000_watermark_in_the_same_database(server_db, tmp_path):
    """L3 on PostgreSQL and MariaDB: the feedback table and the store's ingestion_cursors in one
    database; read in keyset pages of 1,000 with the watermark committed after each; SIGKILL mid-way,
    resume: exactly 50,000 rows, no duplicates, every read a LIMIT 1000 statement (no server-side
    cursor, so a pooler in transaction mode has nothing to break)."""
    with Statements() as st:
        events = _kill_and_resume(server_db, server_db, 50_000, 1000, tmp_path, "chat_feedback")
    assert len(events) == 50_000 and len({e["seq"] for e in events}) == 50_000
    reads = st.reads("chat_feedback")
    assert reads and all("LIMIT" in s and not o.get("stream_results") for s, o in reads)


def test_keyset_pages_skip_null_keys_and_stop_on_a_short_page(tmp_path):
    from connectors.feedback_tables.database import Database

    con = sqlite3.connect(tmp_path / "t.db")
    con.execute("CREATE TABLE t (id INTEGER, v TEXT)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(None, "x"), *((i, str(i)) for i in range(1, 10))])
    con.commit()
    con.close()
    db = Database(f"sqlite:///{tmp_path / 't.db'}")
    pages = list(db.pages("t", None, ["id", "v"], None, "id", None, 4))
    assert [[r["id"] for r in p] for p in pages] == [[1, 2, 3, 4], [5, 6, 7, 8], [9]]
    assert [r["id"] for p in db.pages("t", None, ["id", "v"], "v != '6'", "id", 4, 4) for r in p] == [5, 7, 8, 9]
    db.close()
