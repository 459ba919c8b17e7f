"""PII redaction (field case F4): exact spans, typed consistent placeholders, fail closed."""

from __future__ import annotations

import random
import re
from urllib.parse import unquote

import phonenumbers
import pytest

from connectors.feedback_tables.source import SqlFeedbackSource
from feedback import redact
from feedback.redact import RedactionError, Redactor, Span, luhn_ok

from conftest import row

F4 = ("(555) 010-4477, +44 20 7946 0958, jane.roe@example.com, jane.roe%40example.com, "
      "SSN 000-12-3456, order #123-456, 2024-05-01")
PLACEHOLDER = r"\[[A-Z_]+_[0-9a-f]{6}\]"


def test_f4_every_identifier_replaced_at_exact_boundaries():
    out, n = Redactor().redact(F4, scope="conv-1")
    parts = out.split(", ")
    kinds = [re.fullmatch(PLACEHOLDER, p) and p[1:p.rindex("_")] for p in parts[:4]]
    assert kinds == ["PHONE", "PHONE", "EMAIL", "EMAIL"]
    assert re.fullmatch(r"SSN \[NATIONAL_ID_[0-9a-f]{6}\]", parts[4])
    assert parts[5:] == ["order #123-456", "2024-05-01"]
    assert n == 5
    assert parts[2] == parts[3]  # the encoded e-mail is the same entity


def test_placeholders_consistent_within_and_unlinkable_across_conversations():
    r = Redactor()
    a1, _ = r.redact("mail jane.roe@example.com", "conv-1")
    a2, _ = r.redact("again: Jane.Roe@Example.com", "conv-1")
    b, _ = r.redact("mail jane.roe@example.com", "conv-2")
    assert a1.split()[-1] == a2.split()[-1]
    assert a1 != b
    assert Redactor(key="secret").redact("mail jane.roe@example.com", "conv-1")[0] != a1


@pytest.mark.parametrize("text, kind", [
    ("card 4111 1111 1111 1111 ok", "CARD"), ("card 4111-1111-1111-1111 ok", "CARD"),
    ("from 192.168.10.20 ok", "IP"), ("from 2001:db8::8a2e:370:7334 ok", "IP"),
    ("ni QQ 12 34 56 C ok", "NATIONAL_ID"), ("ssn 123 45 6789 ok", "NATIONAL_ID"),
    ("call +49 30 901820 ok", "PHONE"), ("call +1 415-555-0199 ok", "PHONE"),
    ("iban DE89 3704 0044 0532 0130 00 ok", "IBAN"), ("iban GB82WEST12345698765432 ok", "IBAN"),
])
def test_each_kind_is_found(text, kind):
    out, n = Redactor().redact(text, "c")
    assert n == 1 and re.fullmatch(rf"\w+ \[{kind}_[0-9a-f]{{6}}\] ok", out), out


@pytest.mark.parametrize("text", ["card 4111 1111 1111 1112", "iban DE88 3704 0044 0532 0130 00",
                                  "at 10:00:00 on 2024-05-01", "version 1.2.3.4.5",
                                  "order #123-456 and invoice 12345"])
def test_look_alikes_stay(text):
    assert Redactor().redact(text, "c") == (text, 0)


def test_luhn():
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")


def test_ner_plug_in_point_and_fail_closed():
    def names(text):
        return [Span(m.start(), m.end(), "PERSON", m.group()) for m in re.finditer(r"Jane Roe", text)]

    out, n = Redactor(detectors=[names]).redact("ask Jane Roe", "c")
    assert n == 1 and out.startswith("ask [PERSON_")

    def broken(text):
        raise RuntimeError("model not loaded")

    with pytest.raises(RedactionError, match="model not loaded"):
        Redactor(detectors=[broken]).redact("anything", "c")
    with pytest.raises(RedactionError, match="survived"):
        Redactor(detectors=[]).redact("mail jane.roe@example.com", "c")


def test_source_redacts_every_text_and_quarantines_rows_that_fail(feedback_db, monkeypatch):
    db = feedback_db([row("m1", -1, prompt=f"my details: {F4}", response="mail me at jane.roe@example.com",
                          correction="Noted, jane.roe@example.com."),
                      row("m2", 1, conv="c2", prompt="poison \u2620 here"),
                      row("m3", 1, conv="c3")])
    source = SqlFeedbackSource({"url": f"sqlite:///{db.name}", "table": "chat_feedback", "timezone": "UTC"},
                               db.parent, "feedback/support")
    original = source._redactor.redact

    def flaky(text, scope=""):
        if text and "\u2620" in text:  # a NUL is removed on read now (8d3fe33): the trigger must survive it
            raise RedactionError("detector crashed")
        return original(text, scope)

    monkeypatch.setattr(source._redactor, "redact", flaky)
    result = source.read()
    texts = [m.content for e in result.sft_examples for m in e.messages]
    texts += [t for p in result.preference_pairs for t in (p.chosen, p.rejected)]
    assert not any("@" in t or "%40" in t or "7946" in t or "000-12" in t for t in texts)
    assert any("order #123-456" in t for t in texts)
    (held,) = result.quarantined
    assert held.reason.startswith("redaction failed") and "poison" not in str(held.raw)
    pair = result.preference_pairs[0]
    email = re.search(r"\[EMAIL_[0-9a-f]{6}\]", pair.rejected).group()
    assert email in pair.chosen and email in pair.prompt[-1].content  # consistent within conversation
    assert result.counts["redactions"] >= 7


def _random_texts(alphabet: list[str], n: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    return ["".join(rnd.choice(alphabet) for _ in range(rnd.randrange(1, 40))) for _ in range(n)]


def test_find_emails_finds_what_the_email_pattern_finds():
    """find_emails starts from each @ / %40; its spans are ``_EMAIL.finditer``'s, including local
    parts cut by the previous match, %40 next to @, and letters that only match ignoring case."""
    alphabet = [*"aZk09._+-@% 4", "\u212a", "\u017f", "\u0130", "\u0131", "é", "%40", "x.io", ".com", "a@b.cc"]
    found = 0
    for text in _random_texts(alphabet, 20_000, seed=5) + ["a@b.cc_d@e.ff", "a%40@b.cc", "x@ab.cd.ef@gh.ij"]:
        expected = [(m.start(), m.end(), unquote(m.group()).lower()) for m in redact._EMAIL.finditer(text)]
        assert [(s.start, s.end, s.value) for s in redact.find_emails(text)] == expected, text
        found += bool(expected)
    assert found > 5_000


def test_phone_verdicts_kept_per_candidate_give_the_plain_matchers_numbers():
    """The phone detector parses each distinct candidate once (POSSIBLE leniency: the verdict
    depends on the candidate alone); spans and numbers equal the plain matcher's, first and
    repeated sightings alike."""
    assert redact._MATCHER is redact._Matcher  # the installed phonenumbers has the overridden method
    alphabet = [*"0123456789 -+()./x:", "+44 20 7946 0958", "(555) 010-4477", "ext. 12", "2024-05-01", "ab"]
    texts = _random_texts(alphabet, 3_000, seed=11)
    redact._VERDICTS.clear()
    for _ in range(2):  # unseen candidates, then kept verdicts
        for text in texts:
            plain = phonenumbers.PhoneNumberMatcher(text, "US", leniency=phonenumbers.Leniency.POSSIBLE)
            kept = redact._Matcher(text, "US", leniency=phonenumbers.Leniency.POSSIBLE)
            assert [(m.start, m.end, m.number) for m in kept] == [(m.start, m.end, m.number) for m in plain], text
    assert redact._VERDICTS and sum(v is not None for v in redact._VERDICTS.values()) > 100


@pytest.mark.parametrize("region", ["US", "GB", "DE", "IT", "FR", "BR", "CN", "JP"])
def test_short_candidates_skipped_without_parsing_give_the_plain_matchers_numbers(region, monkeypatch):
    """Candidates of ASCII digits and separators with fewer digits than the region's shortest
    possible number are refused without ``parse``; spans and numbers still equal the plain
    matcher's on adversarial texts: short and long digit runs, international prefixes (``011``,
    ``00``, Brazil's carrier-coded ones; ``0049 12`` is a possible German number in France), plus
    signs, extensions, vanity letters, ``tel:`` and non-ASCII digits, leading zeros."""
    skipped = []

    def counted(candidate: str, where: str | None) -> bool:
        out = too_short(candidate, where)
        skipped.append(out)
        return out

    too_short = redact._too_short
    monkeypatch.setattr(redact, "_too_short", counted)
    alphabet = [*"0123456789012345 -().//+", "011", "00", "0014", "1", "0049 ", "01049", "00290 ", "＋", "١٢٣", "１２",
                "x", "ext. 7", "#", ",,", ";", "tel:", "FLOWERS", "ab", "2024-05-01", "12:30", "+44 20 7946 0958",
                "(555) 010-4477"]
    texts = _random_texts(alphabet, 700, seed=sum(map(ord, region)))
    redact._VERDICTS.clear()
    found = 0
    for text in texts:
        plain = phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.POSSIBLE)
        kept = redact._Matcher(text, region, leniency=phonenumbers.Leniency.POSSIBLE)
        expected = [(m.start, m.end, m.number) for m in plain]
        assert [(m.start, m.end, m.number) for m in kept] == expected, text
        found += bool(expected)
    assert found > 100 and sum(skipped) > 200 and len(skipped) - sum(skipped) > 200  # both ways taken, often
