"""SQL feedback tables → SFT examples, preference pairs and RL tasks (issue 5, part 1 and 4).

:class:`SqlFeedbackSource` reads a company's existing table (or a ``query``) through SQLAlchemy
Core, any URL (SQLite by default), with a declarative mapping (:mod:`connectors.feedback_tables.mapping`;
the options are :class:`~connectors.feedback_tables.options.SqlFeedbackOptions`).

How a read goes:

1. **Streaming.** One ``SELECT`` with ``stream_results`` / ``yield_per`` (server-side cursors on
   PostgreSQL and MySQL), ordered by the dedup key, so memory stays flat whatever the table size.
2. **Dedup (F1).** Rows are grouped by (message, user) — the message is ``message_id`` when
   mapped, else (conversation, prompt, response) — and the latest row by ``created_at``
   (then ``row_id``, then read order) wins; the others are counted as ``duplicates_dropped``.
   Keys read through JSON paths cannot be ordered by the database: those reads dedup in memory.
3. **Values (F2, F3).** Ratings are normalised on their declared scale; NULL is unlabelled,
   0 is a real score. Timestamps become aware UTC; naive ones are read in ``timezone`` (UTC with a
   warning when none is declared). ``since`` is applied to the parsed instant, not to text.
4. **Redaction (F4)** of every text field (:mod:`feedback.redact`) before anything is built;
   placeholders are consistent per conversation; a row whose redaction fails is quarantined.
5. **Records.** A correction gives an :class:`SftExample` with the correction as target and a
   :class:`PreferencePair` (correction chosen, original rejected, for DPO). A good rating
   (``>= good_threshold``, raw scale units) gives an :class:`SftExample` of the response. A
   rated failure (or a correction) whose row carries ``tests`` or an ``expected`` answer gives a
   :class:`Task`. Unlabelled rows and failures without anything to learn from are counted.

Fast ingest (``ingest: fast``, the default): the same read with Arrow batches (ADBC on
PostgreSQL), values, dedup and records computed columnar (:mod:`connectors.feedback_tables.lane`),
only pre-filtered candidates at the exact PII validators, and a process per core
(:mod:`connectors.feedback_tables.fast`); ``ingest: rows`` keeps the row-by-row path. Both give
the same records, byte for byte (tests/feedback/test_fast_ingest.py); so does ``ingest: ray``, the fast
path per key range on Ray (:mod:`connectors.feedback_tables.scale`). Incremental reads and keys read
through JSON paths always take the row path (``ingest: ray`` refuses the latter).

Source mappings (``table``, ``query``, ``columns``, ``filter``) are trusted configuration written
by the operator, never user input; ``filter:`` is still checked (no ``;``, no other table).

Bad rows are quarantined with a reason and only their ids (never their text). An unreachable
database, a missing table or an unmapped column raises one :class:`SourceError` with the fix.

A config entry (fields left out of ``columns`` are found under their own name, ``row_id`` also
as ``id``; set ``auto_columns: false`` to map only what is written)::

    - type: sql_feedback
      domain: feedback/support-bot
      options:
        url: postgresql+psycopg2://reader@db.internal/prod   # any SQLAlchemy URL
        table: chat_feedback                                  # or query: "SELECT ..."
        columns: {prompt: question, response: answer, rating: stars, created_at: ts}
        json_paths: {expected: "meta:$.checks.expected"}
        rating: stars_1_5                                     # thumbs, scale_0_10, {kind: range/labels...}
        good_threshold: 4
        timezone: Europe/Berlin                               # for naive timestamps
        filter: "app = 'support-bot'"
        since: 2026-01-01T00:00:00Z
        state_dir: .tuneloop/feedback-state                   # incremental reads
"""

from __future__ import annotations

import itertools
import logging
import os
import warnings
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from connectors.feedback_tables.database import Database
from connectors.feedback_tables.incremental import IncrementalIngest, StoreCursor
from connectors.feedback_tables.mapping import (
    FIELDS,
    TEXT_FIELDS,
    RowError,
    as_text, clean_text,
    check_scale,
    parse_timestamp,
    raw_rating,
    resolve_json,
    zone,
)
from connectors.feedback_tables.options import SqlFeedbackOptions
from connectors.feedback_tables.records import Record, RecordBuilder, Row
from connectors.feedback_tables.rows import ParsedRow, collect
from feedback.redact import RedactionError, Redactor
from sdk.errors import SourceError
from sdk.sources import SourceResult, TaskSource
from sdk.tasks.records import Quarantined

log = logging.getLogger(__name__)

_ALIASES = {"row_id": ("id",)}
COUNTS = ("rows_read", "duplicates_dropped", "unlabelled", "negative_unused", "before_since", "no_timestamp_with_since",
          "naive_timestamps", "redactions", "sft_examples", "preference_pairs", "tasks", "quarantined")


class SqlFeedbackSource(RecordBuilder, TaskSource):
    """Read a SQL feedback table into SFT examples, preference pairs and tasks.

    ``read()`` returns a :class:`SourceResult`; :meth:`iter_records` streams the same records
    (plus :class:`Quarantined` rows) for tables too large to hold. Counts (``rows_read``,
    ``duplicates_dropped``, ``unlabelled``, ``negative_unused``, ``before_since``,
    ``naive_timestamps``, ``redactions``, ...) are in ``self.counts`` after a read.

    Raises:
        ConfigError: invalid options (at construction).
        SourceError: database unreachable, table or column missing, driver not installed.
    """

    Options = SqlFeedbackOptions
    name = "sql_feedback"

    def __init__(self, options: dict[str, Any] | None, base_dir: Path, domain: str) -> None:
        super().__init__(options, base_dir, domain)
        self._raw_options = dict(options or {})
        self._hints: dict[str, Any] = {}  # text -> redaction pre-filter verdict (fast ingest)
        self.counts: dict[str, int] = {}
        self._cols: dict[str, str] = {}
        opts = self.options
        self._zone = zone(opts.timezone)
        self._redactor = Redactor(key=os.environ.get(opts.redaction_key_env, ""),
                                  default_region=opts.phone_region) if opts.redact else None
        self._threshold = opts.good_threshold if opts.good_threshold is not None else opts.rating.default_threshold()

    def _load(self) -> SourceResult:
        if self.options.state_dir:
            cursor = StoreCursor(self.options.cursor_url, self.origin) if self.options.cursor_url else None
            ingest = IncrementalIngest(self, self.resolve(self.options.state_dir), cursor)
            new = ingest.run()
            result = ingest.records()
            result.counts["new_rows"] = new["new_rows"]
            return result
        result = collect(self.iter_records())
        result.counts.update(self.counts)
        result.counts["preference_pairs"] = len(result.preference_pairs)
        check_scale(self.options.rating, sum('is outside the' in q.reason for q in result.quarantined),
                    result.counts.get('rows_read', 0))
        return result

    def iter_records(self) -> Iterator[Record]:
        """Stream deduplicated records (and :class:`Quarantined` rows) in a deterministic order.

        Raises:
            SourceError: the database or the mapping cannot be used.
        """
        return self._records(as_json=False)

    def iter_jsonl(self) -> Iterator[str]:
        """The records of :meth:`iter_records` as JSON text (``model_dump_json``), one per record;
        with fast ingest the serialisation happens in the worker processes too (the generator is
        returned as it is: one generator step per line fewer)."""
        return self._records(as_json=True)

    def iter_jsonl_blocks(self) -> Iterator[str]:
        """The lines of :meth:`iter_jsonl` in blocks: strings of whole lines, each ending in a
        newline (``"".join(blocks)`` is the JSONL file); fast ingest passes them on as the workers
        made them."""
        return self._records(as_json=True, blocks=True)

    def _records(self, as_json: bool, blocks: bool = False) -> Iterator[Any]:
        db = self._open()
        key_fields = self._key_fields()
        in_db_order = all(f in self._cols for f in key_fields)
        if self.options.ingest == "ray":  # the fast path per key range, on Ray
            db.close()
            ds = self.ray_dataset(as_json=as_json)
            from connectors.feedback_tables import scale

            yield from (r + "\n" if blocks else r for out in scale.read(ds, self, as_json) for r in out)
            self._warn_naive()
            return
        if self.options.ingest == "fast" and in_db_order:
            from connectors.feedback_tables import fast, lane

            try:
                for out in fast.read(self, db, key_fields, as_json, lane.fits(self, SqlFeedbackSource), blocks=blocks):
                    yield from out
            finally:
                db.close()
            self._warn_naive()
            return
        records = self._records_rows(db, key_fields, in_db_order)
        yield from ((r.model_dump_json() + ("\n" if blocks else "") for r in records) if as_json else records)

    def ray_dataset(self, shards: int | None = None, as_json: bool = True) -> Any:
        """The read as a Ray Dataset, one read task per key range (columns ``shard``, ``pos``, ``kind``,
        ``record``, ``counts``: :mod:`connectors.feedback_tables.scale`). Raises :class:`SourceError`."""
        from connectors.feedback_tables import lane

        try:
            from connectors.feedback_tables import scale
        except ImportError as exc:
            raise SourceError(f"`ingest: ray` needs Ray ({exc})", "pip install 'tuneloop[ray]'") from None
        return scale.dataset(self, as_json, lane.fits(self, SqlFeedbackSource), shards)

    def _records_rows(self, db: Database, key_fields: list[str], in_db_order: bool) -> Iterator[Record]:
        rows = db.stream(self.options.table, self.options.query, self._columns(), self.options.filter,
                         order_by=[self._cols[f] for f in key_fields] if in_db_order else [],
                         then_by=[self._cols[f] for f in ("created_at", "row_id") if f in self._cols],
                         after=None, batch_size=self.options.batch_size)
        try:
            yield from self.records_from_rows(self._parse_all(rows, key_fields), grouped=in_db_order)
        finally:
            db.close()
        self._warn_naive()

    def iter_rows(self, after: Any = None) -> Iterator[ParsedRow]:
        """Parsed, redacted rows in ``row_id`` order, not deduplicated: ``(dedup key, Row or Quarantined)``.

        The primitive of incremental ingestion (:mod:`connectors.feedback_tables.incremental`). Read by
        keyset pagination (:meth:`Database.pages`, one short statement per ``batch_size`` rows), so the
        per-batch watermark commits survive poolers (field case L3); ``row_id`` must be unique.
        Args:
            after: only rows whose ``row_id`` is greater than this value.
        Raises:
            SourceError: ``row_id`` is not mapped, or the database cannot be used.
        """
        db = self._open()
        if "row_id" not in self._cols:
            db.close()
            raise SourceError("incremental reads need an increasing key", "map `row_id` in `columns:` "
                              "(the table's integer primary key, or any column that only grows)")
        pages = db.pages(self.options.table, self.options.query, self._columns(), self.options.filter,
                         key=self._cols["row_id"], after=after, batch_size=self.options.batch_size)
        rows = (raw for page in pages for raw in page)
        try:
            yield from self._parse_all(rows, self._key_fields())
        finally:
            db.close()
        self._warn_naive()

    @property
    def origin(self) -> str:
        """``url#table`` (or ``url#query``): what an incremental state folder belongs to."""
        return f"{self.options.url}#{self.options.table or self.options.query}"

    @property
    def batch_size(self) -> int:
        """Rows fetched per round trip (and committed per incremental batch)."""
        return self.options.batch_size

    @property
    def row_column(self) -> str:
        """The column mapped to ``row_id`` (known once a read has opened the database).

        Raises:
            KeyError: ``row_id`` is not mapped.
        """
        return self._cols["row_id"]

    def reset_counts(self) -> None:
        """Zero ``self.counts`` (done at the start of every read)."""
        self.counts = dict.fromkeys(COUNTS, 0)

    def _open(self) -> Database:
        self.reset_counts()
        db = Database(self.options.url, self.resolve)
        try:
            self._cols = self._effective_columns(db.columns(self.options.table, self.options.query))
        except BaseException:
            db.close()
            raise
        return db

    def _warn_naive(self) -> None:
        if self.counts["naive_timestamps"] and self.options.timezone is None:
            warnings.warn(f"{self.counts['naive_timestamps']} naive timestamps read as UTC; set "
                          "`timezone:` in the sql_feedback options if they are local times", stacklevel=3)

    # -- mapping --------------------------------------------------------------------------

    def _effective_columns(self, available: list[str]) -> dict[str, str]:
        """Mapped columns, plus (with ``auto_columns``) unmapped fields found under their own name."""
        cols = {f: c for f in FIELDS if (c := getattr(self.options.columns, f)) is not None}
        if self.options.auto_columns:
            lower = {a.lower(): a for a in available}
            for field in FIELDS:
                if field in cols or field in self.options.json_paths:
                    continue
                for name in (field, *_ALIASES.get(field, ())):
                    if name in lower:
                        cols[field] = lower[name]
                        break
        return cols

    def _column_fields(self) -> dict[str, str]:
        return self._cols

    def _columns(self) -> list[str]:
        cols = list(self._column_fields().values()) + [p.column for p in self.options.json_paths.values()]
        return list(dict.fromkeys(cols))

    def _mapped(self, field: str) -> bool:
        return field in self._column_fields() or field in self.options.json_paths

    def _key_fields(self) -> list[str]:
        message = ["message_id"] if self._mapped("message_id") else [
            f for f in ("conversation_id", "prompt", "response") if self._mapped(f)]
        return message + (["user_id"] if self._mapped("user_id") else [])

    def _extract(self, raw: dict[str, Any]) -> dict[str, Any]:
        values = {f: raw.get(c) for f, c in self._column_fields().items()}
        for field, path in self.options.json_paths.items():
            values[field] = resolve_json(raw.get(path.column), path)
        return values

    # -- rows -----------------------------------------------------------------------------

    def records_from_rows(self, parsed: Iterable[ParsedRow], grouped: bool) -> Iterator[Record]:
        """Deduplicate parsed rows (latest per key wins) and build records.

        Args:
            parsed: ``(key, Row or Quarantined)`` pairs.
            grouped: rows of one key are adjacent (the database sorted them); otherwise they
                are grouped in memory and emitted in key order.
        """
        if grouped:
            groups: Iterable[list] = (list(g) for _, g in itertools.groupby(parsed, key=lambda p: p[0]))
        else:
            table: dict[tuple, list] = {}
            for item in parsed:
                table.setdefault(item[0], []).append(item)
            groups = (table[k] for k in sorted(table, key=repr))
        for group in groups:
            good = []
            for _, item in group:
                if isinstance(item, Quarantined):
                    self.counts["quarantined"] += 1
                    yield item
                else:
                    good.append(item)
            if not good:
                continue
            latest = max(good, key=lambda r: (r.created_at or datetime.min.replace(tzinfo=timezone.utc), r.seq))
            self.counts["duplicates_dropped"] += len(good) - 1
            yield from self._build(latest)

    def _parse_all(self, rows: Iterable[dict[str, Any]], key_fields: list[str], start: int = 0,
                   indexes: Iterable[int] | None = None) -> Iterator[tuple[tuple, Any]]:
        """``(dedup key, Row or Quarantined)`` per raw row. A bad row keeps its key when the key's
        columns could be read, so it never splits a group of the database's ordering.
        ``start``: read index of the first row (a chunk of fast ingest starts mid-read);
        ``indexes``: the read index of each row instead (rows picked out of a chunk)."""
        row_col = self._cols.get("row_id")
        key_cols = [self._cols[f] for f in key_fields] if all(f in self._cols for f in key_fields) else None
        for index, raw in (zip(indexes, rows) if indexes is not None else enumerate(rows, start)):
            self.counts["rows_read"] += 1
            seq = raw[row_col] if row_col and isinstance(raw.get(row_col), int) else index
            key: tuple | None = tuple(str(raw.get(c)) for c in key_cols) if key_cols is not None else None
            try:
                values = self._extract(raw)
                key = key or tuple(str(values.get(f)) for f in key_fields)
                row: Row | Quarantined = self._parse(values, seq)
            except RowError as exc:
                ids = {c: raw.get(c) for f in ("row_id", "message_id", "conversation_id") if (c := self._cols.get(f))}
                row = self._quarantine(str(exc), ids)
            yield (key if key is not None else ("\x00quarantine", seq)), row

    def _parse(self, values: dict[str, Any], seq: int) -> Row:
        """Check, normalise and redact one row's values. Raises :class:`RowError` (quarantine)."""
        for field in ("prompt", "response"):
            if values.get(field) is None or (isinstance(values[field], str) and not values[field].strip()):
                raise RowError(f"missing {field}")
        scale = self.options.rating
        raw = raw_rating(values.get("rating"), scale)
        lo, hi = scale.bounds()
        rating = None if raw is None else (raw - lo) / (hi - lo)
        created, naive = parse_timestamp(values.get("created_at"), self._zone)
        self.counts["naive_timestamps"] += naive
        present = [f for f in TEXT_FIELDS if values.get(f) is not None]
        for field in present:
            values[field] = clean_text(field, as_text(field, values[field]), self.counts)
        if self._redactor is not None:
            scope = str(values.get("conversation_id") or values.get("message_id") or seq)
            field = ""
            try:
                for field in present:
                    values[field] = self._redact(values[field], scope)
            except RedactionError as exc:
                raise RowError(f"redaction failed on {field}: {exc}") from None
        return Row(values, rating, raw, created, seq)

    def _redact(self, value: Any, scope: str) -> Any:
        if isinstance(value, list):  # chat messages from a JSON column
            out = []
            for msg in value:
                if not isinstance(msg, dict) or not isinstance(msg.get("content"), str):
                    raise RedactionError("chat messages must be objects with a text `content`")
                text, n = self._redactor.redact(msg["content"], scope)  # type: ignore[union-attr]
                self.counts["redactions"] += n
                out.append({**msg, "content": text})
            return out
        hint = self._hints.get(value) if self._hints else None
        if hint is False:  # the columnar pre-filter found nothing any detector could match
            return value
        text, n = (self._redactor.redact(value, scope) if hint is None  # type: ignore[union-attr]
                   else self._redactor.redact(value, scope, only=hint))  # type: ignore[union-attr]
        self.counts["redactions"] += n
        return text
