"""Key-range shards of one feedback read (issue 19, scale-out).

A read ordered by the dedup key (message, user) is cut into ranges of the key's first column,
``lo <= key < hi`` in the database's own order (its collation), plus one shard for the rows
whose first key column is NULL, placed where the dialect sorts NULLs (last on PostgreSQL and
Oracle, first on SQLite, MySQL/MariaDB and SQL Server). All rows of one dedup key share that
column, so no dedup group spans two shards. Each shard is read with the single-process read's
``SELECT`` (same columns, filter and ``ORDER BY``) plus its range
(:meth:`Database.select`'s ``within``), through the same fast path
(:func:`connectors.feedback_tables.fast.read`: ADBC Arrow batches or SQLAlchemy rows, the
columnar lane), so the shards' records, concatenated in shard order, are the single-process
read's records byte for byte. Each shard carries the read index of its first row in the whole
read (``start``), which rows without an integer ``row_id`` take as their order and redaction
scope.

The bounds come from one window query (``row_number()`` and ``rank()`` over the key, on
PostgreSQL, MySQL 8 / MariaDB 10.2, SQLite 3.25 and later; one index scan where the key is
indexed): every ``ceil(rows / n)``-th key, and ``rank() - 1`` of a bound is the number of rows
before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from sdk.errors import SourceError

NULLS_FIRST = frozenset({"sqlite", "mysql", "mariadb", "mssql"})
"""Dialects whose ascending ``ORDER BY`` puts NULLs first."""


@dataclass(frozen=True)
class Shard:
    """One key range of a read.

    Attributes:
        index: position of the shard in the read (records come back in this order).
        key: the column the ranges cut (the first dedup key column).
        lo, hi: ``lo <= key < hi`` (``None``: unbounded on that side).
        nulls: ``True``: only rows whose key is NULL; ``False``: non-NULL keys in ``[lo, hi)``;
            ``None``: every row (a read of one shard).
        start: read index of the shard's first row in the single-process read.
    """

    index: int
    key: str
    lo: Any = None
    hi: Any = None
    nulls: bool | None = None
    start: int = 0

    def conditions(self, rel: sa.FromClause) -> list[Any]:
        """SQL conditions selecting this shard's rows of ``rel`` (the table or query)."""
        col = rel.c[self.key]
        if self.nulls is None:
            return []
        if self.nulls:
            return [col.is_(None)]
        out = [col.is_not(None)]
        if self.lo is not None:
            out.append(col >= self.lo)
        if self.hi is not None:
            out.append(col < self.hi)
        return out


def plan(source: Any, shards: int) -> list[Shard]:
    """Cut the read of ``source`` (an ``SqlFeedbackSource``) into at most ``shards`` key ranges
    of about equal row counts (plus a NULL-key shard when there are such rows).

    Raises:
        SourceError: a dedup key column is read through a JSON path (the database cannot order
            by it), or the database cannot be used.
    """
    db = source._open()
    try:
        key_fields = source._key_fields()
        if not key_fields or not all(f in source._cols for f in key_fields):
            raise SourceError("a sharded read needs the dedup key in columns (not JSON paths)",
                              "map message_id (or conversation_id, prompt, response) and user_id to columns, "
                              "or use `ingest: fast`")
        key, opts = source._cols[key_fields[0]], source.options
        with db._connect() as conn:
            rel = db.relation(conn, opts.table, opts.query)
            where = filter_conditions(opts.filter)
            sampled = sampled_bounds(conn, rel, source, where, shards) if shards > 1 else None
            if sampled is not None:  # read indexes unused: no counting
                return _shards(key, [(b, 0) for b in sampled], 1, 1, db.engine.dialect.name in NULLS_FIRST)
            col = rel.c[key]
            total, known = conn.execute(sa.select(sa.func.count(), sa.func.count(col)).select_from(rel)
                                        .where(*where)).one()
            bounds = _bounds(conn, rel, col, where, known, shards) if shards > 1 and known else []
        return _shards(key, bounds, known, total - known, db.engine.dialect.name in NULLS_FIRST)
    finally:
        db.close()


def ids_cover_rows(rel: sa.FromClause, source: Any) -> bool:
    """Whether every row carries an integer ``row_id`` (a NOT NULL integer column): then the rows'
    read indexes never reach a record (order and redaction scope use the id), and shards need no
    ``start``."""
    name = source._cols.get("row_id")
    if name is None or name not in rel.c:
        return False
    col = rel.c[name]
    return isinstance(rel, sa.Table) and not col.nullable and isinstance(col.type, sa.Integer)


SAMPLE_KEYS = 200
"""Sampled keys per shard for :func:`sampled_bounds`."""


def sampled_bounds(conn: sa.Connection, rel: sa.FromClause, source: Any, where: list[Any],
                   shards: int) -> list[Any] | None:
    """Bounds of about ``shards`` ranges from a block sample of the keys (PostgreSQL ``TABLESAMPLE
    SYSTEM``, sorted by the database), without reading the table; ``None`` where that does not
    apply (another database, a ``query:``, rows without an integer id, a table never analysed).
    Ranges come out roughly even; each shard's ``start`` is left 0 (unused: :func:`ids_cover_rows`)."""
    if conn.dialect.name != "postgresql" or not ids_cover_rows(rel, source):
        return None
    estimate = estimate_rows(conn, rel)
    if estimate < shards * SAMPLE_KEYS:
        return None
    sample = sa.tablesample(rel, sa.func.system(min(100.0, 100.0 * SAMPLE_KEYS * shards / estimate)))
    col = sample.c[source._cols[source._key_fields()[0]]]
    keys = conn.execute(sa.select(col).where(col.is_not(None), *where).order_by(col)).scalars().all()
    if len(keys) < shards * SAMPLE_KEYS // 4:  # few pages drawn (a small or filtered table): count instead
        return None
    out: list[Any] = []
    for i in range(1, shards):
        value = keys[i * len(keys) // shards] if keys else None
        if value is not None and (not out or out[-1] != value):
            out.append(value)
    return out


def _bounds(conn: sa.Connection, rel: sa.FromClause, col: Any, where: list[Any], known: int,
            shards: int) -> list[tuple[Any, int]]:
    """``(key, rows before it)`` of every ``ceil(known / shards)``-th non-NULL key, distinct."""
    step = -(-known // shards)
    inner = sa.select(col.label("k"), sa.func.row_number().over(order_by=col).label("rn"),
                      sa.func.rank().over(order_by=col).label("rk")).select_from(rel) \
        .where(col.is_not(None), *where).subquery()
    stmt = sa.select(inner.c.k, inner.c.rk).where(inner.c.rn > 1, (inner.c.rn - 1) % step == 0).order_by(inner.c.rn)
    out: list[tuple[Any, int]] = []
    for value, rank in conn.execute(stmt):
        if not out or out[-1][0] != value:
            out.append((value, rank - 1))
    return [b for b in out if b[1] > 0]  # a first key with more than a step of rows is not a bound


def _shards(key: str, bounds: list[tuple[Any, int]], known: int, nulls: int, nulls_first: bool) -> list[Shard]:
    """Shards from the bounds; non-NULL ranges numbered after the NULL shard where NULLs sort first."""
    if not bounds and not (nulls and known):
        return [Shard(0, key)]
    offset = nulls if nulls_first else 0
    lows = [None] + [b for b, _ in bounds]
    highs = [b for b, _ in bounds] + [None]
    starts = [0] + [before for _, before in bounds]
    ranges = [(lo, hi, s + offset) for lo, hi, s in zip(lows, highs, starts)]
    out: list[tuple[Any, Any, bool, int]] = [(lo, hi, False, s) for lo, hi, s in ranges]
    if nulls:
        null_shard = (None, None, True, 0 if nulls_first else known)
        out = [null_shard, *out] if nulls_first else [*out, null_shard]
    return [Shard(i, key, lo, hi, only_nulls, start) for i, (lo, hi, only_nulls, start) in enumerate(out)]


def estimate_rows(conn: sa.Connection, rel: sa.FromClause) -> float:
    """The planner's row estimate of a PostgreSQL table (``pg_class.reltuples``; 0 when unknown:
    never analysed, or not a table)."""
    if conn.dialect.name != "postgresql" or not isinstance(rel, sa.Table):
        return 0.0
    value = conn.execute(sa.text("SELECT reltuples FROM pg_class WHERE oid = CAST(:t AS regclass)"),
                         {"t": conn.dialect.identifier_preparer.format_table(rel)}).scalar()
    return max(float(value or 0), 0.0)


def filter_conditions(text: str | None) -> list[Any]:
    """The source's ``filter:`` as SQL conditions (trusted configuration, checked by the options)."""
    return [sa.text(f"({text})")] if text else []
