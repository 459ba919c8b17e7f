"""Difficulty estimates, the filter, the on-disk cache and the zero-variance count (no model)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sdk.config import DifficultyConfig
from sdk.tasks.records import AnswerVerifier, Message, Source, Task
from sdk.train.difficulty import (
    DifficultyCache,
    cache_key,
    difficulty_report,
    estimate,
    measure,
    split_by_difficulty,
    zero_std_summary,
)


def _task(i: int) -> Task:
    return Task(domain="d", prompt=(Message(role="user", content=f"say {i}"),),
                verifier=AnswerVerifier(expected=str(i)), source=Source(connector="test"))


def test_estimate_counts_passes_and_leaves_unjudged_out():
    est = estimate("t", [1.0, 0.5, None, 1.0 - 1e-12], threshold=1.0)
    assert (est.k, est.valid, est.passes) == (4, 3, 2)
    assert est.pass_rate == pytest.approx(2 / 3) and est.mean_reward == pytest.approx(2.5 / 3)
    assert estimate("t", [None, None]).pass_rate is None


def test_split_drops_never_and_always_solved_with_reasons():
    tasks = [_task(i) for i in range(4)]
    ests = {tasks[0].id: estimate(tasks[0].id, [0, 0]), tasks[1].id: estimate(tasks[1].id, [1, 1]),
            tasks[2].id: estimate(tasks[2].id, [1, 0])}
    kept, dropped = split_by_difficulty(tasks, ests)
    assert [t.id for t in kept] == [tasks[2].id, tasks[3].id]
    assert kept[0].difficulty == 0.5 and kept[1].difficulty is None, "unmeasured tasks are kept as they are"
    assert [q.reason for q in dropped] == ["difficulty: never solved (0/2 passed)",
                                          "difficulty: always solved (2/2 passed)"]
    assert kept[0].id == tasks[2].id, "difficulty does not change the content hash"
    kept, dropped = split_by_difficulty(tasks, ests, min_rate=0.5)
    assert tasks[2].id in {q.task.id for q in dropped}
    rep = difficulty_report(ests, dropped)
    assert rep["measured"] == 3 and rep["dropped"] == 3 and rep["pass_rate_histogram_5bins"] == [1, 0, 1, 0, 1]


def test_measure_uses_the_cache_and_survives_a_torn_line(tmp_path):
    tasks = [_task(i) for i in range(3)]
    calls = []

    def generate(prompts, n):
        calls.append(len(prompts))
        return [[(p[-1]["content"].split()[-1] if j == 0 else "no", 1) for j in range(n)] for p in prompts]

    def score(ts, comps):
        return [SimpleNamespace(score=1.0 if c == t.verifier.expected else 0.0) for t, c in zip(ts, comps)]

    cache = DifficultyCache(tmp_path / "difficulty.jsonl")
    key = lambda t: cache_key("policy", t.id, 4, 1.0, 16, 1.0)
    first = measure(tasks, generate, score, 4, cache, key, batch_tasks=2)
    assert calls == [2, 1] and all(e.pass_rate == 0.25 for e in first.values())
    with (tmp_path / "difficulty.jsonl").open("a") as fh:
        fh.write('{"key": "torn')
    again = measure(tasks, generate, score, 4, DifficultyCache(tmp_path / "difficulty.jsonl"), key)
    assert calls == [2, 1], "every task came from the cache"
    assert again == first
    other = lambda t: cache_key("other-policy", t.id, 4, 1.0, 16, 1.0)
    measure(tasks[:1], generate, score, 4, cache, other)
    assert calls == [2, 1, 1], "a different policy is measured again"


def test_zero_std_summary_from_trl_logs():
    hist = [{"frac_reward_zero_std": 0.5, "loss": 0.1, "zero_std/dropped_groups": 1.0},
            {"frac_reward_zero_std": 1.0, "zero_std/dropped_groups": 2.0}, {"train_runtime": 3}]
    assert zero_std_summary(hist, groups_per_step=2) == {"steps": 2, "groups": 4, "zero_std_groups": 3,
                                                         "frac_zero_std": 0.75, "dropped_groups": 3}
    assert zero_std_summary([], 2)["frac_zero_std"] == 0.0


def test_difficulty_config_rejects_an_empty_range():
    with pytest.raises(ValueError, match="min_pass_rate"):
        DifficultyConfig(min_pass_rate=0.7, max_pass_rate=0.3)


def test_measure_and_filter_on_the_tiny_model_drops_always_and_never_solved(tiny_model_dir, tmp_path, monkeypatch):
    from sdk.config import RewardConfig
    from sdk.train import difficulty as mod

    always = Task(domain="d", prompt=(Message(role="user", content="anything"),),
                  verifier=AnswerVerifier(mode="regex", expected="(?s).*"), source=Source(connector="test"))
    never = Task(domain="d", prompt=(Message(role="user", content="the secret"),),
                 verifier=AnswerVerifier(expected="a string a random model never writes 12345"),
                 source=Source(connector="test"))
    cfg = DifficultyConfig(enabled=True, k=2, max_new_tokens=4)
    kept, dropped, report = mod.measure_and_filter([always, never], tiny_model_dir, None, cfg, sandbox=None,
                                                   weights=RewardConfig(), out_dir=tmp_path, seed=0)
    assert kept == [] and sorted(q.reason for q in dropped) == ["difficulty: always solved (2/2 passed)",
                                                                "difficulty: never solved (0/2 passed)"]
    assert report["dropped_by_reason"] == {"difficulty: always solved": 1, "difficulty: never solved": 1}
    assert (tmp_path / "difficulty_dropped.jsonl").read_text().count("\n") == 2

    class NoGeneration:
        def __init__(self, *a, **kw):
            raise AssertionError("every estimate should come from the cache")

    monkeypatch.setattr("sdk.generate.HFGenerator", NoGeneration)
    _, again, _ = mod.measure_and_filter([always, never], tiny_model_dir, None, cfg, None, RewardConfig(), tmp_path, 0)
    assert [q.reason for q in again] == [q.reason for q in dropped]
