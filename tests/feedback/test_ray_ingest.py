"""Scale-out (issue 19): the same mapping read on a local Ray cluster with Ray Data, sharded by key
ranges, gives the single-process read's records byte for byte, and the same counts.

The table is test_fast_ingest's tricky one (duplicate clicks, time zones, bad ratings, personal
data, quarantines, tasks) plus rows whose message id is NULL (their own shard: first on SQLite,
last on PostgreSQL). One local cluster (2 CPUs) serves the module. The two Ray tests are ``slow``
(``pytest -m slow tests/feedback/test_ray_ingest.py``): the cluster's start and the first read's
worker start are most of their time (37 s and 42 s at load average 22 on 2 cores; 104 s in all).
"""

from __future__ import annotations

import os
import sqlite3
import uuid
import warnings
from pathlib import Path

import pytest
import sqlalchemy as sa

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
ray = pytest.importorskip("ray", reason="the ray extra is not installed")

from conftest import SERVERS, fresh_server_database

from connectors.feedback_tables import fast, lane, shards
from connectors.feedback_tables.source import SqlFeedbackSource
from tests.feedback.test_fast_ingest import COLS, OPTIONS, server_table, table_rows


@pytest.fixture(scope="module")
def cluster():
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def rows_with_null_keys() -> list[tuple]:
    """The tricky rows, every 13th without a message id (column 2)."""
    return [r if k % 13 else r[:2] + (None,) + r[3:] for k, r in enumerate(table_rows())]


def read(url: str, base: Path, table: str, **extra):
    source = SqlFeedbackSource({"url": url, **OPTIONS, "table": table, **extra}, base, "feedback/test")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(source.iter_jsonl()), source.counts, source


def assert_ray_matches(url: str, base: Path, table: str) -> None:
    reference, counts, source = read(url, base, table, ingest="rows")
    assert counts["quarantined"] and counts["duplicates_dropped"] and counts["redactions"] and counts["tasks"]
    plan = shards.plan(source, 5)
    assert len(plan) >= 5 and sum(s.nulls is True for s in plan) == 1  # really cut, NULL keys apart
    lines, ray_counts, _ = read(url, base, table, ingest="ray", shards=5, batch_size=20)
    assert lines == reference
    assert ray_counts == counts


@pytest.mark.slow
def test_ray_read_matches_single_process_on_sqlite(tmp_path, cluster):
    con = sqlite3.connect(tmp_path / "fb.db")
    con.execute(f"CREATE TABLE fb({', '.join(COLS)})")
    con.executemany(f"INSERT INTO fb VALUES ({','.join('?' * len(COLS))})", rows_with_null_keys())
    con.commit()
    con.close()
    url = f"sqlite:///{tmp_path / 'fb.db'}"
    assert shards.plan(read(url, tmp_path, "fb", ingest="rows")[2], 5)[0].nulls is True  # SQLite: NULLs first
    assert_ray_matches(url, tmp_path, "fb")


@pytest.mark.slow
def test_dataset_leaves_the_callers_data_context_alone(tmp_path, cluster):
    """``scale.dataset`` orders its own dataset (``preserve_order`` in the dataset's context) and
    leaves the caller's global Ray Data context as it was (it used to switch it on for everyone)."""
    from ray.data import DataContext

    from connectors.feedback_tables import scale

    con = sqlite3.connect(tmp_path / "fb.db")
    con.execute(f"CREATE TABLE fb({', '.join(COLS)})")
    con.executemany(f"INSERT INTO fb VALUES ({','.join('?' * len(COLS))})", table_rows(60))
    con.commit()
    con.close()
    url = f"sqlite:///{tmp_path / 'fb.db'}"
    reference, _, source = read(url, tmp_path, "fb", ingest="rows")
    ctx = DataContext.get_current()
    before = (ctx.execution_options.preserve_order, ctx.enable_progress_bars)
    ctx.execution_options.preserve_order, ctx.enable_progress_bars = False, True
    try:
        ds = scale.dataset(source, as_json=True, columnar=lane.fits(source, SqlFeedbackSource), n_shards=3)
        assert DataContext.get_current() is ctx
        assert (ctx.execution_options.preserve_order, ctx.enable_progress_bars) == (False, True)
        assert ds.context.execution_options.preserve_order and not ds.context.enable_progress_bars
        assert [line for out in scale.read(ds, source, True) for line in out] == reference
    finally:
        ctx.execution_options.preserve_order, ctx.enable_progress_bars = before


@pytest.mark.slow
@pytest.mark.postgres
def test_ray_read_matches_single_process_on_postgres(tmp_path, cluster, monkeypatch):
    """PostgreSQL: every shard read through ADBC Arrow batches and the columnar lane; NULLs last;
    exact bounds (window query), then bounds from a block sample (the id is a NOT NULL integer key)."""
    url = "postgresql+psycopg2://postgres@127.0.0.1:5432/test"
    table = f"fb_{uuid.uuid4().hex[:8]}"
    engine = server_table(url, table, rows_with_null_keys())
    try:
        source = read(url, tmp_path, table, ingest="rows")[2]
        assert shards.plan(source, 5)[-1].nulls is True  # PostgreSQL: NULLs last
        assert_ray_matches(url, tmp_path, table)
        with engine.begin() as conn:
            conn.execute(sa.text(f"ANALYZE {table}"))
        monkeypatch.setattr(shards, "SAMPLE_KEYS", 100)  # 5 x 100 of 633 rows: 79 % of the pages drawn
        sampled = shards.plan(source, 5)
        assert {s.start for s in sampled} == {0, 1} and len(sampled) >= 3  # sampled: no counting
        with warnings.catch_warnings():  # records (not JSON) on Ray: the single-process read()'s objects
            warnings.simplefilter("ignore")
            ray_result, local = (SqlFeedbackSource({"url": url, **OPTIONS, "table": table, "ingest": mode,
                                                    "shards": 5}, tmp_path, "feedback/test").read()
                                 for mode in ("ray", "fast"))
        assert (ray_result.sft_examples, ray_result.preference_pairs, ray_result.tasks, ray_result.quarantined,
                ray_result.counts) == (local.sft_examples, local.preference_pairs, local.tasks, local.quarantined,
                                       local.counts)
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE {table}"))
        engine.dispose()


def test_one_shard_when_asked_for_one(tmp_path):
    """No cut, no NULL keys: one shard without conditions (the plain read)."""
    con = sqlite3.connect(tmp_path / "fb.db")
    con.execute(f"CREATE TABLE fb({', '.join(COLS)})")
    con.executemany(f"INSERT INTO fb VALUES ({','.join('?' * len(COLS))})", table_rows(40))
    con.commit()
    con.close()
    source = read(f"sqlite:///{tmp_path / 'fb.db'}", tmp_path, "fb", ingest="rows")[2]
    (only,) = shards.plan(source, 1)
    assert only.nulls is None and only.start == 0 and only.conditions(sa.table("fb", sa.column(only.key))) == []
    assert len(shards.plan(source, 4)) == 4


def shard_by_shard(url: str, base: Path, table: str, n: int) -> tuple[list[str], dict]:
    """What the Ray tasks do, in this process: each shard of the plan read alone, concatenated."""
    plan = shards.plan(read(url, base, table, ingest="rows")[2], n)
    assert len(plan) >= n
    lines, counts = [], {}
    for shard in plan:
        source = SqlFeedbackSource({"url": url, **OPTIONS, "table": table, "batch_size": 20}, base, "feedback/test")
        db = source._open()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for out in fast.read(source, db, source._key_fields(), True, lane.fits(source, SqlFeedbackSource),
                                 shard=shard):
                lines += out
        db.close()
        fast._add(counts, source.counts)
    return lines, counts


@pytest.mark.parametrize("server", SERVERS)
def test_shards_concatenated_equal_the_read_on_servers(tmp_path, server):
    """The key-range plan (exact bounds, NULL keys where the dialect sorts them) on PostgreSQL and
    MariaDB, without Ray: the shards' records in shard order are the one-process read's."""
    with fresh_server_database(server, "shards") as url:
        engine = sa.create_engine(url)
        rows = [r[:7] + (None if isinstance(r[7], str) else r[7],) + r[8:] for r in rows_with_null_keys()]
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE fb (id BIGINT PRIMARY KEY, conversation_id VARCHAR(64), "
                                 "message_id VARCHAR(64), user_id VARCHAR(64), created_at VARCHAR(64), prompt TEXT, "
                                 "response TEXT, rating INTEGER, correction TEXT, tests TEXT, expected TEXT)"))
            conn.execute(sa.text(f"INSERT INTO fb VALUES ({', '.join(':' + c for c in COLS)})"),
                         [dict(zip(COLS, r)) for r in rows])
        engine.dispose()
        reference, counts, _ = read(url, tmp_path, "fb", ingest="rows")
        assert shard_by_shard(url, tmp_path, "fb", 5) == (reference, counts)
