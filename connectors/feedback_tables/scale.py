"""Scale-out: one feedback read on a Ray cluster through Ray Data (issue 19; the ``ray`` extra).

``ingest: ray`` (or :meth:`SqlFeedbackSource.ray_dataset`) reads the same mapping as the
single-process read, cut into key ranges (:mod:`connectors.feedback_tables.shards`): a Ray Data
:class:`~ray.data.Datasource` with one read task per shard. Each task rebuilds the source from
its options on its worker, reads its range with the single-process fast path (ADBC Arrow batches
or SQLAlchemy rows, the columnar lane; inline, Ray gives the parallelism) and emits blocks with
the columns ``shard``, ``pos`` (order inside the shard), ``kind`` (record class, or null for
JSON lines), ``record`` (the record's JSON) and, on one last row per shard, ``counts`` (JSON).
The driver streams the blocks in order (``preserve_order``, set in the dataset's own copy of the
current ``DataContext``: the caller's context is left as it was) and gives the same records, byte
for byte, as ``ingest: fast``, and the same ``counts``.

The cluster is the running one (``RAY_ADDRESS``, or an initialised ``ray``), else a local one
is started. Every node must reach the database at the source's URL (a SQLite path must exist
on every node); the redaction key's environment variable is passed to the tasks.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import ray
from ray.data import DataContext, Dataset
from ray.data.block import BlockMetadata
from ray.data.datasource import Datasource, ReadTask

from connectors.feedback_tables import fast, shards
from sdk.sources import PreferencePair, SftExample
from sdk.tasks.records import Quarantined, Task

KINDS = {c.__name__: c for c in (SftExample, PreferencePair, Task, Quarantined)}
_ADBC: dict[str, list[Any]] = {}  # URL -> this Ray worker's ADBC database and connection, kept across tasks
SCHEMA = pa.schema([("shard", pa.int32()), ("pos", pa.int64()), ("kind", pa.string()), ("record", pa.string()),
                    ("counts", pa.string())])


def _block(index: int, pos: int, out: list, as_json: bool) -> pa.Table:
    """One chunk's records as a block (JSON lines as they are; records with their class)."""
    kinds = [None] * len(out) if as_json else [type(r).__name__ for r in out]
    texts = out if as_json else [r.model_dump_json() for r in out]
    return pa.table([pa.array([index] * len(out), pa.int32()), pa.array(range(pos, pos + len(out)), pa.int64()),
                     pa.array(kinds, pa.string()), pa.array(texts, pa.string()), pa.nulls(len(out), pa.string())],
                    schema=SCHEMA)


def _read_shard(factory: fast.SourceFactory, shard: shards.Shard, as_json: bool, columnar: bool) -> Iterator[pa.Table]:
    """Ray read task: the records of one shard, one block per chunk, then its counts row."""
    source = factory()
    db = source._open()
    pos = 0
    try:
        for out in fast.read(source, db, source._key_fields(), as_json, columnar, shard=shard,
                             keep=_ADBC.setdefault(source.options.url, [])):
            if out:
                yield _block(shard.index, pos, out, as_json)
                pos += len(out)
    finally:
        db.close()
    yield pa.table([pa.array([shard.index], pa.int32()), pa.array([pos], pa.int64()), pa.nulls(1, pa.string()),
                    pa.nulls(1, pa.string()), pa.array([json.dumps(source.counts)])], schema=SCHEMA)


class ShardDatasource(Datasource):
    """A Ray Data datasource of a feedback read: one read task per key-range shard.

    Args:
        factory: rebuilds the source on a worker (:class:`fast.SourceFactory`).
        plan: the shards (:func:`shards.plan`), in read order.
        as_json: emit JSON lines (``kind`` null) rather than records with their class.
        columnar: whether the columnar lane reproduces the source's row path (``lane.fits``).
    """

    def __init__(self, factory: fast.SourceFactory, plan: list[shards.Shard], as_json: bool, columnar: bool) -> None:
        self.factory, self.plan, self.as_json, self.columnar = factory, plan, as_json, columnar

    def estimate_inmemory_data_size(self) -> int | None:
        """Unknown before the read (Ray Data then sizes blocks as they come)."""
        return None

    def get_read_tasks(self, parallelism: int, **_: Any) -> list[ReadTask]:
        """One read task per shard, whatever ``parallelism`` (the shards are the parallelism)."""
        meta = BlockMetadata(num_rows=None, size_bytes=None, exec_stats=None, input_files=None)
        return [ReadTask(functools.partial(_read_shard, self.factory, s, self.as_json, self.columnar), meta, SCHEMA)
                for s in self.plan]


def _ensure_ray() -> None:
    if not ray.is_initialized():
        os.environ.setdefault("RAY_AUTH_MODE", "disabled") if not os.environ.get("RAY_ADDRESS") else None
        ray.init(include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)


def dataset(source: Any, as_json: bool, columnar: bool, n_shards: int | None = None) -> Dataset:
    """The read of ``source`` (an ``SqlFeedbackSource``) as a Ray Dataset (columns: see the module).

    Args:
        n_shards: key ranges to cut (default: the source's ``shards`` option, else 4 per cluster CPU).
    Raises:
        SourceError: the key cannot be ordered by the database, or the database cannot be used.
    """
    _ensure_ray()
    n = n_shards or source.options.shards or 4 * max(int(ray.cluster_resources().get("CPU", 1)), 1)
    plan = shards.plan(source, n)
    factory = fast.SourceFactory(type(source), source._raw_options, source.base_dir, source.domain)
    key_env = source.options.redaction_key_env
    remote = {"runtime_env": {"env_vars": {key_env: os.environ[key_env]}}} if os.environ.get(key_env) else {}
    ctx = DataContext.get_current().copy()  # the dataset keeps its own; the caller's stays as it was
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    with DataContext.current(ctx):
        return ray.data.read_datasource(ShardDatasource(factory, plan, as_json, columnar), ray_remote_args=remote)


def read(ds: Dataset, source: Any, as_json: bool) -> Iterator[list]:
    """Records of the dataset ``ds`` of ``source`` (:func:`dataset`; JSON lines if ``as_json``), one
    list per block, in the single-process read's order; the shards' counts are added to
    ``source.counts``.

    Raises:
        RuntimeError: blocks came back out of order.
    """
    source.reset_counts()
    last = (-1, -1)
    for block in ds.iter_batches(batch_format="pyarrow", batch_size=None):
        index, pos = block.column("shard").to_pylist(), block.column("pos").to_pylist()
        if not block.num_rows or (index[0], pos[0]) < last or sorted(zip(index, pos)) != list(zip(index, pos)):
            if block.num_rows:
                raise RuntimeError(f"Ray Data returned shard {index[0]} out of order (preserve_order off?)")
            continue
        last = (index[-1], pos[-1])
        for counts in block.column("counts").drop_null().to_pylist():
            fast._add(source.counts, json.loads(counts))
        rows = block.filter(block.column("record").is_valid())
        texts = rows.column("record").to_pylist()
        yield texts if as_json else [KINDS[k].model_validate_json(t) for k, t in zip(rows.column("kind").to_pylist(),
                                                                                     texts)]
