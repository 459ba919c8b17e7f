"""Answer checks for tasks judged by their final answer, not by running code.

Modes of :class:`~sdk.tasks.records.AnswerVerifier`: ``exact`` (after stripping),
``normalized`` (case, whitespace, punctuation), ``regex`` (full match), ``numeric`` (absolute
tolerance), ``json`` (equal JSON values, or valid against ``expected`` as a JSON schema).
The compared value is computed here, in the trainer's process, from the completion's text,
so a completion cannot forge the comparison (issue 6 part 3: "compare results in the parent
process").

The *answer* is taken from the completion after dropping thinking sections: an explicit
``Answer:``/``Final answer:`` line, else a ``\\boxed{}``, else the last non-empty line
(numeric: the last number in that text; json: the last fenced or bare JSON value).
"""

from __future__ import annotations

import json
import math
import re
import string
from typing import Any

from sdk.rewards.result import RewardResult, RewardStatus
from sdk.tasks.records import AnswerVerifier

_THINK = re.compile(r"<(think|thinking)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_ANSWER_LINE = re.compile(r"(?:final answer|answer)\s*[:=]\s*(.+)", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?")
_JSON_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def final_answer(completion: str) -> str:
    """The answer part of ``completion`` (see module docstring); ``""`` when empty."""
    text = _THINK.sub("", completion or "").strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in reversed(lines):
        m = _ANSWER_LINE.search(line)
        if m:
            return m.group(1).strip()
    boxed = _BOXED.findall(text)
    if boxed:
        return boxed[-1].strip()
    return lines[-1] if lines else ""


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


def score_answer(verifier: AnswerVerifier, completion: str) -> RewardResult:
    """Score ``completion`` against ``verifier``: 1.0 on a match, 0.0 otherwise.

    Returns:
        a :class:`RewardResult` with components ``match`` (0/1) and ``answer_found`` (0/1);
        status ``OK``, ``FAILED`` or ``NO_CODE`` (no answer at all).
    Raises:
        RewardError: the verifier itself is broken (bad regex, bad JSON schema).
    """
    from sdk.errors import RewardError

    if verifier.mode == "json":
        expected = _json_expected(verifier)
        ok_json, value = parse_json(_THINK.sub("", completion or ""))
        answer_found = ok_json
    else:
        answer = final_answer(completion)
        answer_found = bool(answer)
    if not answer_found:
        return RewardResult(score=0.0, components={"match": 0.0, "answer_found": 0.0},
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
    detail = "" if match else f"answer does not match ({mode})"
    return RewardResult(score=1.0 if match else 0.0, components={"match": float(match), "answer_found": 1.0},
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
