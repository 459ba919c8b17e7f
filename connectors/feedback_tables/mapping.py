"""The declarative mapping from a company's feedback table to tuneloop's feedback fields.

Pure parts of the SQL feedback connector (no database access), each tested on its own:

- :class:`ColumnMap` / :class:`JsonPath`: where each field lives (a column, or a path inside a
  JSON column);
- :class:`RatingScale` and :func:`normalise_rating`: a declared scale turns raw ratings into a
  score in ``[0, 1]``; ``NULL`` and JSON ``null`` are *unlabelled*, never zero (field case F2);
- :func:`parse_timestamp`: ISO 8601 strings with any offset, ``Z``, naive values in a declared
  zone, driver ``datetime`` objects and epoch seconds all become aware UTC (field case F3).

Bad values raise :class:`RowError`; the connector quarantines the row with that reason.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone, tzinfo
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, model_validator

from feedback.scales import SCALES, ScaleName

FIELDS = ("conversation_id", "message_id", "user_id", "row_id", "prompt", "response", "rating",
          "correction", "created_at", "system_prompt", "tests", "expected")
TEXT_FIELDS = ("prompt", "response", "correction", "system_prompt", "tests", "expected")
"""The fields that are redacted (in this order) before records are built."""


class RowError(ValueError):
    """One row cannot be used; the message is the quarantine reason."""


class _Opt(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ColumnMap(_Opt):
    """Column name of each field in the table (or query result). ``None``: not mapped.

    ``prompt`` and ``response`` default to columns of those names; everything else is optional.
    ``row_id`` is a unique, increasing key (the primary key) used for provenance, tie-breaks and
    incremental reads. ``tests`` (test source) and ``expected`` (expected answer) turn rated
    failures into RL tasks. ``system_prompt`` is prepended as a system message.
    """

    conversation_id: str | None = None
    message_id: str | None = None
    user_id: str | None = None
    row_id: str | None = None
    prompt: str | None = None
    response: str | None = None
    rating: str | None = None
    correction: str | None = None
    created_at: str | None = None
    system_prompt: str | None = None
    tests: str | None = None
    expected: str | None = None


class JsonPath(_Opt):
    """A value nested in a JSON column: ``column`` holding JSON text or a JSON value, and a
    dotted ``path`` such as ``details.rating`` or ``$.items[0].score``."""

    column: str
    path: str = Field(..., min_length=1)

    def steps(self) -> list[str | int]:
        """The path as keys (str) and list indexes (int)."""
        body = self.path[2:] if self.path.startswith("$.") else self.path.lstrip("$")
        steps: list[str | int] = []
        for part in filter(None, body.split(".")):
            m = re.fullmatch(r"([^\[\]]*)((?:\[\d+\])*)", part)
            if not m:
                raise ValueError(f"bad JSON path segment {part!r} in {self.path!r}")
            if m.group(1):
                steps.append(m.group(1))
            steps += [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
        return steps


_PRESETS: dict[str, tuple[float, float, float]] = {  # kind -> (min, max, default good threshold)
    kind: (s.min, s.max, s.good) for kind, s in SCALES.items()}  # the named scales of feedback.scales


class RatingScale(_Opt):
    """How the rating column is to be read.

    ``kind``: ``thumbs`` (+1 / -1; also true/false, "up"/"down"), ``stars_1_5``,
    ``scale_0_10`` (the named scales of :mod:`feedback.scales`), ``range`` (numbers from ``min`` to ``max``, e.g. 0–5), or ``labels``
    (``labels`` maps each label to a score in [0, 1], e.g. ``{good: 1, ok: 0.5, bad: 0}``).
    Values outside the scale are errors (the row is quarantined), never clipped.
    """

    kind: Literal[ScaleName, "range", "labels"] = "thumbs"
    min: float | None = None
    max: float | None = None
    labels: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> "RatingScale":
        if self.kind == "range" and (self.min is None or self.max is None or self.min >= self.max):
            raise ValueError("rating kind `range` needs `min` < `max`, e.g. {kind: range, min: 0, max: 5}")
        if self.kind == "labels":
            if not self.labels:
                raise ValueError("rating kind `labels` needs `labels`, e.g. {good: 1, bad: 0}")
            if any(not 0 <= v <= 1 for v in self.labels.values()):
                raise ValueError("each label's score must be in [0, 1]")
        return self

    def bounds(self) -> tuple[float, float]:
        """(min, max) of the raw scale (labels: 0, 1)."""
        if self.kind in _PRESETS:
            return _PRESETS[self.kind][:2]
        if self.kind == "labels":
            return 0.0, 1.0
        return float(self.min), float(self.max)  # type: ignore[arg-type]

    def default_threshold(self) -> float:
        """Default good threshold in raw units: thumbs up, 4 stars, 7 of 10, 3/4 of a range."""
        if self.kind in _PRESETS:
            return _PRESETS[self.kind][2]
        lo, hi = self.bounds()
        return lo + 0.75 * (hi - lo)


_THUMBS = {"up": 1.0, "down": -1.0, "+1": 1.0, "-1": -1.0, "1": 1.0, "true": 1.0, "false": -1.0}


def raw_rating(value: Any, scale: RatingScale) -> float | None:
    """The rating in raw scale units; ``None`` for NULL / JSON null / empty (unlabelled).

    Raises:
        RowError: not a number or label of the declared scale, or outside it.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if scale.kind == "labels":
        key = str(value).strip()
        if key not in scale.labels:
            raise RowError(f"rating {value!r} is not one of the declared labels {sorted(scale.labels)}")
        return float(scale.labels[key])
    if isinstance(value, bool):
        number = 1.0 if value else (-1.0 if scale.kind == "thumbs" else 0.0)
    elif scale.kind == "thumbs" and isinstance(value, str) and value.strip().lower() in _THUMBS:
        number = _THUMBS[value.strip().lower()]
    else:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise RowError(f"rating {value!r} is not a number on the {scale.kind} scale") from None
    if number != number:  # NaN
        raise RowError("rating is NaN")
    lo, hi = scale.bounds()
    if scale.kind == "thumbs" and number not in (-1.0, 1.0):
        raise RowError(f"rating {value!r} is not on the thumbs scale (+1 / -1)")
    if not lo <= number <= hi:
        raise RowError(f"rating {value!r} is outside the {scale.kind} scale [{lo:g}, {hi:g}]")
    return number


def normalise_rating(value: Any, scale: RatingScale) -> float | None:
    """The rating as a score in [0, 1] (``(raw - min) / (max - min)``), or ``None`` if unlabelled."""
    raw = raw_rating(value, scale)
    if raw is None:
        return None
    lo, hi = scale.bounds()
    return (raw - lo) / (hi - lo)


def as_text(field: str, value: Any) -> Any:
    """A text field's value as ``str`` (chat-message lists pass through).

    ``bytes`` (a BLOB in a text column, e.g. SQLite's mixed types) are decoded as UTF-8, never
    written as their Python repr; other scalars become ``str(value)``.
    Raises:
        RowError: bytes that are not UTF-8 text (the row is quarantined with this reason).
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RowError(f"{field} is binary, not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    return value if isinstance(value, (str, list)) else str(value)


CONTROL = r"\x1b\[[0-9;?]*[ -/]*[@-~]|[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]"
"""What :func:`clean_text` removes: ANSI escape sequences (whole), then C0/C1 control characters
other than tab, newline, carriage return and form feed. An RE2 pattern too (the fast lane's check)."""
_CONTROL = re.compile(CONTROL)
BINARY_SHARE, BINARY_MIN = 0.1, 8  # binary: at least 8 control characters or escapes, over 10 % of the text


def clean_text(field: str, value: Any, counts: dict[str, int]) -> Any:
    """``value`` without control characters; chat-message lists are cleaned message by message;
    ``counts["control_chars_removed"]`` grows by the characters removed. NUL, ESC sequences, BEL...
    in chat text are transport or terminal artefacts (C strings, a CLI's colours), never what a
    model should learn to write, and the rest of the row is good feedback: they are removed (and
    counted), not the row.

    Raises:
        RowError: 8 or more control characters (an ANSI escape counts one) making over 10 % of the
            text: binary data in a text column, not chat text (the row is quarantined with this reason).
    """
    if isinstance(value, list):
        return [{**m, "content": clean_text(field, m["content"], counts)}
                if isinstance(m, dict) and isinstance(m.get("content"), str) else m for m in value]
    if not isinstance(value, str) or not _CONTROL.search(value):
        return value
    cleaned, found = _CONTROL.subn("", value)
    if found >= BINARY_MIN and found > BINARY_SHARE * len(value):
        raise RowError(f"{field} holds {found} control characters (NUL, ESC...) in {len(value)} characters: "
                       "binary data in a text column, not chat text")
    counts["control_chars_removed"] = counts.get("control_chars_removed", 0) + len(value) - len(cleaned)
    return cleaned


def resolve_json(value: Any, path: JsonPath) -> Any:
    """Follow ``path`` into ``value`` (JSON text or an already decoded value).

    Returns ``None`` when the column is NULL, the JSON is ``null`` or a key is absent.
    Raises:
        RowError: the text is not valid JSON, or a step indexes into a scalar.
    """
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise RowError(f"column {path.column!r} is not valid JSON ({exc.msg} at {exc.pos})") from None
    for step in path.steps():
        if value is None:
            return None
        if isinstance(step, int):
            if not isinstance(value, list):
                raise RowError(f"JSON path {path.path!r}: expected a list at [{step}]")
            value = value[step] if step < len(value) else None
        else:
            if not isinstance(value, dict):
                raise RowError(f"JSON path {path.path!r}: expected an object at {step!r}")
            value = value.get(step)
    return value


def zone(name: str | None) -> tzinfo:
    """A time zone by IANA name (``None`` or ``UTC``: UTC). Raises ``ValueError`` if unknown."""
    if not name or name.upper() == "UTC":
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r}; use an IANA name such as 'Europe/Berlin'") from None


def parse_timestamp(value: Any, naive_zone: tzinfo) -> tuple[datetime | None, bool]:
    """``(aware UTC datetime or None, was_naive)``.

    Accepts ``datetime`` (aware or naive), ISO 8601 text (``Z``, ``+hh:mm``, space or ``T``),
    and numbers, or digits in text (``'1767225600'``), as Unix epoch seconds, or milliseconds when
    10^11 or more. Naive values are read in ``naive_zone``.
    Raises:
        RowError: unparseable text, or an epoch number outside 1970-2999.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, False
    if isinstance(value, str) and _EPOCH.fullmatch(value.strip()):
        return _from_epoch(float(value.strip()), value), False  # epoch seconds or milliseconds in a TEXT column
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _from_epoch(value, value), False
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise RowError(f"timestamp {value!r} is neither ISO 8601 nor Unix epoch seconds/milliseconds") from None
    if not isinstance(value, datetime):
        raise RowError(f"timestamp of type {type(value).__name__} is not supported")
    naive = value.tzinfo is None or value.tzinfo.utcoffset(value) is None
    if naive:
        value = value.replace(tzinfo=naive_zone)
    return value.astimezone(timezone.utc), naive


# epoch text: 9+ integer digits (seconds from 1973, milliseconds); shorter digit runs stay ISO 8601 (20260301)
_EPOCH = re.compile(r"[0-9]{9,}(\.[0-9]+)?")
_MS_FROM = 1e11  # 10^11 s is the year 5138: larger epoch numbers are milliseconds (10^11 ms: 1973)


def _from_epoch(value: float, raw: Any) -> datetime:
    """Unix epoch seconds, or milliseconds when ``|value| >= 10^11``, as aware UTC (years 1970-2999).

    Raises:
        RowError: not finite or outside 1970-2999 (a rating or id in the timestamp column).
    """
    seconds = value / 1000 if abs(value) >= _MS_FROM else value
    if not math.isfinite(seconds) or not 0 <= seconds < 32503680000:
        raise RowError(f"timestamp {raw!r} as Unix epoch seconds/milliseconds falls outside 1970-2999")
    return datetime.fromtimestamp(float(seconds), timezone.utc)


def check_scale(scale: "RatingScale", out_of_scale: int, rows_read: int, share: float = 0.2) -> None:
    """Refuse a read where many ratings fall outside the declared scale: the scale is then
    probably wrong, and the in-range values would be misread (a thumbs-up +1 read as 1 star).

    Args:
        out_of_scale: rows quarantined because their rating is outside the scale.
        rows_read: rows read from the table.
    Raises:
        SourceError: more than ``share`` of the rows read have out-of-scale ratings.
    """
    from sdk.errors import SourceError

    if rows_read and out_of_scale / rows_read > share:
        lo, hi = scale.bounds()
        raise SourceError(f"{out_of_scale} of {rows_read} ratings are outside the declared {scale.kind} scale "
                          f"[{lo:g}, {hi:g}], so the scale is probably wrong",
                          "declare the table's real scale under `rating:` (thumbs, stars_1_5, scale_0_10, a range "
                          "or labels); the quarantine lists the rejected values")
