"""Aggregation: None masking (R1), exceptions cost one sample (R1), equal groups (R4)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from sdk.errors import RewardError
from sdk.rewards.aggregate import call_safely, check_rewards, combine, group_advantages


def test_r4_equal_groups_get_exactly_zero_and_are_counted():
    rewards = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0.35, 0.35, 0.35, 0.95], dtype=np.float32)
    adv = group_advantages(list(rewards), group_size=4)
    assert adv.values.dtype == np.float32
    assert np.all(adv.values[:8] == 0.0)  # exactly, not approximately
    assert adv.zero_std_groups == 2 and adv.groups == 3
    assert np.all(np.isfinite(adv.values))
    # hand-computed: mean 0.5, unbiased std 0.3 -> (-0.15/0.3, 0.45/0.3) = (-0.5, 1.5)
    assert adv.values[8:] == pytest.approx([-0.5, -0.5, -0.5, 1.5], abs=1e-4)


def test_unscaled_advantages_are_mean_centred():
    adv = group_advantages([1.0, 0.0, 0.5, 0.5], group_size=2, scale=False)
    assert adv.values.tolist() == [0.5, -0.5, 0.0, 0.0]
    assert adv.zero_std_groups == 1


def test_masked_samples_get_zero_and_leave_group_statistics():
    adv = group_advantages([1.0, None, 0.0, 0.0], group_size=4, scale=False)
    # judged: 1, 0, 0 -> mean 1/3
    assert adv.values.tolist() == pytest.approx([2 / 3, 0.0, -1 / 3, -1 / 3])
    assert adv.mask.tolist() == [True, False, True, True]
    assert adv.masked == 1


def test_group_of_one_is_compared_with_zero_like_verl():
    adv = group_advantages([0.8, 0.2], group_size=1, scale=True, eps=0.0)
    assert adv.values.tolist() == pytest.approx([0.8, 0.2])


def test_group_left_with_one_judged_sample_gets_no_signal():
    adv = group_advantages([0.8, None, None], group_size=3)
    assert adv.values.tolist() == [0.0, 0.0, 0.0]


def test_group_ids_need_not_be_contiguous():
    adv = group_advantages([1.0, 5.0, 0.0, 5.0], group_ids=["a", "b", "a", "b"], scale=False)
    assert adv.values.tolist() == [0.5, 0.0, -0.5, 0.0]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "1.0", True])
def test_non_finite_or_non_numeric_rewards_are_refused(bad):
    with pytest.raises(RewardError):
        check_rewards([0.0, bad], 2)


def test_length_mismatch_is_refused():
    with pytest.raises(RewardError, match="returned 1 rewards for 2"):
        check_rewards([1.0], 2)
    with pytest.raises(RewardError):
        group_advantages([1.0, 0.0, 1.0], group_size=2)


def test_r1_none_is_aggregated_without_it_and_all_none_is_masked(caplog):
    f1 = [1.0, None, None, 0.0]
    f2 = [0.5, 0.5, None, None]
    with caplog.at_level(logging.WARNING):
        out = combine([f1, f2], weights=[1.0, 2.0])
    assert out == [2.0, 1.0, None, 0.0]
    assert "1 of 4 samples were judged by no reward function" in caplog.text


def _raises_on_bad(prompts, completions, **kw):
    if "bad" in completions:
        raise ValueError("cannot score 'bad'")
    return [float(len(c)) for c in completions]


def test_r1_an_exception_costs_one_sample_not_the_step():
    rewards, errors = call_safely(_raises_on_bad, ["p"] * 3, ["ab", "bad", "abcd"], extra=[1, 2, 3])
    assert rewards == [2.0, None, 4.0]
    assert len(errors) == 1 and errors[0].startswith("1: ValueError")


def test_call_safely_passes_per_sample_columns_when_retrying():
    seen = []

    def fn(prompts, completions, task=None, **kw):
        if len(completions) > 1:
            raise RuntimeError("batch broken")
        seen.append(task)
        return [1.0]

    rewards, _ = call_safely(fn, ["p", "q"], ["a", "b"], task=["t0", "t1"], trainer_state="S")
    assert rewards == [1.0, 1.0] and seen == [["t0"], ["t1"]]


def test_call_safely_rejects_wrong_length_then_scores_per_sample():
    def fn(prompts, completions, **kw):
        return [1.0]  # always one value: wrong for the batch, right per sample

    rewards, errors = call_safely(fn, ["p", "q"], ["a", "b"])
    assert rewards == [1.0, 1.0] and errors == []


def test_r1_field_case_end_to_end(caplog):
    """Two functions return None for some samples, a third raises on one: each sample is
    judged by whoever could; the one nobody judged is masked with a warning; no exception escapes."""
    def f1(prompts, completions, **kw):
        return [1.0 if c == "a" else None for c in completions]

    def f2(prompts, completions, **kw):
        return [None if c in ("b", "c") else 0.5 for c in completions]

    def f3(prompts, completions, **kw):
        if "c" in completions:
            raise ZeroDivisionError("judge crashed")
        return [0.25] * len(completions)

    comps = ["a", "b", "c", "d"]
    per_fn = [call_safely(f, ["p"] * 4, comps)[0] for f in (f1, f2, f3)]
    assert per_fn[2] == [0.25, 0.25, None, 0.25]
    with caplog.at_level(logging.WARNING):
        total = combine(per_fn)
    assert total == [1.75, 0.25, None, 0.75]
    adv = group_advantages(total, group_size=4, scale=False)
    assert adv.mask.tolist() == [True, True, False, True] and adv.values[2] == 0.0
    assert "1 of 4 samples were judged by no reward function" in caplog.text
