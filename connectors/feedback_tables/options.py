"""Options of the ``sql_feedback`` source: where the table is and how its columns are read.

Validated at construction (a bad mapping is a :class:`~sdk.errors.ConfigError` before any
database is opened). The mapping types themselves are in :mod:`connectors.feedback_tables.mapping`;
the source that uses these options is :mod:`connectors.feedback_tables.source`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from connectors.feedback_tables.mapping import FIELDS, ColumnMap, JsonPath, RatingScale, zone
from sdk.sources import SourceOptions


_DIALECTS = {"postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql", "sqlite": "sqlite", "mssql": "tsql",
             "oracle": "oracle", "duckdb": "duckdb", "snowflake": "snowflake", "bigquery": "bigquery"}


def check_filter(text: str, url: str) -> None:
    """Refuse a ``filter:`` that is more than a condition on the table's own columns.

    The filter is trusted configuration (the operator's, never a user's); this check catches
    mistakes and copy-pasted SQL that would read other tables. Parsed with sqlglot in the URL's
    dialect.
    Raises:
        ValueError: a ``;``, an unparseable expression, a subquery, a table reference or a
            function sqlglot does not know (e.g. ``pg_read_file``).
    """
    import sqlglot
    from sqlglot import exp

    rule = ("`filter:` is trusted configuration: a condition on the table's own columns, e.g. "
            "\"app = 'support-bot' AND rating IS NOT NULL\"")
    if ";" in text:
        raise ValueError(f"`filter:` contains ';' (one condition only, no further statements). {rule}")
    dialect = _DIALECTS.get(url.split(":", 1)[0].split("+", 1)[0])
    try:
        tree = sqlglot.parse_one(text, read=dialect)
    except sqlglot.errors.SqlglotError as exc:
        raise ValueError(f"`filter:` is not a SQL condition ({str(exc).splitlines()[0]}). {rule}") from None
    if tree is None or isinstance(tree, (exp.Query, exp.Command, exp.DDL, exp.DML)):
        raise ValueError(f"`filter:` must be a condition, not a statement. {rule}")
    reach = next(tree.find_all(exp.Query, exp.Subquery, exp.Table, exp.Command), None)
    if reach is not None:
        raise ValueError(f"`filter:` reaches beyond the table ({reach.sql(dialect=dialect)[:80]!r}); use `query:` "
                         f"for joins. {rule}")
    unknown = next(tree.find_all(exp.Anonymous), None)
    if unknown is not None:
        raise ValueError(f"`filter:` calls {unknown.name!r}, a function outside standard SQL. {rule}")


class SqlFeedbackOptions(SourceOptions):
    """Options of the ``sql_feedback`` source (the ``options:`` mapping in the config).

    Attributes:
        url: SQLAlchemy URL; a relative SQLite path is resolved against the config folder.
        table: table name (``schema.table`` allowed); exactly one of ``table`` / ``query``.
        query: a ``SELECT`` whose result columns are mapped instead of a table.
        columns: field -> column name (see :class:`ColumnMap`).
        json_paths: field -> ``{column, path}`` or ``"column:path"`` for nested JSON values.
        rating: the rating scale (a kind name or a :class:`RatingScale` mapping).
        good_threshold: ratings at or above this (raw scale units) are good; default per scale.
        timezone: IANA zone for naive timestamps; unset = UTC with a warning.
        filter: SQL boolean expression over the table's own columns, appended as ``WHERE``.
            Trusted configuration written by the operator, never user input; still checked
            (:func:`check_filter`): no ``;``, no subquery or other table, no unknown function.
        since: keep rows created at or after this instant (aware; naive means UTC).
        redact: redact personal data (turn off only for data already cleaned upstream).
        redaction_key_env: environment variable holding the placeholder HMAC key.
        phone_region: ISO region for phone numbers written without ``+``.
        answer_mode: verifier mode for ``expected`` answers.
        test_framework: runner for ``tests`` (``pytest`` or ``script``).
        batch_size: rows fetched per round trip.
        auto_columns: map each field left unmapped to a column of the same name when the table
            has one (``row_id`` also to ``id``); set false to use only explicit mappings.
        max_prompt_chars: cut long chat prompts to this many characters by dropping the oldest
            turns, keeping system messages and the rated (last) turn.
        ingest: ``fast`` (Arrow batches, columnar redaction pre-filter, a process per core; see
            :mod:`connectors.feedback_tables.fast`) or ``rows`` (the row-by-row path, kept as the
            reference and fallback; both give the same records), or ``ray`` (the fast path sharded by key
            ranges on a Ray cluster with Ray Data, the ``ray`` extra; see
            :mod:`connectors.feedback_tables.scale`; same records).
        workers: processes for fast ingest (default: every core); 1 runs inline.
        shards: key ranges of ``ingest: ray`` (default: 4 per cluster CPU).
        state_dir: when set, reads are incremental: only rows above the persisted watermark
            are read and appended to an event log there (see
            :mod:`connectors.feedback_tables.incremental`); records come from the whole log.
        cursor_url: with ``state_dir``, keep the committed watermark in the ``ingestion_cursors``
            table of the tuneloop feedback store at this URL (migrated if needed; often the same
            database as ``url`` when the store is the source) instead of ``state_dir/state.json``.
    """

    url: str = "sqlite:///feedback.db"
    table: str | None = None
    query: str | None = None
    columns: ColumnMap = Field(default_factory=ColumnMap)
    json_paths: dict[str, JsonPath] = Field(default_factory=dict)
    rating: RatingScale = Field(default_factory=RatingScale)
    good_threshold: float | None = None
    timezone: str | None = None
    filter: str | None = None
    since: datetime | None = None
    redact: bool = True
    redaction_key_env: str = "TUNELOOP_REDACTION_KEY"
    phone_region: str = "US"
    answer_mode: Literal["exact", "normalized", "regex", "numeric", "json"] = "normalized"
    test_framework: str = "pytest"
    batch_size: int = Field(1000, gt=0)
    auto_columns: bool = True
    state_dir: str | None = None
    cursor_url: str | None = None
    ingest: Literal["fast", "rows", "ray"] = "fast"
    workers: int | None = Field(None, gt=0)
    shards: int | None = Field(None, gt=0)
    max_prompt_chars: int | None = Field(None, gt=0)

    @field_validator("rating", mode="before")
    @classmethod
    def _rating_shorthand(cls, value: Any) -> Any:
        return {"kind": value} if isinstance(value, str) else value

    @field_validator("json_paths", mode="before")
    @classmethod
    def _path_shorthand(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        out = {}
        for key, spec in value.items():
            if isinstance(spec, str):
                column, sep, path = spec.partition(":")
                if not sep:
                    raise ValueError(f"json_paths.{key}: write 'column:path', e.g. 'meta:details.rating'")
                spec = {"column": column, "path": path}
            out[key] = spec
        return out

    @model_validator(mode="after")
    def _one_relation(self) -> "SqlFeedbackOptions":
        """Exactly one of ``table`` / ``query`` (a subclass with its own rows overrides this)."""
        if (self.table is None) == (self.query is None):
            raise ValueError("set exactly one of `table` or `query`")
        return self

    @model_validator(mode="after")
    def _check(self) -> "SqlFeedbackOptions":
        unknown = set(self.json_paths) - set(FIELDS)
        if unknown:
            raise ValueError(f"json_paths has unknown fields {sorted(unknown)}; allowed: {', '.join(FIELDS)}")
        both = [f for f in self.json_paths if getattr(self.columns, f) is not None]
        if both:
            raise ValueError(f"fields {both} are mapped in both `columns` and `json_paths`; keep one")
        for field in ("prompt", "response"):
            if field not in self.json_paths and getattr(self.columns, field) is None:
                object.__setattr__(self.columns, field, field)
        for path in self.json_paths.values():
            path.steps()
        zone(self.timezone)
        if self.cursor_url and not self.state_dir:
            raise ValueError("`cursor_url` keeps the watermark of an incremental read: set `state_dir` too "
                             "(the event log lives there)")
        if self.filter is not None:
            check_filter(self.filter, self.url)
        if self.since is not None and self.since.tzinfo is None:
            self.since = self.since.replace(tzinfo=timezone.utc)
        return self
