"""ScoreCache: a completion repeated for the same task is run in the sandbox once, with the same result."""

from __future__ import annotations

import pytest

from sdk.rewards.config import RewardConfig
from sdk.rewards.result import RewardStatus
from sdk.rewards.score_cache import ScoreCache, reusable
from sdk.rewards.tiered import score_batch
from sdk.sandbox.contract import ExecResult, ExecStatus
from tests.rewards.helpers import FakeSandbox, add_task

GOOD = "```python\ndef add(a, b):\n    return a + b\n```"
BAD = "```python\ndef add(a, b):\n    return a - b\n```"
W = RewardConfig()


def cached(box: FakeSandbox) -> ScoreCache:
    return ScoreCache(lambda ts, cs: score_batch(ts, cs, box, W))


def requests(box: FakeSandbox) -> int:
    return sum(len(b) for b in box.batches)


def test_repeat_across_calls_runs_once_with_the_same_result():
    task = add_task()
    plain, box = FakeSandbox(), FakeSandbox()
    cache = cached(box)
    first = cache([task], [GOOD])
    again = cache([task], [GOOD])
    n_first = requests(box)
    assert n_first > 0                              # the first call reached the sandbox
    assert again == first == score_batch([task], [GOOD], plain, W)
    assert requests(box) == n_first                 # the repeat never reached the sandbox
    assert (cache.hits, cache.misses) == (1, 1)
    assert first[0].score == pytest.approx(1.0)


def test_repeats_inside_one_batch_are_run_once_and_order_is_kept():
    task, other = add_task(), add_task(hidden=False)
    box, plain = FakeSandbox(), FakeSandbox()
    got = cached(box)([task, task, other, task], [GOOD, GOOD, GOOD, BAD])
    want = score_batch([task, task, other, task], [GOOD, GOOD, GOOD, BAD], plain, W)
    assert got == want
    assert requests(box) == requests(plain) - 1     # the second (task, GOOD) never reached the sandbox


def test_a_task_with_another_verifier_is_not_served_from_the_memo():
    task = add_task()
    changed = task.with_(verifier=task.verifier.model_copy(update={"timeout_s": 7.0}))
    box = FakeSandbox()
    cache = cached(box)
    cache([task], [GOOD])
    cache([changed], [GOOD])
    assert cache.misses == 2 and cache.hits == 0


def test_unjudged_and_timeout_results_are_scored_again():
    calls = []

    def respond(req):
        calls.append(req)
        return ExecResult(status=ExecStatus.SANDBOX_ERROR if len(calls) <= 2 else ExecStatus.TIMEOUT)  # 1 retry

    box = FakeSandbox(respond)
    cache = cached(box)
    first = cache([add_task()], [GOOD])[0]
    second = cache([add_task()], [GOOD])[0]
    third = cache([add_task()], [GOOD])[0]
    assert first.score is None and not reusable(first)
    assert second.status == RewardStatus.TIMEOUT and not reusable(second)
    assert third.status == RewardStatus.TIMEOUT
    assert cache.misses == 3 and cache.hits == 0


def test_wrong_lengths_raise():
    cache = cached(FakeSandbox())
    with pytest.raises(ValueError, match="one completion per task"):
        cache([add_task()], [GOOD, BAD])
    bad = ScoreCache(lambda ts, cs: [])
    with pytest.raises(RuntimeError, match="0 results for 1"):
        bad([add_task()], [GOOD])
