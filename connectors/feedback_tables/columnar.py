"""Columnar value parsing for fast ingest (issue 19): keys, ratings, timestamps and text checks of
a whole Arrow chunk at once (pyarrow compute and numpy), with the row path's exact semantics.

Each function returns numpy arrays over the chunk's rows plus an ``unsure`` mask: rows whose
value this module does not decide with certainty (an unusual timestamp form, a rating that is
not on the scale, text whose ends are Unicode whitespace...). The caller sends the groups of
those rows to the row path (:meth:`SqlFeedbackSource._parse`), which quarantines or accepts them
with its own reasons; everything decided here is what the row path would decide.

A column type this module does not handle raises :class:`Unsupported`; the whole chunk then
takes the row path.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connectors.feedback_tables.mapping import CONTROL, RatingScale

_ASCII_WS = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"  # str.isspace() over ASCII
_UNI_WS = pa.array(["\x85", "\xa0", "\u1680", *map(chr, range(0x2000, 0x200B)), "\u2028", "\u2029", "\u202f",
                    "\u205f", "\u3000"])  # the other characters str.isspace() accepts (test_columnar checks the list)
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
US = timedelta(microseconds=1)
MIN_US = (datetime.min.replace(tzinfo=timezone.utc) - EPOCH) // US  # the row path's "no timestamp"
_ISO = (r"^[12][0-9]{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])[T ](?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
        r"(?:\.[0-9]{3}|\.[0-9]{6})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?$")  # ASCII only: fixed byte positions
_THUMBS = {"up": 1.0, "down": -1.0, "+1": 1.0, "-1": -1.0, "1": 1.0, "true": 1.0, "false": -1.0}
_NUMBER = r"^[+-]?[0-9]+(\.[0-9]+)?$"
_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"), ("\x08", "\\b"),
            ("\x0c", "\\f"))
_OTHER_CONTROL = r"[\x00-\x07\x0b\x0e-\x1f]"
_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'
_OTHER_BYTES = np.array([*range(0x08), 0x0B, *range(0x0E, 0x20)])  # the bytes of _OTHER_CONTROL


class Unsupported(Exception):
    """A column type the columnar lane does not handle; the chunk takes the row path."""


def np_bool(arr: pa.Array | pa.ChunkedArray, null: bool = False) -> np.ndarray:
    """A boolean Arrow array as numpy, nulls as ``null``."""
    return np.asarray(pc.fill_null(arr, null).to_numpy(zero_copy_only=False), dtype=bool)


def is_text(t: pa.DataType) -> bool:
    """String columns (and all-NULL ones) are text."""
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)


def as_text(arr: pa.Array) -> pa.Array:
    """``arr`` as a string array (an all-NULL column becomes NULL strings)."""
    return arr.cast(pa.string()) if pa.types.is_null(arr.type) else arr


def key_strings(arr: pa.Array) -> pa.Array:
    """``str(value)`` of each key value, as the row path compares them (NULL is ``'None'``).

    Raises:
        Unsupported: a type whose ``str()`` Arrow does not reproduce (floats, timestamps, ...).
    """
    if pa.types.is_integer(arr.type) or is_text(arr.type):
        return pc.fill_null(arr.cast(pa.string()), "None")
    raise Unsupported(f"key column of type {arr.type}")


def group_ids(keys: list[pa.Array], n: int) -> np.ndarray:
    """Group number of each row: a new group starts where any key differs from the row before."""
    start = np.zeros(n, dtype=bool)
    if n:
        start[0] = True
    for k in keys:
        if n > 1:
            start[1:] |= np_bool(pc.not_equal(k.slice(1), k.slice(0, n - 1)))
    return np.cumsum(start) - 1


def text_bytes(arr: pa.Array) -> np.ndarray:
    """The UTF-8 bytes behind a string array's values, without a copy (for a slice, or values
    under NULLs, a superset: only for "is any byte of this kind there" checks)."""
    buf = arr.buffers()[2] if arr.type in (pa.string(), pa.large_string()) else None
    return np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)


_CONTROL_BYTES = np.zeros(256, dtype=bool)  # bytes of what mapping.CONTROL matches (0xC2: C1 controls' lead byte)
_CONTROL_BYTES[[*range(0x09), 0x0B, *range(0x0E, 0x20), 0x7F, 0xC2]] = True


def has_control(arr: pa.Array) -> np.ndarray:
    """Per text: holds what :func:`~connectors.feedback_tables.mapping.clean_text` removes (control
    characters, ANSI escapes); such rows take the row path. One byte scan when no text has any."""
    if not _CONTROL_BYTES[text_bytes(arr)].any():
        return np.zeros(len(arr), dtype=bool)
    return np_bool(pc.match_substring_regex(arr, CONTROL))


_EDGE = np.zeros(256, dtype=bool)  # bytes that may start or end what str.strip() removes: ASCII whitespace, non-ASCII
_EDGE[[ord(c) for c in _ASCII_WS]] = True
_EDGE[0x80:] = True


def _untrimmed_blank(arr: pa.Array) -> np.ndarray | None:
    """Blank flags (NULL or empty) of ``arr`` when no text of it begins or ends with a byte of
    :data:`_EDGE` (``str.strip()`` then leaves every text as it is), else ``None``: each text's
    first and last bytes, read from the buffers, no pass over the texts."""
    n = len(arr)
    if not n or arr.type not in (pa.string(), pa.large_string()):
        return None
    width = np.int64 if arr.type == pa.large_string() else np.int32
    offsets = np.frombuffer(arr.buffers()[1], dtype=width)[arr.offset:arr.offset + n + 1]
    valid = np_bool(pc.is_valid(arr)) if arr.null_count else np.ones(n, dtype=bool)
    some = valid & (offsets[1:] > offsets[:-1])
    data = text_bytes(arr)
    if _EDGE[data[offsets[:-1][some]]].any() or _EDGE[data[offsets[1:][some] - 1]].any():
        return None
    return ~some


def strip(arr: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """``(str.strip() of each text, blank (NULL or empty after stripping), unsure)``; ``unsure``:
    the text ends in Unicode whitespace, where ASCII trimming is not ``str.strip()``. Texts that
    begin and end with ASCII non-whitespace are returned as they are (no trimming pass)."""
    arr = as_text(arr)
    blank = _untrimmed_blank(arr)
    if blank is not None:
        return arr, blank, np.zeros(len(arr), dtype=bool)
    trimmed = pc.utf8_trim(arr, characters=_ASCII_WS)
    blank = np_bool(pc.equal(pc.utf8_length(trimmed), 0), null=True)
    if not (text_bytes(trimmed) >= 0x80).any():  # all ASCII: no Unicode whitespace at either end
        return trimmed, blank, np.zeros(len(arr), dtype=bool)
    first = pc.utf8_slice_codeunits(trimmed, 0, 1)
    last = pc.utf8_slice_codeunits(trimmed, -1, 2**31 - 1)
    unsure = np_bool(pc.is_in(first, value_set=_UNI_WS)) | np_bool(pc.is_in(last, value_set=_UNI_WS))
    return trimmed, blank, unsure


def truthy(arr: pa.Array) -> pa.Array:
    """Python truthiness of text or integer values (NULL, ``''`` and ``0`` are false)."""
    if pa.types.is_integer(arr.type):
        return pc.fill_null(pc.not_equal(arr, 0), False)
    return pc.fill_null(pc.greater(pc.utf8_length(as_text(arr)), 0), False)


def ratings(arr: pa.Array | None, scale: RatingScale, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(raw rating, has rating, unsure)`` per row, as :func:`~connectors.feedback_tables.mapping.raw_rating`
    reads them; ``unsure`` rows (not on the scale, not a plain number) go to the row path.

    Raises:
        Unsupported: a rating column that is neither numbers, booleans nor text.
    """
    if arr is None or pa.types.is_null(arr.type):
        return np.zeros(n), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    t = arr.type
    if pa.types.is_boolean(t):
        if scale.kind == "labels":
            raise Unsupported("boolean ratings with labels")
        raw = pc.if_else(arr, 1.0, -1.0 if scale.kind == "thumbs" else 0.0)
        unsure = np.zeros(n, dtype=bool)
    elif pa.types.is_integer(t) or pa.types.is_floating(t):
        if scale.kind == "labels":
            raise Unsupported("numeric ratings with labels")
        raw, unsure = arr.cast(pa.float64()), np.zeros(n, dtype=bool)
    elif is_text(t):
        raw, unsure = _text_ratings(arr, scale)
    else:
        raise Unsupported(f"rating column of type {t}")
    has = np_bool(pc.is_valid(raw))
    values = np.asarray(pc.fill_null(raw, 0.0).to_numpy(zero_copy_only=False), dtype=float)
    if scale.kind != "labels":
        lo, hi = scale.bounds()
        ok = np.isin(values, (-1.0, 1.0)) if scale.kind == "thumbs" else (values >= lo) & (values <= hi)
        unsure |= has & ~ok  # NaN fails both checks
    return values, has, unsure


def _text_ratings(arr: pa.Array, scale: RatingScale) -> tuple[pa.Array, np.ndarray]:
    """Ratings held as text: labels, thumbs words and plain decimal numbers; blank is unlabelled."""
    trimmed, blank, edge = strip(arr)
    nulls = pa.nulls(len(arr), pa.float64())
    if scale.kind == "labels":
        labels = list(scale.labels)
        idx = pc.index_in(trimmed, value_set=pa.array(labels, pa.string()))
        raw = pc.take(pa.array([scale.labels[k] for k in labels], pa.float64()), idx)
    else:
        number = pc.match_substring_regex(trimmed, _NUMBER)
        raw = pc.if_else(number, pc.cast(pc.if_else(number, trimmed, "0"), pa.float64()), nulls)
        if scale.kind == "thumbs":
            words = list(_THUMBS)
            idx = pc.index_in(pc.utf8_lower(trimmed), value_set=pa.array(words, pa.string()))
            raw = pc.coalesce(pc.take(pa.array([_THUMBS[w] for w in words], pa.float64()), idx), raw)
    raw = pc.if_else(pa.array(blank), nulls, raw)
    unsure = edge | (~blank & ~np_bool(pc.is_valid(raw)))
    return raw, unsure


def instants(arr: pa.Array | None, naive_zone: tzinfo, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(UTC microseconds since the epoch, has timestamp, was naive, unsure)`` per row, as
    :func:`~connectors.feedback_tables.mapping.parse_timestamp` reads them. Text is decided when it
    is blank or ``YYYY-MM-DD[T ]HH:MM:SS[.fff|.ffffff][Z|±HH:MM]`` (years 1000-2999); other forms
    are ``unsure``.

    Raises:
        Unsupported: epoch numbers or other non-text, non-timestamp columns.
    """
    zero = np.zeros(n, dtype=bool)
    if arr is None or pa.types.is_null(arr.type):
        return np.zeros(n, dtype=np.int64), zero, zero, zero
    if pa.types.is_timestamp(arr.type):
        has = np_bool(pc.is_valid(arr))
        us = np.asarray(pc.fill_null(arr.cast(pa.timestamp("us", arr.type.tz)).cast(pa.int64()), 0), dtype=np.int64)
        naive = has if arr.type.tz is None else zero
        return _localise(us, naive, naive_zone), has, naive, zero
    if not is_text(arr.type):
        raise Unsupported(f"created_at column of type {arr.type}")
    _, blank, edge = strip(arr)
    arr = as_text(arr)
    ok = np_bool(pc.match_substring_regex(arr, _ISO))
    y, mo, d, h, mi, sec, micro, offset, naive = _iso_fields(arr, ok)
    ok &= _day_exists(y, mo, d)
    local = ((_days(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec) * 1_000_000 + micro)
    us = _localise(local - offset, naive & ok, naive_zone)
    has = ok & ~blank
    unsure = edge | (~blank & ~ok)
    return us, has, naive & has, unsure


def _iso_fields(arr: pa.Array, ok: np.ndarray) -> tuple[np.ndarray, ...]:
    """Year, month, day, hour, minute, second, microseconds, UTC offset (microseconds) and
    naive flag of the texts where ``ok`` (they match :data:`_ISO`: ASCII, fixed positions), read
    from the string buffers with numpy (0 elsewhere); only those texts' bytes are gathered."""
    n = len(arr)
    fields = [np.zeros(n, dtype=np.int64) for _ in range(8)]
    naive = np.zeros(n, dtype=bool)
    rows = np.flatnonzero(ok)
    if not len(rows):
        return (*fields, naive)
    width = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(arr.buffers()[1], dtype=width)[arr.offset:arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)
    start, end = offsets[rows], offsets[rows + 1]

    def number(pos: np.ndarray, width: int) -> np.ndarray:  # digits at pos, pos + 1, ... of each text
        out = data[pos].astype(np.int64) - 48
        for k in range(1, width):
            out = out * 10 + data[pos + k] - 48
        return out

    zone_len = np.where(data[end - 1] == ord("Z"), 1, np.where(np.isin(data[end - 6], (ord("+"), ord("-"))), 6, 0))
    digits = np.maximum(end - start - 19 - zone_len - 1, 0)  # 0, 3 or 6 fraction digits
    milli = number(np.where(digits == 3, start + 20, start), 3)  # other texts: (unused) bytes inside them
    micro = number(np.where(digits == 6, start + 20, start), 6)
    micro = np.where(digits == 3, milli * 1000, np.where(digits == 6, micro, 0))
    sign = np.where(data[end - 6] == ord("-"), -1, 1)
    offset = np.where(zone_len == 6, sign * (number(end - 5, 2) * 60 + number(end - 2, 2)) * 60_000_000, 0)
    for out, value in zip(fields, (number(start, 4), number(start + 5, 2), number(start + 8, 2),
                                   number(start + 11, 2), number(start + 14, 2), number(start + 17, 2), micro, offset)):
        out[rows] = value
    naive[rows] = zone_len == 0
    return (*fields, naive)


def _days(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil)."""
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * (m + np.where(m > 2, -3, 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _day_exists(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    month_days = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[np.clip(m, 0, 12)]
    return d <= month_days + ((m == 2) & leap)


def _localise(us: np.ndarray, naive: np.ndarray, naive_zone: tzinfo) -> np.ndarray:
    """Read naive local times (microseconds as if UTC) in ``naive_zone`` as ``datetime.replace`` +
    ``astimezone`` do (fold 0), one Python conversion per distinct naive value."""
    if naive_zone is timezone.utc or not naive.any():
        return us
    out = us.copy()
    values, inverse = np.unique(us[naive], return_inverse=True)
    utc = np.array([(datetime(1970, 1, 1) + int(v) * US).replace(tzinfo=naive_zone).astimezone(timezone.utc) - EPOCH
                    for v in values], dtype=object)
    out[naive] = np.array([u // US for u in utc], dtype=np.int64)[inverse]
    return out


def json_strings(arr: pa.Array) -> pa.Array:
    """Each text as a JSON string literal's body, escaped as pydantic's ``model_dump_json`` does
    (``"``, ``\\``, control characters; other characters as they are). Only texts holding one of
    those characters are rewritten (all texts, with no search for them, when each is replaced by
    a fixed escape: replacing in a text without the character leaves it as it is)."""
    arr = as_text(arr)
    data = text_bytes(arr)
    present = np.zeros(256, dtype=bool)  # which of those bytes occur at all: vector compares, no histogram
    present[data[(data < 0x20) | (data == ord('"')) | (data == ord("\\"))]] = True
    if not present.any():
        return arr
    if not present[_OTHER_BYTES].any():
        for old, new in _ESCAPES:
            if present[ord(old)]:  # a replacement only adds backslashes and letters, escaped before or never
                arr = pc.replace_substring(arr, old, new)
        return arr
    need = np_bool(pc.match_substring_regex(arr, _NEEDS_ESCAPE))
    if not need.any():
        return arr
    some = not need.all()
    out = pc.filter(arr, pa.array(need)) if some else arr
    original = out
    for old, new in _ESCAPES:
        if present[ord(old)]:  # a replacement only adds backslashes and letters, escaped before or never
            out = pc.replace_substring(out, old, new)
    odd = np_bool(pc.match_substring_regex(original, _OTHER_CONTROL)) if present[_OTHER_BYTES].any() else \
        np.zeros(len(original), dtype=bool)
    if odd.any():
        fixed = [json.dumps(s, ensure_ascii=False)[1:-1] for s in pc.filter(original, pa.array(odd)).to_pylist()]
        out = pc.replace_with_mask(out, pa.array(odd), pa.array(fixed, pa.string()))
    return pc.replace_with_mask(arr, pa.array(need), out) if some else out


def json_literal(text: str) -> str:
    """One constant as a JSON string literal (quotes included), as pydantic writes it."""
    return json.dumps(text, ensure_ascii=False)


def to_us(value: datetime) -> int:
    """An aware datetime as UTC microseconds since the epoch."""
    return (value - EPOCH) // US


def column(table: pa.Table, name: str | None) -> pa.Array | None:
    """One column of the chunk as a single array (``None`` when the field is not mapped); a column of
    one chunk as it is (``combine_chunks`` would copy it)."""
    if name is None:
        return None
    col: Any = table.column(name)
    if isinstance(col, pa.ChunkedArray):
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col
