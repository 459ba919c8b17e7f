"""Read tuneloop's own feedback store (filled by the collector) as a feedback source.

:class:`CollectorFeedbackSource` is :class:`SqlFeedbackSource` fed by the store's typed queries
(:func:`feedback.store.iter_feedback`, :func:`feedback.store.iter_unrated_corrections`) instead
of a table mapping, so collected feedback goes through the same dedup, time zones, redaction
and record building as a company's own table, and the store's schema is written down once, in
:mod:`feedback.store`. One row per feedback event: the interaction's first system message, its
last user message (prompt) and last assistant message (response), the rating normalised from its
stored scale to [0, 1] by :func:`feedback.scales.normalise` (good at 0.7, which is each named
scale's own default: thumbs up, 4 stars, 7 of 10), and the latest correction by the same user on
that interaction; corrections without any rating by that user are rows too.

Use it by name, ``type: collector_feedback``, or by dotted path
``connectors.feedback_tables.collector:CollectorFeedbackSource``, with
``options: {url: sqlite:///feedback_store.db, application: support-bot}``. Not incremental
(``state_dir`` is refused): two id sequences are merged, so no single column only grows. The
merge holds the store's rows in memory (sorted as the database sorted the former ``UNION``).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Iterator

from pydantic import model_validator
from sqlalchemy import exc as sa_exc

from connectors.feedback_tables.database import Database
from connectors.feedback_tables.mapping import RowError
from connectors.feedback_tables.options import SqlFeedbackOptions
from connectors.feedback_tables.records import Record
from connectors.feedback_tables.rows import ParsedRow
from connectors.feedback_tables.source import SqlFeedbackSource
from feedback.scales import SCALES, normalise
from feedback.store import FeedbackItem, iter_feedback, iter_unrated_corrections
from sdk.errors import SourceError

GOOD = 0.7
"""Default good threshold on the normalised scale; classifies every named scale as its own default does."""

_FIELDS = ("row_id", "conversation_id", "message_id", "user_id", "created_at", "system_prompt", "prompt", "response",
           "rating", "correction")
_FIXED = ("table", "query", "filter", "columns", "json_paths", "rating")  # set by the store's schema


def row_of(item: FeedbackItem) -> dict[str, Any]:
    """The raw row of one store item: field name -> value, ``rating`` still in its ``scale``'s units.

    ``row_id`` merges the two id sequences: ``2 * id`` for a rating, ``2 * id + 1`` for a correction.
    """
    return {"row_id": 2 * item.id + (item.kind == "correction"), "conversation_id": item.conversation_id,
            "message_id": item.interaction_id, "user_id": item.user_id, "created_at": item.created_at,
            "system_prompt": item.system_prompt, "prompt": item.prompt, "response": item.response,
            "rating": item.rating, "scale": item.scale, "correction": item.correction}


def _store_order(raw: dict[str, Any]) -> tuple:
    """(interaction, user with no user first, time, row id): one dedup group's rows are adjacent."""
    user = raw["user_id"]
    return raw["message_id"], user is not None, user or "", raw["created_at"] or datetime.min, raw["row_id"]


class CollectorFeedbackOptions(SqlFeedbackOptions):
    """Options: ``url`` of the store, optional ``application`` name; the rest as for
    ``sql_feedback`` (``good_threshold`` is on the normalised 0–1 scale, default 0.7). The
    table, query, filter, column mapping and rating scale come from the store and are refused."""

    application: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        data = dict(data or {})
        app = data.get("application")
        if app is not None and not re.fullmatch(r"[\w .@-]{1,200}", str(app)):
            raise ValueError("`application` may hold letters, digits, space, '.', '@', '_' and '-' only")
        if data.get("state_dir"):
            raise ValueError("the collector source is not incremental: remove `state_dir`")
        fixed = [k for k in _FIXED if k in data]
        if fixed:
            raise ValueError(f"the collector source reads the store's own schema: remove {', '.join(fixed)}")
        data.setdefault("url", "sqlite:///feedback_store.db")
        data["rating"] = {"kind": "range", "min": 0, "max": 1}
        data.setdefault("good_threshold", GOOD)
        data.setdefault("timezone", "UTC")
        return data

    @model_validator(mode="after")
    def _one_relation(self) -> "CollectorFeedbackOptions":
        return self  # rows come from the store's typed queries, not from a table or query


class CollectorFeedbackSource(SqlFeedbackSource):
    """Training records from tuneloop's own feedback store (see module docstring).

    Raises:
        ConfigError: invalid options (at construction).
        SourceError: the store cannot be opened or read (missing file, server down, not migrated).
    """

    Options = CollectorFeedbackOptions
    name = "collector_feedback"

    def iter_records(self) -> Iterator[Record]:
        """Stream deduplicated records (and quarantined rows) of the store, in store order."""
        self.reset_counts()
        self._cols = {f: f for f in _FIELDS}  # rows arrive under the field names
        rows = sorted(self._store_rows(), key=_store_order)
        yield from self.records_from_rows(self._parse_all(rows, self._key_fields()), grouped=True)
        self._warn_naive()

    def iter_rows(self, after: Any = None) -> Iterator[ParsedRow]:
        """Not supported: the collector source is not incremental.

        Raises:
            SourceError: always.
        """
        raise SourceError("the collector source has no single increasing key", "read it whole (no `state_dir`)")

    def _store_rows(self) -> list[dict[str, Any]]:
        db = Database(self.options.url, self.resolve)
        app, batch = self.options.application, self.options.batch_size
        try:
            with db.session() as session:
                _check_application(session, app)
                items = [*iter_feedback(session, app, batch_size=batch),
                         *iter_unrated_corrections(session, app, batch_size=batch)]
        except sa_exc.DBAPIError as exc:
            raise SourceError(f"reading the feedback store {db.display} failed: {str(exc.orig).strip().splitlines()[0]}",
                              "point `url:` at the collector's database (`tuneloop feedback serve --url ...` "
                              "creates and migrates it)") from None
        finally:
            db.close()
        return [row_of(item) for item in items]

    def _extract(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The row's values with the rating normalised from its stored scale (unknown scale: :class:`RowError`)."""
        values = super()._extract(raw)
        if values["rating"] is not None:
            if raw["scale"] not in SCALES:
                raise RowError(f"rating scale {raw['scale']!r} is not one of {sorted(SCALES)}")
            values["rating"] = normalise(values["rating"], raw["scale"])
        return values


def _check_application(session, app: str | None) -> None:
    """A misspelt ``application:`` read 0 rows and exited 0; name the ones the store has instead.

    Raises:
        SourceError: the store has no application of that name.
    """
    if app is None:
        return
    import sqlalchemy as sa

    from feedback.store import Application

    names = sorted(session.scalars(sa.select(Application.name)))
    if app not in names:
        raise SourceError(f"the feedback store has no application {app!r}",
                          f"set `application:` to one of {names} (or leave it out to read them all)")
