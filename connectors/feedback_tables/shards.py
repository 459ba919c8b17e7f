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
            where = [sa.text(f"({opts.filter})")] if opts.filter else []
            col = rel.c[key]
            total, known = conn.execute(sa.select(sa.func.count(), sa.func.count(col)).select_from(rel)
                                        .where(*where)).one()
            bounds = _bounds(conn, rel, col, where, known, shards) if shards > 1 and known else []
        return _shards(key, bounds, known, total - known, db.engine.dialect.name in NULLS_FIRST)
    finally:
        db.close()


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
