"""PII redaction: personal data is replaced by typed placeholders before text leaves the database.

What is found (field case F4 in shared/cases/CASES.md):

- ``EMAIL``: ``local@domain.tld``, also URL-encoded (``local%40domain.tld``);
- ``PHONE``: numbers in national and international formats, found by Google's libphonenumber
  port (``phonenumbers.PhoneNumberMatcher`` at ``POSSIBLE`` leniency; numbers without ``+``
  are read in ``default_region``);
- ``NATIONAL_ID``: US SSN shapes (``000-12-3456``, ``000 12 3456``) and UK National Insurance
  numbers (``QQ123456C``);
- ``CARD``: 13–19 digit runs (spaces or dashes allowed) that pass the Luhn check;
- ``IBAN``: international bank account numbers passing the ISO 13616 mod-97 check;
- ``IP``: IPv4 and IPv6 addresses (validated by :mod:`ipaddress`).

Order numbers (``#123-456``) and dates (``2024-05-01``) do not match any of these shapes and
stay. Spans are found on the original text; when two detectors overlap, the earlier detector
in the list wins (emails, IBANs, ids, cards and IPs before phones), then the longer span.

Placeholders are ``[TYPE_xxxxxx]`` where ``xxxxxx`` is a keyed hash (HMAC-SHA256, first 6 hex
digits) of ``(scope, TYPE, normalised value)``. The scope is the conversation id, so the same
e-mail gets the same placeholder within one conversation and unrelated ones across
conversations; the mapping is stateless, so streaming, re-runs and incremental reads agree.
Normalisation makes ``jane.roe@example.com`` and ``jane.roe%40example.com`` one entity, and
phone numbers are compared in E.164. Without a ``key`` the hash is only a pseudonym: a short
hash of a phone number can be narrowed down by brute force; set a secret ``key`` in production.

Fail closed: :meth:`Redactor.redact` raises :class:`RedactionError` when a detector raises or
when a post-check still finds an e-mail shape in the output; callers quarantine the row.

NER plug-in: any callable ``detector(text) -> Iterable[Span]`` can be appended to
``Redactor(detectors=...)`` (e.g. a spaCy or Presidio wrapper that finds person names).
Peers: Microsoft Presidio's recognizer registry (detectors as plug-ins, typed entities).
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import ipaddress
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable
from urllib.parse import unquote

import phonenumbers
from phonenumbers import PhoneNumberMatch


class RedactionError(Exception):
    """Redaction could not be completed on a text; the row must be held back (fail closed)."""


@dataclass(frozen=True)
class Span:
    """One detected entity: ``text[start:end]`` (character offsets) of kind ``kind``.

    ``value`` is the normalised entity used for the placeholder hash (e.g. E.164 phone).
    """

    start: int
    end: int
    kind: str
    value: str


Detector = Callable[[str], Iterable[Span]]

# what find_emails finds (the reference its tests compare with)
_EMAIL = re.compile(r"[A-Za-z0-9._+\-]+(?:@|%40)[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}", re.I)
_AT = re.compile(r"@|%40")
_LOCAL_CHAR = re.compile(r"[A-Za-z0-9._+\-]", re.I)  # _EMAIL's local part, one character
_EMAIL_REST = re.compile(r"(?:@|%40)[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}", re.I)  # _EMAIL after it
_DIGIT = re.compile(r"\d")
_DIGITS_7 = re.compile(r"\d(?:\D{0,4}\d){6}")
_NON_DIGITS = re.compile(r"\D+")
_DIGITS_6 = re.compile(r"\d(?:\D{0,4}\d){5}")
_DOTTED = re.compile(r"\d\.\d{1,3}\.\d")
_DIGITS_13 = re.compile(r"\d(?:[ -]?\d){12}")
_EMAIL_CHECK = re.compile(r"[A-Za-z0-9._+\-]+(?:@|%40)[A-Za-z0-9\-]+\.[A-Za-z]{2,}", re.I)
_SSN = re.compile(r"(?<![\d-])\d{3}([- ])\d{2}\1\d{4}(?![\d-])")
_NINO = re.compile(r"\b[A-Z]{2} ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b")
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b")
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")
_IPV6 = re.compile(r"(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![0-9A-Fa-f:])")


def _may_hold_pii(text: str) -> bool:
    """Cheap necessary condition for any built-in detector to match (the fast path of plain text):
    an ``@``, six digits close together (ids, cards, phones), a dotted quad start, or an IPv6 shape."""
    if "@" in text or "%40" in text or "::" in text or text.count(":") >= 7:
        return True
    if len(_NON_DIGITS.sub("", text)) < 4:  # every digit-based shape needs at least four digits
        return False
    return _DIGITS_6.search(text) is not None or _DOTTED.search(text) is not None


# Necessary conditions, in RE2 syntax (pyarrow.compute), one per built-in detector in the order of
# :func:`default_detectors`: a text no pattern matches holds nothing that detector could find, so
# a columnar pass over a batch sends only candidate texts (and only their detectors) to the exact
# validators. ``\p{Nd}`` is Python's Unicode ``\d``. Kept a superset of each detector's regexes.
PREFILTERS: tuple[str, ...] = (
    r"@|%40",  # find_emails
    r"[A-Z]{2}\p{Nd}{2}",  # find_ibans
    r"\p{Nd}{3}[- ]\p{Nd}{2}[- ]\p{Nd}{4}|[A-Z]{2} ?\p{Nd}{2} ?\p{Nd}{2} ?\p{Nd}{2} ?[A-D]",  # national ids
    r"\p{Nd}(?:[ -]?\p{Nd}){12}",  # find_cards
    r"\p{Nd}{1,3}\.\p{Nd}{1,3}\.\p{Nd}{1,3}\.\p{Nd}{1,3}|:[0-9A-Fa-f]{0,4}:",  # find_ips
    r"\p{Nd}(?:\P{Nd}{0,4}\p{Nd}){6}",  # phones (_DIGITS_7)
)
MAY_HOLD_PII = r"@|%40|::|(?s:.*:){7}|\p{Nd}(?:\P{Nd}{0,4}\p{Nd}){5}|\p{Nd}\.\p{Nd}{1,3}\.\p{Nd}"
"""RE2 superset of :func:`_may_hold_pii` (the columnar pre-filter's first pass)."""


def find_emails(text: str) -> list[Span]:
    """E-mail addresses, plain or with ``@`` URL-encoded as ``%40``; value: decoded, lower case.

    The spans of ``_EMAIL.finditer(text)``, found from each ``@``/``%40`` instead of trying the
    pattern at every character (a third of the cost of redacting a text with an address): the
    local part can only be the whole run of local characters before the ``@`` (neither ``@`` nor
    ``%`` is one), cut where the previous match ended, so a match exists exactly where the rest of
    the pattern matches from the ``@`` (tests/feedback/test_redact.py checks the equality)."""
    if "@" not in text and "%40" not in text:
        return []
    out: list[Span] = []
    pos = 0
    for at in _AT.finditer(text):
        end = at.start()
        if end < pos:
            continue
        start = end
        while start > pos and _LOCAL_CHAR.match(text, start - 1):
            start -= 1
        rest = _EMAIL_REST.match(text, end) if start < end else None
        if rest is not None:
            out.append(Span(start, rest.end(), "EMAIL", unquote(text[start:rest.end()]).lower()))
            pos = rest.end()
    return out


def find_national_ids(text: str) -> list[Span]:
    """US SSN shapes (``ddd-dd-dddd`` / ``ddd dd dddd``) and UK NI numbers; value: digits/letters only."""
    if not _DIGIT.search(text):
        return []
    spans = [Span(m.start(), m.end(), "NATIONAL_ID", re.sub(r"\D", "", m.group())) for m in _SSN.finditer(text)]
    spans += [Span(m.start(), m.end(), "NATIONAL_ID", re.sub(r"\s", "", m.group()).upper()) for m in _NINO.finditer(text)]
    return spans


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum of a string of digits (ISO/IEC 7812)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def find_cards(text: str) -> list[Span]:
    """Payment card numbers: 13–19 digits (single spaces/dashes allowed) passing Luhn."""
    out: list[Span] = []
    if not _DIGITS_13.search(text):
        return out
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 13 <= len(digits) <= 19 and luhn_ok(digits):
            out.append(Span(m.start(), m.end(), "CARD", digits))
    return out


def iban_ok(iban: str) -> bool:
    """ISO 13616 check: move the first four characters to the end, letters to numbers, mod 97 == 1."""
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def find_ibans(text: str) -> list[Span]:
    """IBANs (``DE89 3704 0044 0532 0130 00``, with or without spaces) passing the mod-97 check."""
    out: list[Span] = []
    if not _DIGITS_13.search(text) and not _DIGITS_6.search(text):
        return out
    for m in _IBAN.finditer(text):
        compact = re.sub(r"\s", "", m.group()).upper()
        if 15 <= len(compact) <= 34 and iban_ok(compact):
            out.append(Span(m.start(), m.end(), "IBAN", compact))
    return out


def find_ips(text: str) -> list[Span]:
    """IPv4 and IPv6 addresses that :func:`ipaddress.ip_address` accepts; value: compressed form."""
    out: list[Span] = []
    if not _DIGIT.search(text) or ("." not in text and ":" not in text):
        return out
    for pattern in (_IPV4, _IPV6):
        for m in pattern.finditer(text):
            try:
                addr = ipaddress.ip_address(m.group())
            except ValueError:
                continue
            out.append(Span(m.start(), m.end(), "IP", addr.compressed))
    return out


_MISS = object()
_VERDICTS: dict[tuple[str, str], Any] = {}  # (candidate, region) -> its number, or None: not a number


class _Matcher(phonenumbers.PhoneNumberMatcher):
    """``PhoneNumberMatcher`` at POSSIBLE leniency that parses each distinct candidate once.

    At POSSIBLE leniency the verdict on a candidate (``parse`` + ``is_possible_number``, most of
    the matcher's cost) depends on the candidate's text and the region alone, not on the text
    around it, so it is kept (up to 16,384 candidates, then started afresh); the matcher's own
    search, its tries count and every other check run as before. Numbers the text repeats (ids,
    the same customer's phone) are parsed once, and plain digit runs shorter than any possible
    number of the region (order and account numbers) are not parsed at all (:func:`_too_short`)."""

    def _parse_and_verify(self, candidate: str, offset: int) -> Any:
        if _too_short(candidate, self.preferred_region):
            return None
        key = (candidate, self.preferred_region)
        number = _VERDICTS.get(key, _MISS)
        if number is _MISS:
            match = super()._parse_and_verify(candidate, offset)
            if len(_VERDICTS) >= 16384:
                _VERDICTS.clear()
            _VERDICTS[key] = None if match is None else match.number
            return match
        return None if number is None else PhoneNumberMatch(offset, candidate, number)


_PLAIN_CANDIDATE = re.compile(r"[0-9 ().\-/]*")  # ASCII digits and separators: no plus, letter, ``#``, ``;`` or ``,``
_NOT_ASCII_DIGIT = re.compile(r"[^0-9]")
_FLOORS: dict[str, tuple[int, Any]] = {}


def _floor(region: str | None) -> tuple[int, Any]:
    """``(fewest digits of a possible number in region's calling code, its international prefix
    pattern)``, ``(0, None)`` for an unknown region (no shortcut). The lengths are the ones
    ``is_possible_number`` reads: the general description's possible and local-only lengths of the
    calling code's main region."""
    if region not in _FLOORS:
        meta = phonenumbers.PhoneMetadata.metadata_for_region(region.upper(), None) if region else None
        main = None if meta is None or not meta.country_code else phonenumbers.PhoneMetadata.\
            metadata_for_region_or_calling_code(meta.country_code, phonenumbers.region_code_for_country_code(
                meta.country_code))
        desc = None if main is None else main.general_desc
        lengths = [] if desc is None else [n for n in (*(desc.possible_length or ()),
                                                       *(desc.possible_length_local_only or ())) if n > 0]
        idd = meta.international_prefix if meta is not None else None
        _FLOORS[region] = (min(lengths), re.compile(idd) if idd else None) if lengths else (0, None)
    return _FLOORS[region]


def _too_short(candidate: str, region: str | None) -> bool:
    """Whether ``candidate`` cannot be a possible number in ``region``, decided without parsing
    (exact, not a heuristic). A candidate of ASCII digits and ``( ) . - /`` and spaces only has
    no plus sign, letters (vanity numbers), extension marks or ``tel:`` parts, so ``parse`` reads
    exactly its digits; unless they begin with the region's international prefix, the number
    gets the region's calling code, and its national significant number is at most those digits
    long: fewer than the calling code's shortest possible length is ``TOO_SHORT`` for
    ``is_possible_number`` (tests/feedback/test_redact.py compares with the plain matcher)."""
    floor, idd = _floor(region)
    if not floor or not _PLAIN_CANDIDATE.fullmatch(candidate) or not candidate.isascii():
        return False
    digits = _NOT_ASCII_DIGIT.sub("", candidate)
    return len(digits) < floor and (idd is None or idd.match(digits) is None)


def _memo_fits() -> bool:
    """Whether the installed ``phonenumbers`` has the private method :class:`_Matcher` overrides,
    with the same parameters (else the plain matcher is used)."""
    method = getattr(phonenumbers.PhoneNumberMatcher, "_parse_and_verify", None)
    try:
        return method is not None and list(inspect.signature(method).parameters) == ["self", "candidate", "offset"]
    except (TypeError, ValueError):
        return False


_MATCHER = _Matcher if _memo_fits() else phonenumbers.PhoneNumberMatcher


def phone_detector(default_region: str = "US") -> Detector:
    """A detector for phone numbers (``phonenumbers``, POSSIBLE leniency); value: E.164."""

    def find_phones(text: str) -> list[Span]:
        if not _DIGITS_7.search(text):  # no phone number has fewer than 7 digits
            return []
        matcher = _MATCHER(text, default_region, leniency=phonenumbers.Leniency.POSSIBLE)
        return [Span(m.start, m.end, "PHONE",
                     phonenumbers.format_number(m.number, phonenumbers.PhoneNumberFormat.E164)) for m in matcher]

    return find_phones


def default_detectors(default_region: str = "US") -> list[Detector]:
    """The built-in detectors in priority order."""
    return [find_emails, find_ibans, find_national_ids, find_cards, find_ips, phone_detector(default_region)]


class Redactor:
    """Replace personal data with typed, conversation-consistent placeholders.

    Args:
        detectors: span finders in priority order; default :func:`default_detectors`.
            Append an NER detector here.
        key: secret for the placeholder HMAC (bytes or str); empty = unkeyed pseudonyms.
        default_region: ISO 3166 region for phone numbers written without ``+``.
    """

    def __init__(self, detectors: list[Detector] | None = None, key: str | bytes = b"",
                 default_region: str = "US") -> None:
        self.detectors = list(detectors) if detectors is not None else default_detectors(default_region)
        self.key = key.encode() if isinstance(key, str) else key
        self._builtin_only = detectors is None

    def spans(self, text: str, only: tuple[bool, ...] | None = None) -> list[Span]:
        """Non-overlapping spans, sorted by start. Raises :class:`RedactionError` if a detector fails.

        Args:
            only: per detector, whether it can match (a pre-filter's verdict); ``None``: all can.
        """
        chosen: list[Span] = []
        for rank, detector in enumerate(self.detectors):
            if only is not None and not only[rank]:
                continue
            try:
                found = sorted(detector(text), key=lambda s: (s.start, -(s.end - s.start)))
            except Exception as exc:  # noqa: BLE001 - any detector fault means fail closed
                raise RedactionError(f"detector #{rank} ({getattr(detector, '__name__', detector)!r}) "
                                     f"failed: {type(exc).__name__}: {exc}") from exc
            for span in found:
                if not (0 <= span.start < span.end <= len(text)):
                    raise RedactionError(f"detector #{rank} returned an out-of-range span {span}")
                if all(span.end <= c.start or span.start >= c.end for c in chosen):
                    chosen.append(span)
        return sorted(chosen, key=lambda s: s.start)

    def placeholder(self, span: Span, scope: str) -> str:
        """``[KIND_xxxxxx]``: stable for the same (scope, kind, value), unrelated across scopes."""
        digest = hmac.new(self.key, f"{scope}\x00{span.kind}\x00{span.value}".encode(), hashlib.sha256)
        return f"[{span.kind}_{digest.hexdigest()[:6]}]"

    def redact(self, text: str | None, scope: str = "",
               only: tuple[bool, ...] | None = None) -> tuple[str | None, int]:
        """Redacted ``text`` and the number of spans replaced; ``None`` stays ``None``.

        Args:
            text: the text to clean.
            scope: consistency scope of placeholders (the conversation id).
            only: per built-in detector, whether its :data:`PREFILTERS` pattern matched ``text``
                (detectors that cannot match are skipped; the result is the same).
        Raises:
            RedactionError: a detector failed or an e-mail shape survived (fail closed).
        """
        if text is None:
            return None, 0
        if not isinstance(text, str):
            raise RedactionError(f"expected text, got {type(text).__name__}")
        if self._builtin_only and only is None and not _may_hold_pii(text):  # ``only``: a finer pre-filter ran
            return text, 0
        spans = self.spans(text, only if self._builtin_only else None)
        parts, pos = [], 0
        for span in spans:
            parts += [text[pos:span.start], self.placeholder(span, scope)]
            pos = span.end
        parts.append(text[pos:])
        out = "".join(parts)
        if ("@" in out or "%40" in out) and _EMAIL_CHECK.search(out):
            raise RedactionError("an e-mail address survived redaction")
        return out, len(spans)
