"""Fast ingest (issue 19) gives the row path's records byte for byte, and the same counts.

A generated table holds the tricky rows: offsets, ``Z``, naive times read in a declared zone,
epoch numbers; a range scale with out-of-scale and non-numeric ratings; duplicate clicks (the
latest wins; ties broken by id; a bad row inside a group); personal data of every detector
(also Unicode digits, which Python's ``\\d`` matches); missing prompts and bad timestamps
(quarantined with the same reasons); corrections; tests and expected answers (tasks).
Each case runs with small chunks so groups straddle batch edges, inline and on two worker
processes, on SQLite (SQLAlchemy rows) and PostgreSQL (ADBC Arrow batches).
"""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
import uuid
import warnings
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from connectors.feedback_tables.source import SqlFeedbackSource

QUICK = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
COLS = ("id", "conversation_id", "message_id", "user_id", "created_at", "prompt", "response", "rating",
        "correction", "tests", "expected")
PII = ["mail jane.roe@example.com now", "call +44 20 7946 0958", "iban DE89 3704 0044 0532 0130 00",
       "card 4111 1111 1111 1111", "ssn 123-45-6789", "NI QQ 12 34 56 C", "ip 192.168.0.1 and ::1",
       "phone \u0665\u0665\u0665-\u0661\u0662\u0663-\u0664\u0665\u0666\u0667", "order #123-456 on 2024-05-01",
       "jane.roe%40example.com", "account 1234567"]
STAMPS = ["2026-03-01T23:30:00+08:00", "2026-03-01T15:30:00Z", "2026-03-01 10:00:00", "2026-03-02T01:00:00-03:00",
          "", None, "yesterday", "2026-03-01T10:00:00.250+05:30"]


def table_rows(n: int = 400, seed: int = 3) -> list[tuple]:
    rnd = random.Random(seed)
    rows, rid = [], 0
    for i in range(n):
        mid, user = f"m{i // 2 if i % 7 == 0 else i}", f"u{rnd.randrange(4)}"
        for _ in range(rnd.choice([1, 1, 1, 2, 3])):
            rid += 1
            prompt = rnd.choice(["How do I add?", f"fix bug {i}", rnd.choice(PII), None, "  "]) \
                if rnd.random() < 0.3 else f"question {i} " + rnd.choice(PII + [""])
            rating = rnd.choice([1, 2, 3, 4, 5, 9, 0, None, "bad", "4.5"])
            correction = rnd.choice([None, None, f"better answer {i}", rnd.choice(PII), ""])
            tests = "def test_x():\n    assert True\n" if rnd.random() < 0.1 else None
            expected = rnd.choice([None, None, None, "42"])
            stamp = rnd.choice(STAMPS)
            rows.append((rid, f"c{i // 5}", mid, user, stamp, prompt, f"answer {rnd.choice(PII)}", rating,
                         correction, tests, expected))
    return rows


OPTIONS = {"table": "fb", "rating": {"kind": "range", "min": 1, "max": 5}, "timezone": "Asia/Shanghai",
           "since": "2026-03-01T00:00:00Z"}

def server_table(url: str, table: str, rows) -> sa.engine.Engine:
    """Create ``table`` on the server at ``url`` holding ``rows`` (ratings as INTEGER); its engine."""
    engine = sa.create_engine(url)
    rows = [r[:7] + (None if isinstance(r[7], str) else r[7],) + r[8:] for r in rows]
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE TABLE {table} (id BIGINT PRIMARY KEY, conversation_id TEXT, message_id TEXT, "
                             "user_id TEXT, created_at TEXT, prompt TEXT, response TEXT, rating INTEGER, "
                             "correction TEXT, tests TEXT, expected TEXT)"))
        conn.execute(sa.text(f"INSERT INTO {table} VALUES ({', '.join(':' + c for c in COLS)})"),
                     [dict(zip(COLS, r)) for r in rows])
    return engine


def jsonl(url: str, base: Path, **extra) -> tuple[list[str], dict]:
    source = SqlFeedbackSource({"url": url, **OPTIONS, **extra}, base, "feedback/test")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lines = list(source.iter_jsonl())
    return lines, source.counts


def assert_same(url: str, base: Path) -> None:
    reference, counts = jsonl(url, base, ingest="rows")
    assert counts["quarantined"] and counts["duplicates_dropped"] and counts["redactions"] and counts["tasks"]
    for extra in ({"batch_size": 7, "workers": 1}, {"batch_size": 50, "workers": 2}, {}):
        lines, fast_counts = jsonl(url, base, ingest="fast", **extra)
        assert lines == reference, extra
        assert fast_counts == counts, extra
    for extra in ({"batch_size": 7, "workers": 1}, {"batch_size": 50, "workers": 2}):  # blocks: the same file
        source = SqlFeedbackSource({"url": url, **OPTIONS, "ingest": "fast", **extra}, base, "feedback/test")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            blocks = list(source.iter_jsonl_blocks())
        assert blocks and all(b.endswith("\n") for b in blocks), extra
        assert "".join(blocks) == "".join(line + "\n" for line in reference) and source.counts == counts, extra


def test_fast_ingest_matches_rows_on_sqlite(tmp_path):
    con = sqlite3.connect(tmp_path / "fb.db")
    con.execute(f"CREATE TABLE fb({', '.join(COLS)})")
    con.executemany(f"INSERT INTO fb VALUES ({','.join('?' * len(COLS))})", table_rows())
    con.commit()
    con.close()
    assert_same(f"sqlite:///{tmp_path / 'fb.db'}", tmp_path)


def test_columnar_lane_matches_rows_on_sqlite(tmp_path, monkeypatch):
    """Clean column types (integer ratings): SQLAlchemy rows become Arrow chunks and take the
    columnar lane (checked: the lane really ran), still byte for byte the row path."""
    from connectors.feedback_tables import lane

    runs = []
    real = lane.ChunkLane.run
    monkeypatch.setattr(lane.ChunkLane, "run", lambda self, *args: runs.append(self.n) or real(self, *args))
    con = sqlite3.connect(tmp_path / "fb.db")
    con.execute(f"CREATE TABLE fb({', '.join(COLS)})")
    rows = [r[:7] + (None if isinstance(r[7], str) else r[7],) + r[8:] for r in table_rows()]
    con.executemany(f"INSERT INTO fb VALUES ({','.join('?' * len(COLS))})", rows)
    con.commit()
    con.close()
    url = f"sqlite:///{tmp_path / 'fb.db'}"
    assert_same(url, tmp_path)
    assert sum(runs) >= 2 * len(rows)
    with warnings.catch_warnings():  # records (not JSON) through the lane equal the row path's objects
        warnings.simplefilter("ignore")
        fast, slow = (SqlFeedbackSource({"url": url, **OPTIONS, "ingest": mode, "batch_size": 50}, tmp_path,
                                        "feedback/test").read() for mode in ("fast", "rows"))
    assert (fast.sft_examples, fast.preference_pairs, fast.tasks, fast.quarantined, fast.counts) == \
        (slow.sft_examples, slow.preference_pairs, slow.tasks, slow.quarantined, slow.counts)


@pytest.mark.postgres
def test_fast_ingest_matches_rows_on_postgres_through_arrow(tmp_path):
    url = "postgresql+psycopg2://postgres@127.0.0.1:5432/test"
    table = f"fb_{uuid.uuid4().hex[:8]}"
    engine = server_table(url, table, table_rows())
    try:
        from connectors.feedback_tables.fast import arrow_batches
        assert arrow_batches(url, f"SELECT * FROM {table}") is not None  # really the ADBC path
        OPTIONS["table"] = table
        assert_same(url, tmp_path)
    finally:
        OPTIONS["table"] = "fb"
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE {table}"))
        engine.dispose()


@pytest.mark.postgres
def test_lane_with_redaction_on_other_processes_matches_rows_on_postgres(tmp_path, monkeypatch):
    """Chunks of 64 rows: many Arrow chunks, so with two workers the lane runs in the reading
    process and the exact redactor on a second one (checked: that runner ran), and the read runs
    ahead in a thread (checked); still byte for byte the row path, and the same counts."""
    from connectors.feedback_tables import fast, overlap

    monkeypatch.setattr(fast, "LANE_ROWS", 64)
    runs, ahead = [], []
    real, real_prefetch = overlap.run_lanes, fast.prefetch
    monkeypatch.setattr(overlap, "run_lanes", lambda *args: runs.append(args[4]) or real(*args))
    monkeypatch.setattr(fast, "prefetch", lambda items, *a: ahead.append(1) or real_prefetch(items, *a))
    url = "postgresql+psycopg2://postgres@127.0.0.1:5432/test"
    table = f"fb_{uuid.uuid4().hex[:8]}"
    engine = server_table(url, table, table_rows())
    try:
        OPTIONS["table"] = table
        assert_same(url, tmp_path)
        assert runs and set(runs) >= {2}
        assert ahead  # the ADBC chunks after the second were read ahead by a thread
    finally:
        OPTIONS["table"] = "fb"
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE {table}"))
        engine.dispose()


@pytest.mark.skipif(not (QUICK / "seed_feedback.py").exists(), reason="quickstart not present")
def test_fast_ingest_matches_rows_on_the_quickstart(tmp_path):
    subprocess.run([sys.executable, str(QUICK / "seed_feedback.py"), str(tmp_path / "feedback.db")], check=True,
                   capture_output=True)
    config = yaml.safe_load((QUICK / "config.yaml").read_text())
    (spec,) = [s for s in config["sources"] if s["type"] == "sql_feedback"]
    out = {}
    for mode in ("rows", "fast"):
        source = SqlFeedbackSource({**spec["options"], "ingest": mode, "batch_size": 64}, tmp_path, spec["domain"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[mode] = (list(source.iter_jsonl()), source.counts)
    assert out["fast"] == out["rows"] and out["rows"][1]["redactions"] > 0


def test_redaction_prefilter_never_hides_what_the_full_redactor_finds():
    """Random texts dense in digits, separators, colons, '@' and Unicode digits: the hinted redaction
    (columnar pre-filter, only the detectors whose pattern matched) equals the full one."""
    import pyarrow as pa

    from connectors.feedback_tables.fast import redaction_hints
    from feedback.redact import Redactor

    rnd = random.Random(11)
    alphabet = "0123456789 -.:@%4AZQDEbcf\u0661\u0665\n#+()"
    texts = PII + ["".join(rnd.choice(alphabet) for _ in range(rnd.randrange(1, 40))) for _ in range(3000)]
    hints = redaction_hints({"t": pa.array(texts)})
    redactor = Redactor(key=b"k")
    skipped = 0
    for text in texts:
        hint = hints[text]
        skipped += hint is False
        hinted = (text, 0) if hint is False else redactor.redact(text, "s", only=hint)
        assert hinted == redactor.redact(text, "s"), text
    assert 0 < skipped < len(texts)


def test_prefetch_keeps_order_raises_in_place_and_stops_when_closed():
    """The read-ahead thread: the same items in order; an exception of the source arrives after the
    items before it; closing the consumer early stops the thread and closes the source there."""
    import threading

    from connectors.feedback_tables.prefetch import prefetch

    assert list(prefetch(iter(range(100)), depth=3)) == list(range(100))
    assert list(prefetch([])) == []

    def failing():
        yield from (1, 2)
        raise ValueError("boom")

    consumer = prefetch(failing(), depth=1)
    assert [next(consumer), next(consumer)] == [1, 2]
    with pytest.raises(ValueError, match="boom"):
        next(consumer)

    closed, threads = [], []

    def endless():
        try:
            n = 0
            while True:
                threads.append(threading.current_thread().name)
                yield n
                n += 1
        finally:
            closed.append(threading.current_thread().name)

    consumer = prefetch(endless(), depth=2)
    assert [next(consumer) for _ in range(5)] == [0, 1, 2, 3, 4]
    consumer.close()
    assert closed == ["tuneloop-prefetch"] and set(threads) == {"tuneloop-prefetch"}
    assert not any(t.name == "tuneloop-prefetch" for t in threading.enumerate())


def test_columnar_lane_with_null_ids_matches_rows_on_sqlite(tmp_path, monkeypatch):
    """NULL user and message ids (the locator then skips them) and ids with characters JSON escapes:
    the lane's records are the row path's, byte for byte (checked: the lane ran)."""
    from connectors.feedback_tables import lane

    runs = []
    real = lane.ChunkLane.run
    monkeypatch.setattr(lane.ChunkLane, "run", lambda self, *args: runs.append(self.n) or real(self, *args))
    rows = [r[:2] + (None if k % 7 == 0 else f'{r[2]}"\\\\',) + (None if k % 5 == 0 else r[3],) + r[4:7]
            + (None if isinstance(r[7], str) else r[7],) + r[8:] for k, r in enumerate(table_rows())]
    con = sqlite3.connect(tmp_path / "fb.db")
    con.execute(f"CREATE TABLE fb({', '.join(COLS)})")
    con.executemany(f"INSERT INTO fb VALUES ({','.join('?' * len(COLS))})", rows)
    con.commit()
    con.close()
    url = f"sqlite:///{tmp_path / 'fb.db'}"
    reference, counts = jsonl(url, tmp_path, ingest="rows")
    lines, fast_counts = jsonl(url, tmp_path, ingest="fast", batch_size=50, workers=1)
    assert runs and lines == reference and fast_counts == counts
    assert any('user=' not in line and '"locator":"row_id=' in line for line in lines)  # a NULL user skipped
    assert any('\\"\\\\\\\\' in line for line in lines)  # an escaped id
