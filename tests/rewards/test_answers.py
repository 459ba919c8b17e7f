"""Answer verifiers: exact, normalized, regex, numeric, json and json-schema."""

from __future__ import annotations

import json

import pytest

from sdk.errors import RewardError
from sdk.rewards.answers import final_answer, parse_number, score_answer
from sdk.rewards.result import RewardStatus
from sdk.tasks.records import AnswerVerifier


@pytest.mark.parametrize("mode, expected, completion, ok", [
    ("exact", "Paris", "The capital is:\nParis", True),
    ("exact", "Paris", "paris", False),
    ("normalized", "New York City", "Answer: new   york city.", True),
    ("normalized", "New York City", "Answer: York", False),
    ("regex", r"\d{3}-\d{4}", "Final answer: 555-0101", True),
    ("regex", r"\d{3}-\d{4}", "Final answer: call 555-0101", False),
    ("numeric", "1234.5", "So the total is 1,234.50", True),
    ("numeric", "42", "<think>maybe 42</think>It is 41", False),
    ("numeric", "0.5", "\\boxed{0.5000001}", True),
])
def test_answer_modes(mode, expected, completion, ok):
    r = score_answer(AnswerVerifier(mode=mode, expected=expected), completion)
    assert r.score == (1.0 if ok else 0.0)
    assert r.status == (RewardStatus.OK if ok else RewardStatus.FAILED)


def test_json_equality_ignores_key_order_but_not_types():
    v = AnswerVerifier(mode="json", expected='{"a": 1, "b": [true, null]}')
    assert score_answer(v, 'Here:\n```json\n{"b": [true, null], "a": 1}\n```').score == 1.0
    assert score_answer(v, '{"b": [1, null], "a": 1}').score == 0.0


def test_json_schema_mode():
    schema = {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}
    v = AnswerVerifier(mode="json", expected=json.dumps(schema), json_schema=True)
    assert score_answer(v, 'Result: {"city": "Paris"}').score == 1.0
    assert score_answer(v, '{"city": 3}').score == 0.0


def test_no_answer_is_its_own_status():
    r = score_answer(AnswerVerifier(mode="json", expected="{}"), "no json here")
    assert r.status == RewardStatus.NO_CODE and r.score == 0.0
    assert score_answer(AnswerVerifier(expected="x"), "  ").status == RewardStatus.NO_CODE


@pytest.mark.parametrize("verifier", [AnswerVerifier(mode="regex", expected="(unclosed"),
                                      AnswerVerifier(mode="numeric", expected="many"),
                                      AnswerVerifier(mode="json", expected="{not json"),
                                      AnswerVerifier(mode="json", expected='{"type": 5}', json_schema=True)])
def test_broken_verifiers_raise_reward_error(verifier):
    with pytest.raises(RewardError):
        score_answer(verifier, "Answer: 1")


def test_final_answer_and_number_parsing():
    assert final_answer("work\nwork\nFinal answer: 12") == "12"
    assert parse_number("between 3 and -4.5e1") == -45.0
    assert parse_number("none") is None
