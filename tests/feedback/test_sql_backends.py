"""The same field cases (F1–F4) on SQLite, PostgreSQL and MariaDB, through one connector.

PostgreSQL and MariaDB tests carry the ``postgres`` / ``mysql`` markers and use a table name
unique to the run, dropped afterwards, so parallel runs do not collide.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import pytest
import sqlalchemy as sa

from connectors.feedback_tables.source import SqlFeedbackSource

from test_redact import F4

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql+psycopg2://postgres@127.0.0.1:5432/test", id="postgres", marks=pytest.mark.postgres),
    pytest.param("mysql+pymysql://root@127.0.0.1:3306/test", id="mysql", marks=pytest.mark.mysql),
]


def _table(meta: sa.MetaData, name: str, aware: bool) -> sa.Table:
    stamp = sa.DateTime(timezone=True) if aware else sa.Text
    return sa.Table(name, meta, sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                    sa.Column("conversation_id", sa.String(64)), sa.Column("message_id", sa.String(64)),
                    sa.Column("user_id", sa.String(64)), sa.Column("created_at", stamp),
                    sa.Column("prompt", sa.Text), sa.Column("response", sa.Text),
                    sa.Column("rating", sa.Integer, nullable=True), sa.Column("correction", sa.Text, nullable=True),
                    sa.Column("meta", sa.Text))


@pytest.fixture(params=BACKENDS)
def table_factory(request, tmp_path):
    url = f"sqlite:///{tmp_path / 'fb.db'}" if request.param == "sqlite" else request.param
    engine = sa.create_engine(url)
    try:
        engine.connect().close()
    except sa.exc.OperationalError as exc:
        pytest.skip(f"{request.node.callspec.id} not reachable: {exc.orig}")
    made: list[sa.Table] = []

    def make(rows: list[dict], aware: bool = False) -> dict:
        name = f"fb_{uuid.uuid4().hex[:12]}"
        table = _table(sa.MetaData(), name, aware)
        table.create(engine)
        made.append(table)
        with engine.begin() as conn:
            conn.execute(table.insert(), [{"meta": None, "correction": None, **r} for r in rows])
        return {"url": url, "table": name, "timezone": "UTC", "batch_size": 3}

    yield make
    for table in made:
        table.drop(engine)
    engine.dispose()


def ev(mid, rating, user="u7", at="2026-01-01T10:00:00+00:00", **kw):
    return {"conversation_id": "c1", "message_id": mid, "user_id": user, "created_at": at, "prompt": "add?",
            "response": kw.pop("response", "use add()"), "rating": rating, **kw}


def test_f1_dedup(table_factory):
    opts = table_factory([ev("m1", 1, at="2026-01-01T10:00:00.120+00:00"), ev("m1", 1, at="2026-01-01T10:00:00.180+00:00"),
                          ev("m1", -1, at="2026-01-01T10:02:00+00:00"), ev("m2", 1, response="tl.add")])
    result = SqlFeedbackSource(opts, ".", "f").read()
    assert result.counts["duplicates_dropped"] == 2 and result.counts["negative_unused"] == 1
    assert [e.messages[-1].content for e in result.sft_examples] == ["tl.add"]


def test_f2_missing_versus_zero(table_factory):
    opts = table_factory([ev("a", None, meta='{"rating": 1, "details": {"rating": 8}}'), ev("b", 0), ev("c", None, meta="null")])
    text = SqlFeedbackSource({**opts, "rating": {"kind": "range", "min": 0, "max": 5}}, ".", "f").read()
    assert text.counts["negative_unused"] == 1 and text.counts["unlabelled"] == 2
    nested = SqlFeedbackSource({**opts, "auto_columns": False, "json_paths": {"rating": "meta:details.rating"},
                                "rating": "scale_0_10", "columns": {"message_id": "message_id", "user_id": "user_id"}},
                               ".", "f").read()
    assert len(nested.sft_examples) == 1 and nested.counts["unlabelled"] == 2


STAMPS = ["2026-03-01T12:00:00+00:00", "2026-03-01T09:00:00-03:00", "2026-03-01T13:00:00", "2026-03-01T14:00:00Z"]


def test_f3_time_zones_text_column(table_factory):
    opts = table_factory([ev(f"m{i}", 1, at=at) for i, at in enumerate(STAMPS)])
    all_four = SqlFeedbackSource({**opts, "since": "2026-03-01T11:30:00Z"}, ".", "f").read()
    assert len(all_four.sft_examples) == 4
    later = SqlFeedbackSource({**opts, "since": "2026-03-01T12:30:00Z"}, ".", "f").read()
    assert len(later.sft_examples) == 2


def test_f3_time_zones_native_timestamp_column(table_factory):
    stamps = [datetime.fromisoformat(s.replace("Z", "+00:00")) for s in STAMPS]
    opts = table_factory([ev(f"m{i}", 1, at=at) for i, at in enumerate(stamps)], aware=True)
    since = SqlFeedbackSource({**opts, "since": "2026-03-01T11:30:00Z"}, ".", "f").read()
    # PostgreSQL's timestamptz keeps the instant: all four rows. SQLite and MariaDB DATETIME
    # columns store the wall time without its offset, so 09:00-03:00 comes back as a naive
    # 09:00 (read as UTC): a limit of those column types, which is why a text column with
    # offsets (previous test) or timestamptz is the recommended schema.
    assert len(since.sft_examples) == (4 if opts["url"].startswith("postgresql") else 3)
    naive = since.counts["naive_timestamps"]
    assert naive == (0 if opts["url"].startswith("postgresql") else 4)


def test_f4_redaction(table_factory):
    opts = table_factory([ev("m1", 1, prompt=F4, response="write to jane.roe@example.com")])
    (example,) = SqlFeedbackSource(opts, ".", "f").read().sft_examples
    text = " ".join(m.content for m in example.messages)
    assert "example.com" not in text and "7946" not in text and "order #123-456, 2024-05-01" in text


def test_incremental_on_backend(table_factory, tmp_path):
    opts = table_factory([ev(f"m{i}", 1, response=f"r{i}") for i in range(7)])
    opts = {**opts, "state_dir": str(tmp_path / "st")}
    first = SqlFeedbackSource(opts, ".", "f").read()
    second = SqlFeedbackSource(opts, ".", "f").read()
    assert first.counts["new_rows"] == 7 and second.counts["new_rows"] == 0
    assert len(second.sft_examples) == 7
