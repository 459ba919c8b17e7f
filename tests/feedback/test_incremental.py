"""Incremental reads: a watermark persisted across runs, and kill -9 in the middle loses nothing."""

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

from connectors.feedback_tables.incremental import IncrementalIngest
from connectors.feedback_tables.source import SqlFeedbackSource
from sdk.errors import SourceError

from conftest import COLUMNS, row

ROOT = Path(__file__).resolve().parents[2]


def options(db: Path, state: Path, batch: int = 2) -> dict:
    return {"url": f"sqlite:///{db}", "table": "chat_feedback", "timezone": "UTC", "state_dir": str(state),
            "batch_size": batch}


def add(db: Path, rows: list[dict]) -> None:
    con = sqlite3.connect(db)
    con.executemany(f"INSERT INTO chat_feedback({','.join(COLUMNS)}) VALUES ({','.join('?' * len(COLUMNS))})",
                    [[r.get(c) for c in COLUMNS] for r in rows])
    con.commit()
    con.close()


def contents(result):
    return sorted(json.dumps([m.model_dump() for m in e.messages]) for e in result.sft_examples)


def test_rerun_reads_only_new_rows_and_dedups_across_runs(feedback_db, tmp_path):
    db = feedback_db([row("m1", 1, user="u7", at="2026-01-01T10:00:00+00:00"), row("m2", 1, response="two")])
    first = SqlFeedbackSource(options(db, tmp_path / "st"), tmp_path, "feedback/x").read()
    assert first.counts["new_rows"] == 2 and len(first.sft_examples) == 2
    again = SqlFeedbackSource(options(db, tmp_path / "st"), tmp_path, "feedback/x").read()
    assert again.counts["new_rows"] == 0 and contents(again) == contents(first)
    add(db, [row("m1", -1, user="u7", at="2026-01-01T10:02:00+00:00")])  # the user changed their mind
    third = SqlFeedbackSource(options(db, tmp_path / "st"), tmp_path, "feedback/x").read()
    assert third.counts["new_rows"] == 1
    assert [e.messages[-1].content for e in third.sft_examples] == ["two"]
    assert third.counts["duplicates_dropped"] == 1


def test_uncommitted_tail_is_truncated_on_resume(feedback_db, tmp_path):
    db = feedback_db([row(f"m{i}", 1, response=f"r{i}") for i in range(5)])
    ingest = IncrementalIngest(SqlFeedbackSource(options(db, tmp_path / "st"), tmp_path, "f"), tmp_path / "st")
    ingest.run()
    committed = (tmp_path / "st" / "events.jsonl").read_bytes()
    with open(tmp_path / "st" / "events.jsonl", "ab") as fh:
        fh.write(b'{"half a line')
    assert ingest.run()["new_rows"] == 0
    assert (tmp_path / "st" / "events.jsonl").read_bytes() == committed


def test_state_of_another_table_is_refused(feedback_db, tmp_path):
    db = feedback_db([row("m1", 1)])
    SqlFeedbackSource(options(db, tmp_path / "st"), tmp_path, "f").read()
    other = feedback_db([row("m1", 1)])
    with pytest.raises(SourceError, match="belongs to"):
        SqlFeedbackSource(options(other, tmp_path / "st"), tmp_path, "f").read()


class _WithPassword(SqlFeedbackSource):
    """A source whose origin carries a password in its URL (as a PostgreSQL URL would)."""

    origin = property(lambda self: "postgresql+psycopg2://reader:s3cret@db.internal/prod#chat_feedback")


def test_state_json_stores_the_url_without_its_password(feedback_db, tmp_path):
    db = feedback_db([row("m1", 1), row("m2", 1)])
    first = _WithPassword(options(db, tmp_path / "st"), tmp_path, "f").read()
    text = (tmp_path / "st" / "state.json").read_text()
    assert "s3cret" not in text and json.loads(text)["origin"] == \
        "postgresql+psycopg2://reader:***@db.internal/prod#chat_feedback"
    assert _WithPassword(options(db, tmp_path / "st"), tmp_path, "f").read().counts["new_rows"] == 0  # still its own
    state = json.loads(text)  # a folder written before the fix: accepted, and the password removed
    (tmp_path / "st" / "state.json").write_text(json.dumps({**state, "origin": _WithPassword.origin.fget(None)}))
    again = _WithPassword(options(db, tmp_path / "st"), tmp_path, "f").read()
    assert again.counts["new_rows"] == 0 and len(again.sft_examples) == len(first.sft_examples) == 2
    assert "s3cret" not in (tmp_path / "st" / "state.json").read_text()


CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    from connectors.feedback_tables import incremental as fi
    from connectors.feedback_tables.source import SqlFeedbackSource
    original = fi.IncrementalIngest._commit
    def slow_commit(self, lines, watermark, state):
        with open(self.dir / "events.jsonl", "ab") as fh:   # half a batch lands, uncommitted, then the kill
            fh.write(b"".join(lines[: len(lines) // 2]))
        time.sleep(0.05)
        with open(self.dir / "events.jsonl", "r+b") as fh:
            fh.truncate(state["bytes"])
        original(self, lines, watermark, state)
    fi.IncrementalIngest._commit = slow_commit
    opts = {opts!r}
    SqlFeedbackSource(opts, {base!r}, "feedback/x").read()
""")


def test_kill_9_in_the_middle_then_resume_equals_uninterrupted(feedback_db, tmp_path):
    rows = [row(f"m{i % 40}", 1 if i % 3 else -1, user=f"u{i % 7}", at=f"2026-01-01T10:{i // 60:02d}:{i % 60:02d}+00:00",
                response=f"answer {i}", correction="fixed" if i % 11 == 0 else None) for i in range(400)]
    db = feedback_db(rows)
    reference = SqlFeedbackSource(options(db, tmp_path / "ref", batch=10), tmp_path, "feedback/x").read()

    state = tmp_path / "killed"
    script = CHILD.format(root=str(ROOT), opts=options(db, state, batch=10), base=str(tmp_path))
    child = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None:
        if (state / "state.json").exists() and json.loads((state / "state.json").read_text())["rows"] >= 100:
            break
        time.sleep(0.01)
    assert child.poll() is None, "ingestion finished before it could be killed"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert json.loads((state / "state.json").read_text())["rows"] < 400
    committed = json.loads((state / "state.json").read_text())["bytes"]
    assert (state / "events.jsonl").stat().st_size >= committed

    resumed = SqlFeedbackSource(options(db, state, batch=10), tmp_path, "feedback/x").read()
    assert (state / "events.jsonl").read_bytes() == (tmp_path / "ref" / "events.jsonl").read_bytes()
    assert contents(resumed) == contents(reference)
    assert sorted(p.chosen + p.rejected for p in resumed.preference_pairs) == \
        sorted(p.chosen + p.rejected for p in reference.preference_pairs)
    assert resumed.counts["rows_read"] == 400
