"""Pure parts of the mapping: rating scales, JSON paths, timestamps."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from connectors.feedback_tables.mapping import (JsonPath, RatingScale, RowError, normalise_rating, parse_timestamp,
                                         resolve_json, zone)

LABELS = RatingScale(kind="labels", labels={"good": 1, "ok": 0.5, "bad": 0})


@pytest.mark.parametrize("scale, value, expected", [
    (RatingScale(kind="thumbs"), 1, 1.0), (RatingScale(kind="thumbs"), -1, 0.0), (RatingScale(kind="thumbs"), "up", 1.0),
    (RatingScale(kind="thumbs"), True, 1.0), (RatingScale(kind="thumbs"), False, 0.0),
    (RatingScale(kind="stars_1_5"), 4, 0.75), (RatingScale(kind="scale_0_10"), 0, 0.0),
    (RatingScale(kind="range", min=0, max=5), "2.5", 0.5), (LABELS, "ok", 0.5),
    (RatingScale(kind="thumbs"), None, None), (RatingScale(kind="stars_1_5"), "  ", None),
])
def test_normalise_rating(scale, value, expected):
    assert normalise_rating(value, scale) == expected


@pytest.mark.parametrize("scale, value, words", [
    (RatingScale(kind="thumbs"), 0, "thumbs scale"), (RatingScale(kind="stars_1_5"), 0, "outside"),
    (RatingScale(kind="scale_0_10"), "ten", "not a number"), (LABELS, "great", "declared labels"),
    (RatingScale(kind="stars_1_5"), float("nan"), "NaN"),
])
def test_off_scale_values_are_row_errors(scale, value, words):
    with pytest.raises(RowError, match=words):
        normalise_rating(value, scale)


def test_default_thresholds_in_scale_units():
    assert [RatingScale(kind=k).default_threshold() for k in ("thumbs", "stars_1_5", "scale_0_10")] == [1, 4, 7]
    assert RatingScale(kind="range", min=0, max=4).default_threshold() == 3


@pytest.mark.parametrize("value, path, expected", [
    ('{"a": {"b": [1, {"c": 7}]}}', "$.a.b[1].c", 7), ({"a": None}, "a.b", None), ("null", "a", None),
    (None, "a", None), ('{"a": [1]}', "a[5]", None), (b'{"x": 2}', "x", 2),
])
def test_json_paths(value, path, expected):
    assert resolve_json(value, JsonPath(column="meta", path=path)) == expected


def test_json_path_errors():
    with pytest.raises(RowError, match="not valid JSON"):
        resolve_json("{oops", JsonPath(column="meta", path="a"))
    with pytest.raises(RowError, match="expected an object"):
        resolve_json('{"a": 3}', JsonPath(column="meta", path="a.b"))


def test_timestamps():
    utc = timezone.utc
    assert parse_timestamp("2026-03-01T09:00:00-03:00", utc) == (datetime(2026, 3, 1, 12, tzinfo=utc), False)
    assert parse_timestamp("2026-03-01 12:00:00Z", utc)[0] == datetime(2026, 3, 1, 12, tzinfo=utc)
    assert parse_timestamp("2026-03-01T13:00:00", zone("Europe/Berlin")) == (datetime(2026, 3, 1, 12, tzinfo=utc), True)
    assert parse_timestamp(0, utc)[0] == datetime(1970, 1, 1, tzinfo=utc)
    assert parse_timestamp(None, utc) == (None, False)
    with pytest.raises(RowError, match="ISO 8601"):
        parse_timestamp("yesterday", utc)
    with pytest.raises(ValueError, match="IANA"):
        zone("Mars/Olympus")
