"""Incremental ingestion of a feedback table with a persisted watermark (issue 5, part 1).

A run reads only rows whose ``row_id`` is above the watermark, in ``row_id`` order, and appends
them — parsed and already redacted — to an event log ``events.jsonl`` in ``state_dir``. Every
``batch_size`` rows it commits:

1. append the batch's lines to the log, ``flush`` + ``fsync``;
2. write ``state.json`` (watermark, committed byte length of the log, row count) to a temporary
   file, ``fsync`` it, and ``os.replace`` it over the old one (atomic on POSIX).

After a crash (even ``kill -9``) between 1 and 2, the log holds lines beyond the committed
length: the next run truncates the log back to it and reads again from the committed
watermark, so nothing is lost and nothing is doubled. Records are then built from the whole log
with the same dedup (latest per message and user wins) as a full read, so an interrupted and
resumed ingestion gives exactly the output of an uninterrupted one.

The committed state can live in a tuneloop feedback store's ``ingestion_cursors`` table instead
(``cursor_url:``, :class:`StoreCursor`); the order of the two steps, and so the recovery, is the
same. Rows are read by keyset pagination (``WHERE row_id > :last ORDER BY row_id LIMIT n``, one
short statement per batch: :meth:`~connectors.feedback_tables.database.Database.pages`), so no
server-side cursor has to survive a commit: the read works behind a pooler in transaction mode
and with the watermark committed in the database being read (field case L3).

Limits: ``row_id`` must only grow and be unique (an integer primary key, or an insertion
timestamp with unique values; rows with a NULL ``row_id`` are not read); rows updated in place
after they were read are not seen again. Building records groups the log in memory (the log,
not the table, bounds memory).
Peer: Kafka Connect JDBC source's incrementing mode and its offset commits.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

import sqlalchemy as sa

from connectors.feedback_tables.database import Database
from connectors.feedback_tables.records import Row
from connectors.feedback_tables.rows import ParsedRow, RowReader, collect
from sdk.errors import SourceError
from sdk.sources import SourceResult
from sdk.tasks.records import Quarantined, canonical_json

LOG, STATE = "events.jsonl", "state.json"


def encode(key: tuple, item: Row | Quarantined) -> bytes:
    """One log line for a parsed row or a quarantined row."""
    if isinstance(item, Quarantined):
        body: dict[str, Any] = {"key": list(key), "quarantined": item.model_dump(mode="json")}
    else:
        body = {"key": list(key), "seq": item.seq, "values": item.values, "rating": item.rating,
                "raw_rating": item.raw_rating, "created_at": item.created_at.isoformat() if item.created_at else None}
    return (canonical_json(body) + "\n").encode()


def decode(line: bytes) -> tuple[tuple, Row | Quarantined]:
    """Inverse of :func:`encode`."""
    body = json.loads(line)
    key = tuple(body["key"])
    if "quarantined" in body:
        return key, Quarantined.model_validate(body["quarantined"])
    created = datetime.fromisoformat(body["created_at"]) if body["created_at"] else None
    return key, Row(body["values"], body["rating"], body["raw_rating"], created, body["seq"])


def shown_origin(origin: str) -> str:
    """``url#table`` with any password in the URL masked (what the state folder stores and
    messages show); two origins that differ only in the password are the same table."""
    url, sep, what = origin.partition("#")
    return Database.safe_url(url) + sep + what


class FileCursor:
    """The committed state as ``state.json`` in the state folder (written atomically, fsynced)."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / STATE

    def load(self) -> dict[str, Any] | None:
        """The committed state, or ``None`` before the first commit."""
        return json.loads(self.path.read_text()) if self.path.exists() else None

    def save(self, state: dict[str, Any]) -> None:
        """Replace the committed state: temporary file, ``fsync``, ``os.replace``, folder ``fsync``."""
        tmp = self.path.with_name(STATE + ".tmp")
        with open(tmp, "w") as fh:
            fh.write(json.dumps(state))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


class StoreCursor:
    """The committed state in the ``ingestion_cursors`` table of a tuneloop feedback store
    (:class:`feedback.store.IngestionCursor`), one row per origin, named by a hash of the origin
    (its URL may hold a password). Each commit is one short transaction, so it can sit in the
    database being read, behind a pooler, between two keyset pages (field case L3).

    Args:
        url: SQLAlchemy URL of the store (migrated to the current schema first).
        origin: what the state belongs to (``source.origin``).
    Raises:
        SourceError: the store cannot be opened or migrated.
    """

    def __init__(self, url: str, origin: str) -> None:
        from feedback.store import sessions

        self.origin = origin
        self.name = "sql_feedback/" + hashlib.sha256(origin.encode()).hexdigest()[:32]
        self.path = f"ingestion_cursors row {self.name!r}"  # for messages
        try:
            self._sessions = sessions(url)
        except Exception as exc:  # noqa: BLE001 - driver, connection or migration errors alike
            raise SourceError(f"cannot open the cursor store {Database.safe_url(url)}: {str(exc).splitlines()[0]}",
                              "point `cursor_url:` at a tuneloop feedback store (any SQLAlchemy URL "
                              "the collector could use)") from None

    def load(self) -> dict[str, Any] | None:
        """The committed state, or ``None`` before the first commit."""
        from feedback.store import IngestionCursor

        with self._sessions() as session:
            body = session.scalar(sa.select(IngestionCursor.watermark).where(IngestionCursor.name == self.name))
        return None if body is None else {**json.loads(body), "origin": self.origin}

    def save(self, state: dict[str, Any]) -> None:
        """Insert or update this origin's row, in one transaction."""
        from feedback.store import IngestionCursor

        body = json.dumps({k: state[k] for k in ("watermark", "bytes", "rows")})
        with self._sessions.begin() as session:
            row = session.scalar(sa.select(IngestionCursor).where(IngestionCursor.name == self.name))
            if row is None:
                session.add(IngestionCursor(name=self.name, watermark=body))
            else:
                row.watermark = body


class IncrementalIngest:
    """Resumable ingestion of one feedback reader (a ``SqlFeedbackSource``) into ``state_dir``.

    Args:
        source: the configured reader (``row_id`` must be mapped or auto-detected).
        state_dir: folder for ``events.jsonl`` (and ``state.json``; created if missing).
        cursor: where the committed state lives: ``state.json`` (:class:`FileCursor`, the default)
            or a store's ``ingestion_cursors`` table (:class:`StoreCursor`).
    Raises:
        SourceError: the state belongs to another table, or the log is shorter than committed.
    """

    def __init__(self, source: RowReader, state_dir: Path, cursor: FileCursor | StoreCursor | None = None) -> None:
        self.source = source
        self.dir = Path(state_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.origin = source.origin
        self.shown = shown_origin(self.origin)  # what state.json stores: the URL without its password
        self.cursor = cursor or FileCursor(self.dir)

    def state(self) -> dict[str, Any]:
        """The committed state: ``watermark`` (None before the first commit), ``bytes``, ``rows``."""
        state = self.cursor.load()
        if state is None:
            return {"origin": self.shown, "watermark": None, "bytes": 0, "rows": 0}
        if state.get("origin") not in (self.shown, self.origin):  # the raw origin: written before the fix
            raise SourceError(f"{getattr(self.cursor, 'path', 'the cursor')} belongs to "
                              f"{shown_origin(str(state.get('origin')))!r}, not {self.shown!r}",
                              "use a separate `state_dir` per table, or delete the folder to re-ingest")
        if state["origin"] != self.shown and isinstance(self.cursor, FileCursor):  # clear password on disk
            state = {**state, "origin": self.shown}
            self.cursor.save(state)
        return state

    def _recover(self) -> dict[str, Any]:
        state = self.state()
        log = self.dir / LOG
        size = log.stat().st_size if log.exists() else 0
        if size < state["bytes"]:
            raise SourceError(f"{log} is shorter ({size} bytes) than committed ({state['bytes']})",
                              "the state folder was damaged: delete it (and the source's row in the store's "
                              "ingestion_cursors table, with `cursor_url:`) to ingest from scratch")
        if size > state["bytes"]:  # an uncommitted tail from a crash
            with open(log, "r+b") as fh:
                fh.truncate(state["bytes"])
                fh.flush()
                os.fsync(fh.fileno())
        return state

    def _commit(self, lines: list[bytes], watermark: Any, state: dict[str, Any]) -> None:
        """Append ``lines`` to the log (``fsync``), then commit the new state: a crash in between
        leaves a tail the next run truncates, so every row is in the output exactly once."""
        log = self.dir / LOG
        with open(log, "ab") as fh:
            fh.write(b"".join(lines))
            fh.flush()
            os.fsync(fh.fileno())
            size = fh.tell()
        new = {**state, "origin": self.shown, "watermark": watermark, "bytes": size, "rows": state["rows"] + len(lines)}
        self.cursor.save(new)
        state.update(new)

    def run(self) -> dict[str, int]:
        """Ingest the rows above the watermark. Returns ``{"new_rows", "total_rows", ...counts}``.

        Raises:
            SourceError: database or state problems.
        """
        state = self._recover()
        start = state["rows"]
        batch: list[bytes] = []
        watermark = state["watermark"]
        row_col = None
        for key, item in self.source.iter_rows(after=state["watermark"]):
            row_col = row_col or self.source.row_column
            batch.append(encode(key, item))
            watermark = item.raw.get(row_col) if isinstance(item, Quarantined) else item.values.get("row_id")
            if len(batch) >= self.source.batch_size:
                self._commit(batch, watermark, state)
                batch = []
        if batch:
            self._commit(batch, watermark, state)
        return {**self.source.counts, "new_rows": state["rows"] - start, "total_rows": state["rows"]}

    def events(self) -> Iterator[ParsedRow]:
        """The committed log, decoded."""
        state = self.state()
        log = self.dir / LOG
        if not log.exists():
            return
        with open(log, "rb") as fh:
            for line in iter(fh.readline, b""):
                if fh.tell() > state["bytes"]:
                    break
                yield decode(line)

    def records(self) -> SourceResult:
        """Records from the whole log, deduplicated as a full read would."""
        src = self.source
        src.reset_counts()
        events = list(self.events())
        result = collect(src.records_from_rows(events, grouped=False))
        result.counts.update(src.counts, rows_read=len(events), preference_pairs=len(result.preference_pairs))
        return result
