"""Answer checks for tasks judged by their final answer, not by running code.

Modes of :class:`~sdk.tasks.records.AnswerVerifier`: ``exact`` (after stripping),
``normalized`` (case, whitespace, punctuation), ``regex`` (full match), ``numeric`` (absolute
tolerance), ``json`` (equal JSON values, or valid against ``expected`` as a JSON schema).
The compared value is computed here, in the trainer's process, from the completion's text,
so a completion cannot forge the comparison (issue 6 part 3: "compare results in the parent
process").

The *answer* is taken from the completion after dropping thinking sections, by the markers
of :class:`AnswerOptions` in order (R6): a final-answer tag (``<answer>…</answer>``, the last
one), a ``\\boxed{}`` (the last, nested braces allowed), an ``Answer:``/``Final answer:`` line
(the last); with none, the last non-empty line, unless the prompt itself shows an answer
marker (``answer_fallback="auto"``): a completion that ignores the format it was asked for
(``I don't know``) then has no answer at all. Numeric: the last number in that text; json: the
tagged text, else the last fenced or bare JSON value.

The *format* metric (component ``format``) is 1 when the answer came in a marker the prompt
shows (any understood marker when the prompt shows none); it enters the score only with a
positive ``RewardConfig.format`` weight: ``(match + w * format) / (1 + w)``.
"""

from __future__ import annotations

import json
import math
import re
import string
from dataclasses import dataclass
from typing import Any

from sdk.rewards.result import RewardResult, RewardStatus
from sdk.tasks.records import AnswerVerifier

_THINK = re.compile(r"<(think|thinking)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_ANSWER_LINE = re.compile(r"(?:final answer|answer)\s*[:=]\s*(.+)", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\s*\{")
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?")
_JSON_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class AnswerOptions:
    """How a final answer is found (``RewardConfig.answer_*``; see the module docstring).

    Attributes:
        markers: subset of ``("tag", "boxed", "line")`` in order of preference.
        tags: tag names for the ``tag`` marker (``answer`` reads ``<answer>…</answer>``).
        fallback: ``auto``, ``last_line`` or ``none``.
        format_weight: weight of the format metric in the score (0: a logged metric only).
    """

    markers: tuple[str, ...] = ("tag", "boxed", "line")
    tags: tuple[str, ...] = ("answer", "final_answer")
    fallback: str = "auto"
    format_weight: float = 0.0

    @classmethod
    def of(cls, cfg: Any) -> AnswerOptions:
        """The options of a :class:`~sdk.rewards.config.RewardConfig`."""
        return cls(markers=tuple(cfg.answer_markers), tags=tuple(cfg.answer_tags), fallback=cfg.answer_fallback,
                   format_weight=float(cfg.format))


def _tag_values(text: str, tags: tuple[str, ...]) -> list[tuple[int, str]]:
    out = []
    for tag in tags:
        pat = re.compile(rf"<{re.escape(tag)}\s*>(.*?)</{re.escape(tag)}\s*>", re.DOTALL | re.IGNORECASE)
        out += [(m.start(), m.group(1).strip()) for m in pat.finditer(text)]
    return sorted(out)


def _boxed_values(text: str) -> list[str]:
    """Contents of every ``\\boxed{...}``, braces matched (``\\boxed{\\frac{1}{2}}``)."""
    out = []
    for m in _BOXED.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            out.append(text[m.end():i - 1].strip())
    return out


def _found(text: str, marker: str, options: AnswerOptions) -> str:
    """The last non-empty answer ``marker`` gives in ``text``, or ``""``."""
    if marker == "tag":
        values = [v for _, v in _tag_values(text, options.tags) if v]
    elif marker == "boxed":
        values = [v for v in _boxed_values(text) if v]
    else:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        values = [m.group(1).strip() for m in map(_ANSWER_LINE.search, lines) if m and m.group(1).strip()]
    return values[-1] if values else ""


def prompt_markers(prompt_text: str, options: AnswerOptions | None = None) -> tuple[str, ...]:
    """The answer markers the prompt shows (an ``<answer>`` example, ``\\boxed``, ``Answer:``)."""
    options = options or AnswerOptions()
    shown = {"tag": any(re.search(rf"<{re.escape(t)}\s*>", prompt_text, re.IGNORECASE) for t in options.tags),
             "boxed": bool(_BOXED.search(prompt_text)),
             "line": bool(re.search(r"(?:final answer|answer)\s*:", prompt_text, re.IGNORECASE))}
    return tuple(m for m in options.markers if shown[m])


def find_answer(completion: str, options: AnswerOptions | None = None, prompt_text: str = "") -> tuple[str, str | None]:
    """``(answer, marker)``: the answer part of ``completion`` and the marker it came in
    (``None`` for the last-line fallback); ``("", None)`` when there is no answer."""
    options = options or AnswerOptions()
    text = _THINK.sub("", completion or "").strip()
    for marker in options.markers:
        value = _found(text, marker, options)
        if value:
            return value, marker
    fallback = options.fallback
    if fallback == "none" or (fallback == "auto" and prompt_markers(prompt_text, options)):
        return "", None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return (lines[-1] if lines else ""), None


def final_answer(completion: str, options: AnswerOptions | None = None, prompt_text: str = "") -> str:
    """The answer part of ``completion`` (see module docstring); ``""`` when there is none."""
    return find_answer(completion, options, prompt_text)[0]


def normalize(text: str) -> str:
    """Lower case, punctuation removed, whitespace collapsed (SQuAD-style normalisation)."""
    text = text.lower().translate(str.maketrans("", "", string.punctuation))
    return " ".join(text.split())


def parse_number(text: str) -> float | None:
    """The last number in ``text`` (thousands commas and a trailing % allowed), or None."""
    found = [m.group(0) for m in _NUMBER.finditer(text) if re.search(r"\d", m.group(0))]
    if not found:
        return None
    try:
        value = float(found[-1].replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_json(text: str) -> tuple[bool, Any]:
    """``(True, value)`` for the last fenced JSON block, else the whole text, else the text
    from its first ``{``/``[``; ``(False, None)`` when nothing parses."""
    candidates = [m.group(1) for m in _JSON_FENCE.finditer(text)][::-1] + [text]
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if starts:
        candidates.append(text[min(starts):])
    for cand in candidates:
        try:
            return True, json.loads(cand.strip())
        except (json.JSONDecodeError, ValueError):
            continue
    return False, None


def score_answer(verifier: AnswerVerifier, completion: str, options: AnswerOptions | None = None,
                 prompt_text: str = "") -> RewardResult:
    """Score ``completion`` against ``verifier``: 1.0 on a match, 0.0 otherwise (with a positive
    ``options.format_weight``: ``(match + w * format) / (1 + w)``).

    Args:
        verifier: the task's answer verifier.
        completion: the model's text.
        options: how the answer is found (default :class:`AnswerOptions`).
        prompt_text: the task's prompt, read only for the answer markers it shows.
    Returns:
        a :class:`RewardResult` with components ``match``, ``answer_found`` and ``format``
        (0/1 each); status ``OK``, ``FAILED`` or ``NO_CODE`` (no answer at all).
    Raises:
        RewardError: the verifier itself is broken (bad regex, bad JSON schema).
    """
    from sdk.errors import RewardError

    options = options or AnswerOptions()
    answer, marker = find_answer(completion, options, prompt_text)
    shown = prompt_markers(prompt_text, options)
    fmt = float(marker is not None and (not shown or marker in shown))
    if verifier.mode == "json":
        expected = _json_expected(verifier)
        ok_json, value = parse_json(answer if marker else _THINK.sub("", completion or ""))
        bare_allowed = options.fallback == "last_line" or (options.fallback == "auto" and not shown)
        answer_found = ok_json and (marker is not None or bare_allowed)
    else:
        answer_found = bool(answer)
    if not answer_found:
        return RewardResult(score=0.0, components={"match": 0.0, "answer_found": 0.0, "format": 0.0},
                            status=RewardStatus.NO_CODE, detail="no answer found in the completion")
    mode = verifier.mode
    if mode == "exact":
        match = answer.strip() == verifier.expected.strip()
    elif mode == "normalized":
        match = normalize(answer) == normalize(verifier.expected)
    elif mode == "regex":
        try:
            match = re.fullmatch(verifier.expected, answer.strip(), re.DOTALL) is not None
        except re.error as exc:
            raise RewardError(f"answer regex {verifier.expected!r} is invalid: {exc}",
                              "fix the task's `expected` pattern (Python `re` syntax)") from exc
    elif mode == "numeric":
        got, want = parse_number(answer), parse_number(verifier.expected)
        if want is None:
            raise RewardError(f"numeric answer verifier has non-numeric expected {verifier.expected!r}",
                              "set `expected` to a number, e.g. '42' or '3.5'")
        match = got is not None and abs(got - want) <= verifier.tolerance
    else:
        match = _json_match(verifier, expected, value)
    w = options.format_weight
    score = (float(match) + w * fmt) / (1.0 + w)
    detail = "" if match else f"answer does not match ({mode})"
    return RewardResult(score=score, components={"match": float(match), "answer_found": 1.0, "format": fmt},
                        status=RewardStatus.OK if match else RewardStatus.FAILED, detail=detail)


def _json_expected(verifier: AnswerVerifier) -> Any:
    """The expected JSON value (or schema, checked), before any completion is read."""
    from sdk.errors import RewardError

    try:
        expected = json.loads(verifier.expected)
    except json.JSONDecodeError as exc:
        raise RewardError(f"json answer verifier's `expected` is not JSON: {exc.msg}",
                          "store the expected value (or the schema) as a JSON string") from exc
    if verifier.json_schema:
        import jsonschema

        try:
            jsonschema.validators.validator_for(expected).check_schema(expected)
        except (jsonschema.SchemaError, TypeError) as exc:
            raise RewardError(f"json answer verifier's schema is invalid: {getattr(exc, 'message', exc)}",
                              "fix the JSON schema in `expected`") from exc
    return expected


def _json_match(verifier: AnswerVerifier, expected: Any, value: Any) -> bool:
    if not verifier.json_schema:
        return value == expected and _same_types(value, expected)
    import jsonschema

    return jsonschema.validators.validator_for(expected)(expected).is_valid(value)


def _same_types(a: Any, b: Any) -> bool:
    """JSON equality without Python's ``True == 1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b)
    if isinstance(a, dict):
        return all(_same_types(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return all(_same_types(x, y) for x, y in zip(a, b))
    return True
