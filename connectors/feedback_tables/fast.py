"""Fast ingest of a feedback table (issue 19): Arrow batches, a columnar redaction pre-filter,
and every core for the per-row rest. Same records, byte for byte, as the row-by-row path.

How it differs from :meth:`SqlFeedbackSource.iter_records` with ``ingest: rows``:

1. **Read.** PostgreSQL is read through ADBC (``adbc-driver-postgresql``: ``COPY`` in binary,
   straight into Arrow record batches) when every selected column has a type whose Python value
   is the one psycopg2 gives (text, integers, float8, bool, timestamps); other databases and
   other types are read through SQLAlchemy as before. The statement is the same ``SELECT``
   (same filter, same ``ORDER BY`` the dedup relies on).
2. **Chunks cut at group boundaries.** Batches are re-cut so that all rows of one dedup key sit in
   one chunk; each chunk is then independent (dedup, "latest wins", quarantine order). ADBC
   chunks are read and cut a few ahead in a thread (:mod:`~connectors.feedback_tables.prefetch`).
3. **Columnar lane** (:mod:`connectors.feedback_tables.lane`, when the mapping has no JSON paths
   and the redactor is the built-in one): keys, ratings, timestamps, dedup and the JSON text of
   SFT examples and preference pairs are computed with Arrow kernels and numpy; only texts the
   RE2 pre-filter of :data:`feedback.redact.PREFILTERS` flags meet the exact validators
   (libphonenumber, Luhn, mod-97), and only rows the lane cannot decide (quarantine reasons,
   tasks, unusual timestamps...) take the row path, with their whole dedup group.
   Other chunks take the row path with the columnar pre-filter's redaction hints.
4. **Every core.** Chunks go to a pool of ``workers`` processes (forked on Linux; at most two chunks in
   flight per worker, so memory stays bounded; JSON lines come back as one string per chunk),
   and results come back in order. A read that fits one chunk runs inline.

Memory is bounded by the chunk size (``max(batch_size, LANE_ROWS)`` rows in the lane) times the
chunks in flight, whatever the table's size.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy.engine import make_url

from connectors.feedback_tables import lane, overlap
from connectors.feedback_tables.mapping import TEXT_FIELDS
from connectors.feedback_tables.prefetch import prefetch
from feedback.redact import MAY_HOLD_PII, PREFILTERS

Chunk = Any  # a pa.Table (ADBC) or a list of row dicts (SQLAlchemy)

_WORKER: Any = None  # the source rebuilt in each worker process
LANE_ROWS = 32768
"""Rows per chunk of the columnar lane at least. Each Arrow kernel call and numpy step has a fixed
cost, about a hundred of them per chunk: on the bench's 1,000,000 rows the lane's CPU (reading
process) was 2.7-3.1 s with 8,192-row chunks, 1.8-2.2 s with 32,768 (in-process, interleaved);
65,536 gave no more. A chunk's working set is about 10-20 MB."""
PREFETCH = 1
"""Chunks the read-ahead thread may hold ready (besides the one it is cutting): with
:data:`LANE_ROWS`-row chunks, one keeps the lane fed (reading a chunk takes a third of the time
the lane takes to process it) and bounds memory."""


def _safe_type(t: pa.DataType) -> bool:
    """Arrow types whose Python values equal psycopg2's (float4 and numerics do not)."""
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t) or pa.types.is_boolean(t)
            or pa.types.is_null(t) or pa.types.is_timestamp(t) or t == pa.float64())


def arrow_batches(url: str, sql: str, batch_bytes: int = 1 << 20,
                  keep: list[Any] | None = None) -> Iterator[pa.RecordBatch] | None:
    """Record batches of ``sql`` through ADBC, or ``None`` when ADBC does not fit (not PostgreSQL,
    driver not installed, a column type whose values would differ from psycopg2's, or the
    connection or statement fails: the SQLAlchemy path then reads, or reports the error).

    ``keep``: a list that holds the open ADBC database and connection between calls (a worker
    reading many shards connects once; a connection costs ~0.2 s); ``None``: closed after the read.
    Uses ADBC's low-level API (``adbc_driver_manager``): its DB-API module imports
    ``pyarrow.dataset``, which imports pandas when installed (seconds and ~40 MB per process)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        return None
    try:
        import adbc_driver_manager as adbc
        import adbc_driver_postgresql
    except ImportError:
        return None
    conn = keep if keep is not None else []
    stmt: list[Any] = []
    try:
        if not conn:
            conn.append(adbc_driver_postgresql.connect(parsed.set(drivername="postgresql").render_as_string(
                hide_password=False)))
            conn.append(adbc.AdbcConnection(conn[0]))
        stmt.append(adbc.AdbcStatement(conn[1]))
        stmt[0].set_options(**{"adbc.postgresql.batch_size_hint_bytes": str(batch_bytes)})
        stmt[0].set_sql_query(sql)
        stream, _ = stmt[0].execute_query()
        reader = pa.RecordBatchReader._import_from_c(stream.address)
    except Exception:  # noqa: BLE001 - a failing filter or connection: the SQLAlchemy path raises the SourceError
        _close(stmt)
        _close(conn)
        conn.clear()
        return None
    done = stmt if keep is not None else conn + stmt
    if not all(_safe_type(f.type) for f in reader.schema):
        reader.close()
        _close(done)
        return None

    def batches() -> Iterator[pa.RecordBatch]:
        try:
            yield from reader
        finally:
            reader.close()
            _close(done)

    return batches()


def _close(handles: list[Any]) -> None:
    """Close ADBC statement, connection and database, innermost first."""
    for handle in reversed(handles):
        with contextlib.suppress(Exception):  # closing after a failure
            handle.close()


def _key(chunk: Chunk, i: int, key_cols: list[str]) -> tuple:
    """The dedup key of row ``i`` exactly as the row path computes it (``str`` of each value)."""
    if isinstance(chunk, list):
        return tuple(str(chunk[i].get(c)) for c in key_cols)
    return tuple(str(chunk.column(c)[i].as_py()) for c in key_cols)


def _join(a: Chunk | None, b: Chunk) -> Chunk:
    if a is None:
        return b
    return a + b if isinstance(b, list) else pa.concat_tables([a, b])


def chunks_by_group(parts: Iterable[Chunk], key_cols: list[str], size: int) -> Iterator[Chunk]:
    """Re-cut ``parts`` (row lists or Arrow tables in key order) into chunks of about ``size``
    rows, never splitting the rows of one key across two chunks."""
    carry: Chunk | None = None
    for part in parts:
        carry = _join(carry, part)
        while len(carry) >= size:
            cut = size
            last = _key(carry, cut - 1, key_cols)
            while cut < len(carry) and _key(carry, cut, key_cols) == last:
                cut += 1
            if cut == len(carry):
                break  # the group may go on in the next part
            yield carry[:cut] if isinstance(carry, list) else carry.slice(0, cut)
            carry = carry[cut:] if isinstance(carry, list) else carry.slice(cut)
    if carry is not None and len(carry):
        yield carry


def redaction_hints(columns: dict[str, pa.Array]) -> dict[str, Any]:
    """Text -> ``False`` (cannot hold personal data) or a per-detector tuple of booleans, for every
    string value of ``columns`` (texts not listed go through the full redactor)."""
    hints: dict[str, Any] = {}
    for arr in columns.values():
        arr = pc.drop_null(arr)
        if len(arr) == 0:
            continue
        may = pc.match_substring_regex(arr, MAY_HOLD_PII)
        for text in pc.filter(arr, pc.invert(may)).to_pylist():
            hints[text] = False
        candidates = pc.filter(arr, may)
        if len(candidates):
            flags = [pc.match_substring_regex(candidates, p).to_pylist() for p in PREFILTERS]
            for text, *need in zip(candidates.to_pylist(), *flags):
                hints[text] = tuple(need)
    return hints


def _text_arrays(chunk: Chunk, columns: list[str]) -> dict[str, pa.Array]:
    out = {}
    for c in columns:
        if isinstance(chunk, list):
            try:
                out[c] = pa.array([r.get(c) for r in chunk], type=pa.string())
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                continue  # not all text: those values take the full redactor
        elif pa.types.is_string(chunk.schema.field(c).type) or pa.types.is_large_string(chunk.schema.field(c).type):
            out[c] = chunk.column(c).combine_chunks()
    return out


def process_chunk(source: Any, chunk: Chunk, start: int, key_fields: list[str], as_json: bool,
                  columnar: bool = False, joined: bool = False) -> tuple[list, dict]:
    """Records of one chunk (JSON lines if ``as_json``) and the counts it added: through the
    columnar lane (:mod:`connectors.feedback_tables.lane`) when ``columnar`` and the chunk's types
    allow, else through the source's own row path with redaction hints. ``start``: index of the
    chunk's first row in the read; ``joined`` (with ``as_json``): the lines as one string, each
    ending in a newline (``[]`` when there is none)."""
    saved = source.counts
    source.reset_counts()
    try:
        table = (as_table(chunk) if isinstance(chunk, list) else chunk) if columnar else None
        if table is not None:
            try:
                return lane.ChunkLane(source, table, start, key_fields).run(as_json, joined), source.counts
            except lane.Unsupported:
                source.reset_counts()
        out = _row_path(source, chunk, start, key_fields, as_json)
        return (["".join(line + "\n" for line in out)] if out else []) if as_json and joined else out, source.counts
    finally:
        source.counts = saved


def _row_path(source: Any, chunk: Chunk, start: int, key_fields: list[str], as_json: bool) -> list:
    redactor = source._redactor
    if redactor is not None and redactor._builtin_only and "redact" not in vars(redactor):  # not patched
        source._hints = redaction_hints(_text_arrays(chunk, [source._cols[f] for f in TEXT_FIELDS if f in source._cols]))
    rows = chunk if isinstance(chunk, list) else chunk.to_pylist()
    try:
        records = source.records_from_rows(source._parse_all(rows, key_fields, start=start), grouped=True)
        return [r.model_dump_json() for r in records] if as_json else list(records)
    finally:
        source._hints = {}


_PLAIN = (str, int, float, bool)


def as_table(rows: list[dict[str, Any]]) -> pa.Table | None:
    """Row dicts (SQLAlchemy) as an Arrow table, or ``None`` when a column mixes Python types or
    holds other ones (Arrow would change them: ``[1, 2.5]`` becomes floats)."""
    if not rows:
        return None
    columns = {}
    for name in rows[0]:
        values = [r[name] for r in rows]
        kinds = {type(v) for v in values if v is not None}
        if len(kinds) > 1 or not kinds <= set(_PLAIN):
            return None
        try:
            columns[name] = pa.array(values, type=pa.string() if not kinds else None)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return None
    return pa.table(columns)


def _pack(chunk: Chunk) -> Chunk | bytes:
    """An Arrow chunk as IPC stream bytes (only its own rows: pickling a slice would ship the whole
    batch it was cut from); row lists as they are."""
    if isinstance(chunk, list):
        return chunk
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, chunk.schema) as writer:
        writer.write_table(chunk)
    return sink.getvalue().to_pybytes()


def _unpack(packed: Chunk | bytes) -> Chunk:
    if isinstance(packed, bytes):
        return pa.ipc.open_stream(packed).read_all()
    return packed


def _init_worker(factory: Callable[[], Any], cols: dict[str, str]) -> None:
    """Build this worker's source (its column mapping is the parent's)."""
    global _WORKER
    _WORKER = factory()
    _WORKER._cols = cols


def _run_in_worker(packed: Chunk | bytes, start: int, key_fields: list[str], as_json: bool,
                   columnar: bool) -> tuple[list | str | None, dict]:
    """One chunk in a worker; JSON lines come back as one string, each line ending in a newline (a
    single copy through the pipe, not one pickled object per line; a JSON line holds no raw newline)."""
    out, counts = process_chunk(_WORKER, _unpack(packed), start, key_fields, as_json, columnar, joined=True)
    return (out[0] if out else None) if as_json else out, counts


def run_chunks(source: Any, factory: Callable[[], Any], chunks: Iterable[Chunk], key_fields: list[str],
               as_json: bool, workers: int | None, columnar: bool = False, start: int = 0,
               blocks: bool = False, ahead: bool = False) -> Iterator[list]:
    """Process ``chunks`` in order (inline for one chunk or one worker; Arrow chunks of the columnar
    lane with a redactor here, redaction on ``workers - 1`` processes (:mod:`~connectors.feedback_tables.overlap`);
    else on a process pool), adding each chunk's counts to ``source.counts`` and yielding its records, one list per chunk
    (one generator step per chunk, not per record). ``start``: read index of the first row;
    ``blocks`` (with ``as_json``): each list holds one string of the chunk's lines, each ending in
    a newline; ``ahead``: chunks after the second are read by :func:`prefetch`'s thread (started
    after any worker process is forked: a fork copies no thread, and no lock a thread holds)."""
    n = workers or os.cpu_count() or 1
    it = iter(chunks)
    first = next(it, None)
    second = next(it, None) if first is not None else None
    if first is None:
        return
    it = prefetch(it, PREFETCH) if ahead and second is not None else it
    if columnar and second is not None and overlap.fits(source, first, n):  # the lane here, redaction beside
        for out, counts in overlap.run_lanes(source, _chain(first, second, it), key_fields, as_json, n, start,
                                             blocks, process_chunk):
            _add(source.counts, counts)
            yield out
        return
    if second is None or n == 1:
        for chunk in _chain(first, second, it):
            out, counts = process_chunk(source, chunk, start, key_fields, as_json, columnar, joined=blocks)
            start += len(chunk)
            _add(source.counts, counts)
            yield out
        return
    # fork on Linux: no re-import of the caller's __main__ (a script without a main guard works),
    # and the workers share the parent's pages; spawn where fork is unsafe (macOS) or missing
    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    inflight: deque[Future] = deque()
    with ProcessPoolExecutor(n, mp_context=ctx, initializer=_init_worker, initargs=(factory, source._cols)) as pool:
        pool.submit(int)  # forks every worker now (fork context), before the prefetch thread starts
        for chunk in _chain(first, second, it):
            inflight.append(pool.submit(_run_in_worker, _pack(chunk), start, key_fields, as_json, columnar))
            start += len(chunk)
            while len(inflight) >= 2 * n:
                yield _collect(source, inflight.popleft(), blocks)
        while inflight:
            yield _collect(source, inflight.popleft(), blocks)


def _chain(first: Chunk, second: Chunk | None, rest: Iterator[Chunk]) -> Iterator[Chunk]:
    yield first
    if second is not None:
        yield second
        yield from rest


def _collect(source: Any, future: Future, blocks: bool = False) -> list:
    out, counts = future.result()
    _add(source.counts, counts)
    if out is None:
        return []
    if isinstance(out, str):
        return [out] if blocks else out[:-1].split("\n")
    return out


def _add(total: dict[str, int], part: dict[str, int]) -> None:
    for k, v in part.items():
        total[k] = total.get(k, 0) + v


class SourceFactory:
    """Rebuilds a source in a worker process from its constructor arguments (picklable)."""

    def __init__(self, cls: type, options: dict[str, Any], base_dir: Path, domain: str) -> None:
        self.cls, self.options, self.base_dir, self.domain = cls, options, base_dir, domain

    def __call__(self) -> Any:
        source = self.cls(self.options, self.base_dir, self.domain)
        source.reset_counts()
        return source


def read(source: Any, db: Any, key_fields: list[str], as_json: bool, columnar: bool,
         shard: Any = None, keep: list[Any] | None = None, blocks: bool = False) -> Iterator[list]:
    """The fast read of ``source`` (an ``SqlFeedbackSource`` whose ``db`` is open): Arrow batches
    (or SQLAlchemy rows), chunks cut at group boundaries, processed in order; one list of records
    (JSON lines if ``as_json``) per chunk. With ``shard`` (a
    :class:`~connectors.feedback_tables.shards.Shard`), only its key range, inline, its rows
    numbered from ``shard.start``; ``keep``: see :func:`arrow_batches`; ``blocks``: see
    :func:`run_chunks`."""
    cols, opts = source._cols, source.options
    order = [cols[f] for f in key_fields]
    then = [cols[f] for f in ("created_at", "row_id") if f in cols]
    args = (opts.table, opts.query, source._columns(), opts.filter, order, then)
    parts: Any = arrow_batches(opts.url, db.select_sql(*args, within=shard), keep=keep)
    size = max(opts.batch_size, LANE_ROWS) if columnar else opts.batch_size
    if parts is None:  # SQLAlchemy rows, in this thread (a SQLite connection stays in its own thread)
        rows = db.stream(*args, after=None, batch_size=opts.batch_size, within=shard)
        chunks = chunks_by_group(_batched(rows, opts.batch_size), order, size)
    else:  # ADBC: read, cut and made contiguous (one copy, off the lane's thread) ahead (run_chunks' ``ahead``)
        cut = chunks_by_group((pa.Table.from_batches([b]) for b in parts), order, size)
        chunks = (c.combine_chunks() for c in cut)
    factory = SourceFactory(type(source), source._raw_options, source.base_dir, source.domain)
    ahead = parts is not None
    if shard is not None:
        yield from run_chunks(source, factory, chunks, key_fields, as_json, 1, columnar, shard.start, blocks, ahead)
        return
    yield from run_chunks(source, factory, chunks, key_fields, as_json, opts.workers, columnar, blocks=blocks,
                          ahead=ahead)


def _batched(rows: Iterator[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    """Lists of up to ``size`` rows."""
    while batch := list(itertools.islice(rows, size)):
        yield batch
