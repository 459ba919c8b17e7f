"""Feedback rows → training records: SFT examples, preference pairs, RL tasks (issue 5, part 4).

One parsed, redacted feedback row becomes records by these rules (peers: TRL's DPO data
format — prompt / chosen / rejected; KTO-style unpaired labels are counted, not yet emitted):

- a correction → an :class:`SftExample` whose target is the correction, and a
  :class:`PreferencePair` with the correction chosen and the original response rejected;
- a good rating (raw rating ``>= good_threshold``) and no correction → an :class:`SftExample`
  of the response;
- a rated failure or a correction, when the row carries ``tests`` or an ``expected`` answer → a
  :class:`Task` (unit-test or answer verifier; the correction, if any, is its reference);
- otherwise counted: ``unlabelled`` (no rating, no correction) or ``negative_unused``.

Quarantine entries carry the reason and only the row's ids, never its text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterator, Union

from connectors.feedback_tables.database import Database
from connectors.feedback_tables.mapping import RowError
from sdk.sources import PreferencePair, SftExample
from sdk.tasks.records import AnswerVerifier, Message, Quarantined, Source, Task, UnitTestVerifier

Record = Union[SftExample, PreferencePair, Task, Quarantined]


@dataclass
class Row:
    """One feedback row after mapping, value parsing and redaction (internal)."""

    values: dict[str, Any]
    rating: float | None  # normalised to [0, 1]
    raw_rating: float | None  # in scale units
    created_at: datetime | None
    seq: int


class RecordBuilder:
    """Mixin of :class:`connectors.feedback_tables.source.SqlFeedbackSource`: builds records from rows.

    Expects ``self.options``, ``self.domain``, ``self.name``, ``self.counts`` and ``self._threshold``.
    """

    options: Any
    domain: str
    name: str
    counts: dict[str, int]
    _threshold: float

    def _build(self, row: Row) -> Iterator[Record]:
        since = self.options.since
        if since is not None and (row.created_at is None or row.created_at < since):
            # a row without a timestamp cannot be shown to be recent: left out, counted apart
            self.counts["before_since" if row.created_at is not None else "no_timestamp_with_since"] += 1
            return
        v = row.values
        source = self._source(v)
        try:
            prompt = self._prompt(v)
        except RowError as exc:
            self.counts["quarantined"] += 1
            yield self._quarantine(str(exc), {"locator": source.locator})
            return
        correction = v.get("correction") if isinstance(v.get("correction"), str) and v["correction"].strip() else None
        good = row.raw_rating is not None and row.raw_rating >= self._threshold
        if correction:
            self.counts["sft_examples"] += 1
            yield SftExample(messages=prompt + (Message(role="assistant", content=correction),),
                             source=source, domain=self.domain)
            if correction.strip() != str(v["response"]).strip():
                self.counts["preference_pairs"] += 1
                yield PreferencePair(prompt=prompt, chosen=correction, rejected=str(v["response"]),
                                     source=source, domain=self.domain)
        elif good:
            self.counts["sft_examples"] += 1
            yield SftExample(messages=prompt + (Message(role="assistant", content=str(v["response"])),),
                             source=source, domain=self.domain)
        failed = row.raw_rating is not None and not good
        task = self._task(v, prompt, correction, source, row) if (failed or correction) else None
        if task is not None:
            yield task
        elif row.rating is None and not correction:
            self.counts["unlabelled"] += 1
        elif failed and not correction:
            self.counts["negative_unused"] += 1

    def _prompt(self, v: dict[str, Any]) -> tuple[Message, ...]:
        msgs: list[Message] = []
        if isinstance(v.get("system_prompt"), str) and v["system_prompt"].strip():
            msgs.append(Message(role="system", content=v["system_prompt"]))
        prompt = v["prompt"]
        if isinstance(prompt, list):
            try:
                msgs += [Message(role=m.get("role"), content=m.get("content")) for m in prompt]
            except Exception as exc:  # noqa: BLE001 - pydantic error on a bad role
                raise RowError(f"prompt messages are malformed: {str(exc).splitlines()[0]}") from None
            if not msgs or msgs[-1].role == "assistant":
                raise RowError("prompt messages must end with a user (or tool) turn")
        else:
            msgs.append(Message(role="user", content=str(prompt)))
        return tuple(self._cut(msgs))

    def _cut(self, msgs: list[Message]) -> list[Message]:
        """Drop the oldest turns past ``max_prompt_chars``, keeping system messages and the rated
        (last) turn; a prompt still too long after that is kept whole and counted."""
        limit = self.options.max_prompt_chars
        if limit is None or sum(len(m.content) for m in msgs) <= limit:
            return msgs
        self.counts["conversations_cut"] = self.counts.get("conversations_cut", 0) + 1
        keep = list(msgs)

        def first_turn() -> int | None:
            return next((i for i, m in enumerate(keep[:-1]) if m.role != "system"), None)

        while sum(len(m.content) for m in keep) > limit and first_turn() is not None:
            del keep[first_turn()]  # type: ignore[arg-type]
        while (i := first_turn()) is not None and keep[i].role != "user":
            del keep[i]  # the kept history starts with a user turn
        if sum(len(m.content) for m in keep) > limit:
            self.counts["prompts_over_limit"] = self.counts.get("prompts_over_limit", 0) + 1
        return keep

    def _task(self, v: dict[str, Any], prompt: tuple[Message, ...], correction: str | None,
              source: Source, row: Row) -> Task | Quarantined | None:
        tests, expected = v.get("tests"), v.get("expected")
        if not (isinstance(tests, str) and tests.strip()) and not (isinstance(expected, str) and expected.strip()):
            return None
        try:
            if isinstance(tests, str) and tests.strip():
                verifier: Any = UnitTestVerifier(tests={"test_feedback.py": tests}, framework=self.options.test_framework)
            else:
                verifier = AnswerVerifier(mode=self.options.answer_mode, expected=expected)
            task = Task(domain=self.domain, prompt=prompt, verifier=verifier, reference=correction, source=source,
                        metadata={"rating": row.rating, "rejected": str(v["response"]),
                                  "created_at": row.created_at.isoformat() if row.created_at else None})
        except Exception as exc:  # noqa: BLE001 - pydantic validation of one row
            self.counts["quarantined"] += 1
            return self._quarantine(f"task cannot be built: {str(exc).splitlines()[0]}", {"locator": source.locator})
        self.counts["tasks"] += 1
        return task

    def _source(self, v: dict[str, Any]) -> Source:
        """Provenance: row and message ids as stored; the user id only as a keyed pseudonym
        (BLAKE2b MAC; user ids are often e-mail addresses, and provenance travels with the data)."""
        parts = [f"{f}={v[f]}" for f in ("row_id", "message_id") if v.get(f) is not None]
        if v.get("user_id") is not None:
            parts.append("user=" + self._pseudonym(str(v["user_id"])))
        return Source(connector=self.name, uri=self._uri(), locator=";".join(parts))

    def _pseudonym(self, user: str) -> str:
        """The keyed BLAKE2b pseudonym of a user id (memoised: users rate many rows)."""
        cache = self.__dict__.setdefault("_pseudonyms", {})
        found = cache.get(user)
        if found is None:
            key = self._redactor.key[:64] if getattr(self, "_redactor", None) is not None else b""
            found = hashlib.blake2b(user.encode(), key=key, digest_size=6).hexdigest()
            if len(cache) < 100_000:
                cache[user] = found
        return found

    def _uri(self) -> str:
        """The password-free URL of the table (computed once per source)."""
        uri = self.__dict__.get("_uri_cache")
        if uri is None:
            uri = self.__dict__["_uri_cache"] = Database.safe_url(self.options.url, self.options.table)
        return uri

    def _quarantine(self, reason: str, ids: dict[str, Any]) -> Quarantined:
        raw = {k: (v if isinstance(v, (int, float, str, type(None))) else str(v)) for k, v in ids.items()}
        # the row's ids as its locator, so `tasks build`'s "e.g." lines say which row it is
        locator = str(raw.get("locator") or ";".join(f"{k}={v}" for k, v in raw.items() if v is not None))
        return Quarantined(reason=reason, raw=raw or None, source=Source(connector=self.name, uri=self._uri(),
                                                                         locator=locator))
