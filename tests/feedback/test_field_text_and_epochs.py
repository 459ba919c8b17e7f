"""SQL feedback field inputs: epoch timestamps stored in a TEXT column (seconds, milliseconds) and
control characters (NUL, BEL, ANSI colours) in the texts; both ingest lanes give the same records."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from connectors.feedback_tables.mapping import RowError, clean_text, parse_timestamp
from connectors.feedback_tables.source import SqlFeedbackSource

from conftest import row

UTC = timezone.utc
NEW_YEAR = datetime(2026, 1, 1, tzinfo=UTC)


def read(db, ingest):
    opts = {"url": f"sqlite:///{db.name}", "table": "chat_feedback", "timezone": "UTC", "ingest": ingest,
            "workers": 1}
    return SqlFeedbackSource(opts, db.parent, "feedback/support").read()


def test_epoch_text_is_seconds_or_milliseconds_and_nonsense_says_why():
    assert parse_timestamp("1767225600", UTC) == (NEW_YEAR, False)
    assert parse_timestamp(" 1767225600.5 ", UTC)[0] == datetime(2026, 1, 1, 0, 0, 0, 500000, tzinfo=UTC)
    assert parse_timestamp("1767225600123", UTC)[0] == datetime(2026, 1, 1, 0, 0, 0, 123000, tzinfo=UTC)
    assert parse_timestamp(1767225600123, UTC)[0] == datetime(2026, 1, 1, 0, 0, 0, 123000, tzinfo=UTC)
    assert parse_timestamp("20260301", UTC)[0] == datetime(2026, 3, 1, tzinfo=UTC)  # ISO basic date, not epoch
    for bad in ("99999999999999999999", "-1767225600", "12abc", float("nan")):
        with pytest.raises(RowError, match="ISO 8601|1970-2999"):
            parse_timestamp(bad, UTC)


@pytest.mark.parametrize("ingest", ["rows", "fast"])
def test_epoch_text_rows_are_read_not_quarantined(feedback_db, ingest):
    db = feedback_db([row("s", 1, at="1767225600"), row("ms", 1, at="1767225600123", user="u2"),
                      row("iso", 1, at="2026-01-01T00:00:00Z", user="u3"), row("bad", 1, at="soon", user="u4")])
    result = read(db, ingest)
    assert sorted(e.source.locator.split(";")[1] for e in result.sft_examples) == [
        "message_id=iso", "message_id=ms", "message_id=s"]
    assert [q.reason for q in result.quarantined] == [
        "timestamp 'soon' is neither ISO 8601 nor Unix epoch seconds/milliseconds"]


def test_clean_text_removes_controls_and_refuses_binary():
    counts: dict[str, int] = {}
    assert clean_text("response", "Use\x00 add()\x07 now\x1b[31m red\x1b[0m.\tok\r\n", counts) == \
        "Use add() now red.\tok\r\n"
    assert counts == {"control_chars_removed": 11}
    msgs = [{"role": "user", "content": "a\x00b"}, {"role": "assistant", "content": "c"}]
    assert clean_text("prompt", msgs, counts) == [{"role": "user", "content": "ab"}, {"role": "assistant", "content": "c"}]
    with pytest.raises(RowError, match="binary data in a text column"):
        clean_text("response", "\x00\x01\x02\x03ab\x04\x05\x06\x07", {})


@pytest.mark.parametrize("ingest", ["rows", "fast"])
def test_control_characters_never_reach_sft_text(feedback_db, ingest):
    db = feedback_db([row("nul", 1, prompt="How\x00 do I add?", response="Use add()\x1b[1m.\x1b[0m"),
                      row("clean", 1, user="u2"),
                      row("blob", 1, user="u3", response="\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0e")])
    result = read(db, ingest)
    texts = [m.content for e in result.sft_examples for m in e.messages]
    assert texts == ["How do I add?", "Use add().", "How do I add?", "Use add()."]
    assert result.counts["control_chars_removed"] == 9  # the NUL and two 4-character escapes
    assert [q.reason.split(":")[0] for q in result.quarantined] == [
        "response holds 10 control characters (NUL, ESC...) in 10 characters"]
