"""The columnar lane of fast ingest (issue 19): one Arrow chunk of feedback rows → JSON lines (or
records), byte for byte what the row path gives, with per-row Python only where it is needed.

For a chunk (rows of whole dedup groups, in the database's key order):

1. **Values, columnar** (:mod:`connectors.feedback_tables.columnar`): group boundaries from the
   keys, ratings on their scale, timestamps to UTC microseconds, the ``str.strip()`` checks.
2. **Redaction**: the RE2 pre-filter picks candidate texts; only those meet the exact validators
   (libphonenumber, Luhn, mod-97: :meth:`feedback.redact.Redactor.redact`), one call per text.
3. **Unsure rows go to the row path, with their group**: a missing prompt, an off-scale rating, an
   unusual timestamp, a failed redaction, a row that may become a task, a prompt over
   ``max_prompt_chars``... The row path (:meth:`SqlFeedbackSource._parse_all` and
   ``records_from_rows``) quarantines or builds those with its own reasons and counts.
4. **Dedup, columnar**: per group, the latest row by (``created_at``, ``row_id`` or read index),
   the first in read order on ties, as ``max`` picks it.
5. **Records as JSON text**, built with Arrow string kernels in pydantic's field order and
   escaping; both lanes' outputs are merged back in group order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connectors.feedback_tables import columnar as col
from connectors.feedback_tables.mapping import TEXT_FIELDS
from feedback.redact import PREFILTERS, RedactionError
from sdk.sources import PreferencePair, SftExample

Unsupported = col.Unsupported
_ASCII_PREFILTERS = tuple(p.replace(r"\P{Nd}", "[^0-9]").replace(r"\p{Nd}", "[0-9]") for p in PREFILTERS)
""":data:`feedback.redact.PREFILTERS` for texts of ASCII characters only (same matches there)."""


def _any(patterns: tuple[str, ...]) -> str:
    """One pattern matching where any of ``patterns`` does. A text no detector's pre-filter matches
    comes out of redaction unchanged (the e-mail post-check needs an ``@`` or ``%40``, which the
    first pattern would have matched)."""
    return "|".join(f"(?:{p})" for p in patterns)


def _cat(*parts: Any) -> pa.Array:
    """The parts (arrays and constant texts) joined per row; adjacent constants merged first (each
    part costs a gather per row)."""
    merged: list[Any] = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        else:
            merged.append(part)
    return pc.binary_join_element_wise(*merged, "")


def redact_texts(redactor: Any, work: list[tuple[list, list, list]]) -> list[list]:
    """Per ``(texts, scopes, flags)`` of a job of :meth:`ChunkLane.begin` (its last three items),
    per text: ``(redacted text, spans)``, or ``None`` where the redactor failed (fail closed: the
    row path quarantines the row). The same (text, scope) is redacted once (double clicks repeat)."""
    seen: dict[tuple[str, str], Any] = {}
    results = []
    for texts, scopes, flags in work:
        done = []
        for text, scope, only in zip(texts, scopes, flags):
            if (text, scope) not in seen:
                try:
                    seen[text, scope] = redactor.redact(text, scope, only=only)
                except RedactionError:
                    seen[text, scope] = None
            done.append(seen[text, scope])
        results.append(done)
    return results


def _joined(lines: pa.Array) -> list[str]:
    """``[all lines]`` as one string (``[]`` for none) for lines that each end in a newline: the
    bytes between the array's first and last offsets, decoded once (no join, no Python string per
    line)."""
    if not len(lines):
        return []
    if lines.null_count or lines.type not in (pa.string(), pa.large_string()):
        raise ValueError("JSON lines hold no NULL")
    width = np.int64 if lines.type == pa.large_string() else np.int32
    offsets = np.frombuffer(lines.buffers()[1], dtype=width)
    start, end = int(offsets[lines.offset]), int(offsets[lines.offset + len(lines)])
    return [str(memoryview(lines.buffers()[2])[start:end], "utf-8")]


class ChunkLane:
    """One chunk through the columnar lane: ``ChunkLane(source, table, start, key_fields).run(as_json)``.

    Args:
        source: the :class:`SqlFeedbackSource` (its mapping, options, redactor and counts).
        table: the chunk (whole dedup groups); ``start``: read index of its first row.
    Raises:
        Unsupported: a column type the columnar lane does not handle (the caller uses the row path).
    """

    def __init__(self, source: Any, table: pa.Table, start: int, key_fields: list[str]) -> None:
        self.src, self.table, self.start, self.key_fields = source, table, start, key_fields
        self.n = n = len(table)
        self.pos = np.arange(n, dtype=np.int64)
        cols = source._cols
        self.raw = {f: col.column(table, cols.get(f)) for f in ("conversation_id", "message_id", "user_id", "row_id",
                                                                 "rating", "created_at", *TEXT_FIELDS)}
        for f in ("conversation_id", "message_id", "user_id", "row_id", *TEXT_FIELDS):
            a = self.raw[f]
            if a is not None and not (col.is_text(a.type) or (f not in TEXT_FIELDS and pa.types.is_integer(a.type))):
                raise Unsupported(f"{f} column of type {a.type}")
        self.gid = col.group_ids([col.key_strings(col.column(table, cols[f])) for f in key_fields], n)
        self.unsure = np.zeros(n, dtype=bool)

    def run(self, as_json: bool, joined: bool = False) -> list:
        """Records of the chunk (JSON lines if ``as_json``) in the row path's order; adds the
        chunk's counts to ``source.counts``. ``joined`` (with ``as_json``): one string of all the
        lines, each ending in a newline (``[]`` when there is none), joined by Arrow when no row of
        the chunk took the row path."""
        jobs = self.begin()
        return self.finish(jobs, redact_texts(self.src._redactor, [job[2:] for job in jobs]), as_json, joined)

    def begin(self) -> list[tuple[str, np.ndarray, list, list, list]]:
        """First half of :meth:`run`: values parsed, and the redaction jobs (for :func:`redact_texts`,
        here or in another process, while the next chunk starts)."""
        self._parse()
        return self._candidates()

    def finish(self, jobs: list, results: list[list], as_json: bool, joined: bool = False) -> list:
        """Second half of :meth:`run`, with the results of :meth:`begin`'s jobs."""
        self._apply(jobs, results)
        self._check_lengths()
        bad = np.isin(self.gid, np.unique(self.gid[self.unsure]))
        block = as_json and joined  # lines made with their newline, the block decoded from Arrow's buffer
        keys, lines = self._simple(np.flatnonzero(~bad), as_json, block)
        more_keys, more = self._row_path(np.flatnonzero(bad), as_json)
        if as_json and not more:
            return _joined(lines) if joined else lines.to_pylist()
        items = lines.to_pylist() if as_json else lines
        if more:
            keys = np.concatenate([keys, more_keys]) if len(keys) else more_keys
            items += [line + "\n" for line in more] if block else more
            order = np.lexsort((keys[:, 1], keys[:, 0]))
            items = [items[i] for i in order]
        return (["".join(items)] if items else []) if block else items

    # -- values ---------------------------------------------------------------------------

    def _parse(self) -> None:
        src, n, raw = self.src, self.n, self.raw
        self.rating, self.has_rating, unsure = col.ratings(raw["rating"], src.options.rating, n)
        self.us, self.has_ts, self.naive, ts_unsure = col.instants(raw["created_at"], src._zone, n)
        self.unsure |= unsure | ts_unsure
        self.trim: dict[str, pa.Array] = {}
        self.blank: dict[str, np.ndarray] = {}
        for f in TEXT_FIELDS:
            if raw[f] is None:
                continue
            self.trim[f], self.blank[f], edge = col.strip(raw[f])
            self.unsure |= edge | col.has_control(self.trim[f])  # the row path removes them (clean_text)
            if f in ("prompt", "response"):
                self.unsure |= self.blank[f]  # quarantined ("missing prompt")
            elif f in ("tests", "expected"):
                self.unsure |= ~self.blank[f]  # may become a task
        row_id = raw["row_id"]
        self.seq = self.pos + self.start
        if row_id is not None and pa.types.is_integer(row_id.type):
            ids = np.asarray(pc.fill_null(row_id, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
            self.seq = np.where(col.np_bool(pc.is_valid(row_id)), ids, self.seq)

    def _scopes(self, idx: np.ndarray) -> list[str]:
        """``str(conversation_id or message_id or seq)`` of rows ``idx`` (the redaction scope)."""
        out = pa.array(self.seq[idx].astype(str).tolist(), pa.string())
        for f in ("message_id", "conversation_id"):
            a = self.raw[f]
            if a is not None:
                a = a.take(pa.array(idx))
                out = pc.if_else(col.truthy(a), col.as_text(a.cast(pa.string())), out)
        return out.to_pylist()

    def _candidates(self) -> list[tuple[str, np.ndarray, list, list, list]]:
        """The texts the redaction pre-filter flags, per text field: ``(field, rows, texts, scopes,
        per-detector flags)`` (``self.text`` holds the fields' texts, ``self.spans`` zeros)."""
        self.text = {f: col.as_text(self.raw[f]) for f in TEXT_FIELDS if self.raw[f] is not None}
        self.spans = np.zeros(self.n, dtype=np.int64)
        if self.src._redactor is None:
            return []
        jobs = []
        for f, arr in self.text.items():
            # one pass with every detector's pattern; the few texts it hits get the per-detector flags
            ascii_only = pc.all(pc.string_is_ascii(arr)).as_py() is not False  # \p{Nd} is [0-9] there, faster in RE2
            patterns = _ASCII_PREFILTERS if ascii_only else PREFILTERS
            idx = np.flatnonzero(col.np_bool(pc.match_substring_regex(arr, _any(patterns))) & ~self.unsure)
            if len(idx):
                texts = arr.take(pa.array(idx))
                flags = np.stack([col.np_bool(pc.match_substring_regex(texts, p)) for p in patterns], axis=1)
                jobs.append((f, idx, texts.to_pylist(), self._scopes(idx), list(map(tuple, flags.tolist()))))
        return jobs

    def _apply(self, jobs: list[tuple[str, np.ndarray, list, list, list]], results: list[list]) -> None:
        """Put the redacted texts of ``jobs`` (:func:`redact_texts`' ``results``) in place in
        ``self.text`` and count spans per row (``self.spans``); a text that failed makes its row
        unsure (the row path quarantines it, with its reason)."""
        for (f, idx, texts, _, _), done in zip(jobs, results):
            new = []
            for i, text, result in zip(idx, texts, done):
                if result is None:
                    self.unsure[i] = True
                    result = (text, 0)
                new.append(result[0])
                self.spans[i] += result[1]
            mask = np.zeros(self.n, dtype=bool)
            mask[idx] = True
            self.text[f] = pc.replace_with_mask(self.text[f], pa.array(mask), pa.array(new, pa.string()))

    def _check_lengths(self) -> None:
        """Prompts over ``max_prompt_chars`` (after redaction) are cut by the row path."""
        limit = self.src.options.max_prompt_chars
        if limit is None:
            return
        total = np.asarray(pc.fill_null(pc.utf8_length(self.text["prompt"]), 0).to_numpy(zero_copy_only=False))
        if "system_prompt" in self.text:
            sys_len = pc.fill_null(pc.utf8_length(self.text["system_prompt"]), 0).to_numpy(zero_copy_only=False)
            total = total + np.where(self.blank["system_prompt"], 0, sys_len)
        self.unsure |= total > limit

    # -- the columnar rows ----------------------------------------------------------------

    def _winners(self, idx: np.ndarray) -> np.ndarray:
        """The row kept per group among rows ``idx``: latest (timestamp or none, seq), first on ties."""
        created = np.where(self.has_ts, self.us, col.MIN_US)[idx]
        order = np.lexsort((idx, ~self.seq[idx], ~created, self.gid[idx]))
        g = self.gid[idx][order]
        first = np.ones(len(g), dtype=bool)
        first[1:] = g[1:] != g[:-1]
        return idx[order[first]]

    def _simple(self, idx: np.ndarray, as_json: bool, newline: bool = False) -> tuple[np.ndarray, Any]:
        counts = self.src.counts
        counts["rows_read"] += len(idx)
        counts["naive_timestamps"] += int(self.naive[idx].sum())
        counts["redactions"] += int(self.spans[idx].sum())
        if not len(idx):
            return np.zeros((0, 2), dtype=np.int64), pa.array([], pa.string()) if as_json else []
        win = self._winners(idx)
        counts["duplicates_dropped"] += len(idx) - len(win)
        since = self.src.options.since
        if since is not None:
            no_ts = ~self.has_ts[win]
            before = self.has_ts[win] & (self.us[win] < col.to_us(since))
            counts["no_timestamp_with_since"] += int(no_ts.sum())
            counts["before_since"] += int(before.sum())
            win = win[~no_ts & ~before]
        return self._records(win, as_json, newline)

    def _records(self, win: np.ndarray, as_json: bool, newline: bool = False) -> tuple[np.ndarray, Any]:
        """SFT examples and preference pairs of the winning rows ``win`` (JSON lines as one Arrow array
        if ``as_json``, each ending in a newline if ``newline``), in order, with their sort keys
        (group, 0 for the example or 1 for the pair). Pairs are built on their rows only."""
        counts, take = self.src.counts, pa.array(win)
        corr = ~self.blank["correction"][win] if "correction" in self.text else np.zeros(len(win), dtype=bool)
        good = self.has_rating[win] & (self.rating[win] >= self.src._threshold)
        failed = self.has_rating[win] & ~good
        sft = corr | good
        pair = corr & col.np_bool(pc.not_equal(self.trim["correction"].take(take), self.trim["response"].take(take))) \
            if "correction" in self.text else corr
        counts["sft_examples"] += int(sft.sum())
        counts["preference_pairs"] += int(pair.sum())
        counts["unlabelled"] += int((~self.has_rating[win] & ~corr).sum())
        counts["negative_unused"] += int((failed & ~corr).sum())
        win, corr, pair, sft = win[sft], corr[sft], pair[sft], sft[sft]  # only rows that give a record
        if not len(win):
            return np.zeros((0, 2), dtype=np.int64), pa.array([], pa.string()) if as_json else []
        take = pa.array(win)
        esc = {f: col.json_strings(a.take(take)) for f, a in self.text.items() if f in
               ("prompt", "response", "correction", "system_prompt")}
        prompt, tail, end = self._prompt_json(win, esc), self._source_json(win), "\n" if newline else ""
        lines_sft = _cat('{"messages":[', *prompt, ',{"role":"assistant","content":"',
                         pc.if_else(corr, esc.get("correction", esc["response"]), esc["response"]) if corr.any()
                         else esc["response"], '"}]', *tail, ',"weight":1.0}' + end)
        both = np.stack([sft, pair], axis=1).ravel()  # per row its SFT example, then its pair if any
        keys = np.stack([np.repeat(self.gid[win], 2), np.tile([0, 1], len(win))], axis=1)[both]
        lines = lines_sft
        if pair.any():
            on = pa.array(pair)
            kept = [p if isinstance(p, str) else p.filter(on) for p in (*prompt, *tail)]
            lines_pair = _cat('{"prompt":[', *kept[:len(prompt)], '],"chosen":"', esc["correction"].filter(on),
                              '","rejected":"', esc["response"].filter(on), '"', *kept[len(prompt):], "}" + end)
            n = len(win)  # the k-th pair is line n + k of the concatenation
            lines = pa.concat_arrays([lines_sft, lines_pair]).take(pa.array(np.stack(
                [np.arange(n), n + np.cumsum(pair) - 1], axis=1).ravel()[both]))
        if as_json:
            return keys, lines
        return keys, [(PreferencePair if sub else SftExample).model_validate_json(t)
                      for t, sub in zip(lines.to_pylist(), keys[:, 1].tolist())]

    def _prompt_json(self, win: np.ndarray, esc: dict[str, pa.Array]) -> list[Any]:
        """The prompt messages' JSON of the winning rows, as parts for :func:`_cat`."""
        user = ['{"role":"user","content":"', esc["prompt"], '"}']
        if "system_prompt" not in esc:
            return user
        system = _cat('{"role":"system","content":"', esc["system_prompt"], '"},')
        return [pc.if_else(pa.array(~self.blank["system_prompt"][win]), system, ""), *user]

    def _source_json(self, win: np.ndarray) -> list[Any]:
        """``,"source":{...},"domain":...`` of the winning rows (parts for :func:`_cat`): ids as stored,
        the user pseudonymised.
        When no part is NULL, one concatenation with each part escaped alone (JSON escapes are per
        character), else the parts joined with NULLs skipped, then escaped."""
        src, take = self.src, pa.array(win)
        labels, values = [], []
        for f, label in (("row_id", "row_id="), ("message_id", "message_id=")):
            if self.raw[f] is not None:
                labels.append(label)
                values.append(self.raw[f].take(take).cast(pa.string()))
        user = self.raw["user_id"]
        if user is not None:
            users = user.take(take).cast(pa.string())
            known, names = self._pseudonyms(users)
            labels.append("user=")
            values.append(names.take(pc.index_in(users, value_set=known)))
        head = (f',"source":{{"connector":{col.json_literal(src.name)},"uri":{col.json_literal(src._uri())},'
                '"locator":"')
        tail = f'","commit":""}},"domain":{col.json_literal(src.domain)}'
        if values and not any(v.null_count for v in values):
            parts: list[Any] = [head]
            for k, (label, value) in enumerate(zip(labels, values)):
                parts += [(";" if k else "") + label, col.json_strings(value)]
            return [*parts, tail]
        parts = [_cat(label, value) for label, value in zip(labels, values)]
        locator = pc.binary_join_element_wise(*parts, ";", null_handling="skip") if parts else \
            pa.array([""] * len(win), pa.string())
        return [head, col.json_strings(pc.fill_null(locator, "")), tail]

    def _pseudonyms(self, users: pa.Array) -> tuple[pa.Array, pa.Array]:
        """``(user ids, their pseudonyms)`` covering ``users``: kept on the source as two Arrow
        arrays across chunks (users rate many rows), so only new users are hashed in Python."""
        known, names = self.src.__dict__.get("_pseudonym_arrays") or (pa.array([], pa.string()),) * 2
        distinct = pc.unique(pc.drop_null(users))
        new = pc.filter(distinct, pc.invert(pc.is_in(distinct, value_set=known)))
        if len(new):
            if len(known) > 200_000:  # bounded: start over
                known, names = pa.array([], pa.string()), pa.array([], pa.string())
                new = distinct
            known = pa.concat_arrays([known, new])
            names = pa.concat_arrays([names, pa.array([self.src._pseudonym(u) for u in new.to_pylist()], pa.string())])
            self.src.__dict__["_pseudonym_arrays"] = (known, names)
        return known, names

    # -- the row path ---------------------------------------------------------------------

    def _row_path(self, idx: np.ndarray, as_json: bool) -> tuple[np.ndarray, list]:
        """Records of the unsure groups (rows ``idx``), built by the source's row path."""
        if not len(idx):
            return np.zeros((0, 2), dtype=np.int64), []
        src = self.src
        rows = self.table.take(pa.array(idx)).to_pylist()
        gids = self.gid[idx]
        cuts = np.flatnonzero(np.diff(gids)) + 1
        keys, items = [], []
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(idx)]):
            parsed = src._parse_all(rows[lo:hi], self.key_fields, indexes=(idx[lo:hi] + self.start).tolist())
            records = list(src.records_from_rows(parsed, grouped=True))
            items += [r.model_dump_json() for r in records] if as_json else records
            keys += [(gids[lo], k) for k in range(len(records))]
        return np.array(keys, dtype=np.int64).reshape(-1, 2), items


_OWN = ("_parse", "_extract", "_redact", "_parse_all", "records_from_rows", "_build", "_prompt", "_cut", "_source",
        "_task", "_pseudonym", "_uri", "_quarantine", "_key_fields")


def fits(source: Any, base: type) -> bool:
    """Whether the columnar lane reproduces ``source``'s row path: no JSON paths, the built-in
    redactor (or none, not patched), and none of the row path's methods of ``base`` (the
    ``SqlFeedbackSource`` class) overridden by a subclass."""
    if source.options.json_paths:
        return False
    r = source._redactor
    if r is not None and not (r._builtin_only and "redact" not in vars(r)):
        return False
    return all(getattr(type(source), m) is getattr(base, m) for m in _OWN)
