"""The columnar value parsers of fast ingest agree with the row path's own functions, value by value
(random and edge-case inputs); a value they cannot decide is marked unsure, never decided wrongly."""

from __future__ import annotations

import json
import random
import sys
from datetime import timezone

import pyarrow as pa
import pytest

from connectors.feedback_tables import columnar as col
from connectors.feedback_tables.mapping import (
    RatingScale,
    RowError,
    parse_timestamp,
    raw_rating,
    zone,
)


def test_unicode_whitespace_list_is_what_str_isspace_accepts():
    assert col._UNI_WS.to_pylist() == [chr(c) for c in range(0x80, sys.maxunicode + 1) if chr(c).isspace()]


def _stamps(n: int = 3000) -> list:
    rnd = random.Random(5)
    out = [None, "", "  ", "\u3000", "2026-03-01T10:00:00", " 2026-03-01T10:00:00Z", "2026-02-29T10:00:00Z",
           "2024-02-29 23:59:59.999999-23:59", "2026-13-01T00:00:00", "2026-03-01T24:00:00", "2026-03-01T10:00:60",
           "2026-03-01T10:00:00.5", "2026-03-01T10:00:00+24:00", "0999-01-01T00:00:00", "2026-03-01T10:00:00+0530",
           "1900-02-29T00:00:00", "2000-02-29T00:00:00", "2026-03-29T02:30:00", "2026-10-25T02:30:00", "yesterday"]
    for _ in range(n):
        y, mo, d = rnd.randrange(1000, 3000), rnd.randrange(0, 14), rnd.randrange(0, 33)
        text = f"{y:04d}-{mo:02d}-{d:02d}{rnd.choice('T ')}{rnd.randrange(25):02d}:{rnd.randrange(61):02d}:" \
               f"{rnd.randrange(61):02d}{rnd.choice(['', '.123', '.123456', '.1'])}" \
               f"{rnd.choice(['', 'Z', '+05:30', '-03:00', '+23:59', '-00:00'])}"
        out.append(text)
    return out


@pytest.mark.parametrize("zone_name", ["UTC", "Europe/Berlin", "Asia/Shanghai"])
def test_instants_agree_with_parse_timestamp(zone_name):
    values, tz = _stamps(), zone(zone_name)
    us, has, naive, unsure = col.instants(pa.array(values, pa.string()), tz, len(values))
    decided = 0
    for i, value in enumerate(values):
        if unsure[i]:
            continue
        decided += 1
        created, was_naive = parse_timestamp(value, tz)  # decided values never raise
        assert bool(has[i]) == (created is not None), value
        assert bool(naive[i]) == was_naive, value
        if created is not None:
            assert int(us[i]) == col.to_us(created.astimezone(timezone.utc)), value
    assert decided > len(values) // 3


def test_instants_of_timestamp_columns():
    from datetime import datetime

    naive = [datetime(2026, 3, 29, 2, 30), None, datetime(2026, 1, 1, 12)]
    tz = zone("Europe/Berlin")
    us, has, was_naive, unsure = col.instants(pa.array(naive, pa.timestamp("us")), tz, 3)
    assert list(has) == [True, False, True] and list(was_naive) == [True, False, True] and not unsure.any()
    for i in (0, 2):
        created, _ = parse_timestamp(naive[i], tz)
        assert int(us[i]) == col.to_us(created)


@pytest.mark.parametrize("scale", [RatingScale(kind="thumbs"), RatingScale(kind="stars_1_5"),
                                   RatingScale(kind="range", min=0, max=5),
                                   RatingScale(kind="labels", labels={"good": 1, "ok": 0.5, "bad": 0})])
def test_text_ratings_agree_with_raw_rating(scale):
    values = [None, "", " ", "1", "-1", "+1", " up ", "DOWN", "true", "False", "4", "4.5", "5", "6", "0", "1e0",
              "nan", "inf", "good", " ok", "bad ", "Good", "\u0664", "1_0", "\u30001", "3.", ".5", "x"]
    raw, has, unsure = col.ratings(pa.array(values, pa.string()), scale, len(values))
    for i, value in enumerate(values):
        try:
            expected = raw_rating(value, scale)
        except RowError:
            assert unsure[i], value
            continue
        if not unsure[i]:
            assert bool(has[i]) == (expected is not None), value
            if expected is not None:
                assert raw[i] == expected, value


def test_numeric_ratings_mark_off_scale_values_unsure():
    values = [1, -1, 0, 5, None, 3]
    _, has, unsure = col.ratings(pa.array(values, pa.int64()), RatingScale(kind="thumbs"), len(values))
    assert list(unsure) == [False, False, True, True, False, True] and list(has) == [True] * 4 + [False, True]
    _, has, unsure = col.ratings(pa.array([1.0, float("nan"), 5.5]), RatingScale(kind="stars_1_5"), 3)
    assert list(unsure) == [False, True, True]


@pytest.mark.parametrize("values", [
    [None, "", " a ", "\x1c\tb\x1f", "\u3000c", "d\xa0", "e\u200b", " \u2028 ", "f g", "\x85"],
    [None, "", "a", "f g", "x\n y", "in the \u00e9 middle", None],  # no edge to trim: returned as they are
    ["a", "b "],
])
def test_strip_matches_str_strip_or_is_unsure(values):
    for arr in (pa.array(values, pa.string()), pa.array(["  ", *values], pa.string()).slice(1),
                pa.array(values, pa.large_string())):
        trimmed, blank, unsure = col.strip(arr)
        for i, value in enumerate(values):
            if unsure[i]:
                continue
            assert bool(blank[i]) == (value is None or not value.strip()), value
            if value is not None:
                assert trimmed[i].as_py() == value.strip(), value


def test_json_strings_escape_as_pydantic_does():
    from sdk.tasks.records import Message

    rnd = random.Random(2)
    texts = ["".join(chr(c) for c in range(0x30)) + "\x7f\u2028\xe9\U0001f600\\\"",
             *("".join(rnd.choice("ab\\\"\n\r\t\x08\x0c\x01\x1f\u00e9 ") for _ in range(20)) for _ in range(300))]
    plain = ["".join(rnd.choice("ab\\\"\n\r\t\x08\x0c\u00e9 ") for _ in range(20)) for _ in range(300)]
    # with and without control characters other than the named escapes (those take the per-text search)
    for batch in (texts, plain, [*plain, None, "clean"], ["clean", None, "\u00e9"]):
        escaped = col.json_strings(pa.array(batch, pa.string())).to_pylist()
        for text, body in zip(batch, escaped):
            if text is None:
                assert body is None
                continue
            assert '{"role":"user","content":"' + body + '"}' == Message(role="user", content=text).model_dump_json()
            assert json.loads('"' + body + '"') == text


def test_ascii_prefilters_match_where_the_unicode_ones_do_on_ascii_text():
    import pyarrow.compute as pc

    from connectors.feedback_tables.lane import _ASCII_PREFILTERS, _any
    from feedback.redact import PREFILTERS

    rnd = random.Random(4)
    texts = pa.array(["".join(rnd.choice("0123456789 -.:@%4AZQDEbcf#+()x") for _ in range(rnd.randrange(1, 40)))
                      for _ in range(3000)])
    for ascii_pattern, pattern in zip((*_ASCII_PREFILTERS, _any(_ASCII_PREFILTERS)), (*PREFILTERS, _any(PREFILTERS))):
        assert pc.match_substring_regex(texts, ascii_pattern).equals(pc.match_substring_regex(texts, pattern))


def test_instants_of_sliced_and_large_string_arrays():
    values = _stamps(200)
    tz = zone("UTC")
    whole = col.instants(pa.array(["x", *values], pa.string()).slice(1), tz, len(values))
    large = col.instants(pa.array(values, pa.large_string()), tz, len(values))
    plain = col.instants(pa.array(values, pa.string()), tz, len(values))
    for a, b, c in zip(whole, large, plain):
        assert (a == c).all() and (b == c).all()


@pytest.mark.parametrize("last", ["2026-03-01T10:00:00.123Z", "2026-03-01T10:00:00.123456", "2026-03-01 10:00:00",
                                  "2026-03-01T10:00:00.250+05:30", "2026-03-01T10:00:00-03:00"])
def test_instants_read_no_byte_past_the_last_text(last):
    """Each ISO form as the last text of the string buffer (a fraction's digits are read at fixed
    positions: a shorter text must not make the read run past the buffer)."""
    values = ["2026-03-01T10:00:00.123456+00:00", "", last]
    tz = zone("UTC")
    us, has, naive, unsure = col.instants(pa.array(values, pa.string()), tz, len(values))
    created, was_naive = parse_timestamp(last, tz)
    assert has[2] and not unsure[2] and bool(naive[2]) == was_naive
    assert int(us[2]) == col.to_us(created.astimezone(timezone.utc))
