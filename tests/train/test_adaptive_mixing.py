"""Adaptive domain mixing: the stream follows weight updates from held-out progress, in GRPO too."""

from __future__ import annotations

import itertools
import math

import pytest

from sdk.config import LoraConfig, OrderConfig, RlConfig, SftConfig
from sdk.errors import ConfigError
from sdk.tasks.records import Message, Source, Split, Task, UnitTestVerifier
from sdk.train.adaptive import AdaptiveMixer, adaptive_stream
from sdk.train.monitor import HeldoutMonitor


def _rows(domain: str, n: int) -> list[dict]:
    return [{"id": f"{domain}{i}", "domain": domain} for i in range(n)]


def _share(rows, domain: str) -> float:
    return sum(r["domain"] == domain for r in rows) / len(rows)


def test_stream_draws_domains_by_weight_and_follows_an_update_mid_stream():
    rows = _rows("a", 5) + _rows("b", 5)
    mixer = AdaptiveMixer(rows, [r["domain"] for r in rows], {"a": 0.9, "b": 0.1}, eta=4.0, floor=0.0, seed=1)
    stream = mixer.stream()
    before = list(itertools.islice(stream, 2000))
    assert 0.87 < _share(before, "a") < 0.93
    mixer.update(0, {"a": 0.0, "b": 0.0})           # first evaluation: a starting point, no change
    assert mixer.weights == {"a": 0.9, "b": 0.1}
    mixer.update(4, {"a": 0.6, "b": 0.0})           # a gained 0.6, b nothing: weight moves to b
    expected_b = 0.1 / (0.1 + 0.9 * math.exp(-4.0 * 0.6))
    assert mixer.weights["b"] == pytest.approx(expected_b)
    after = list(itertools.islice(stream, 2000))    # the same generator sees the new weights
    assert abs(_share(after, "b") - expected_b) < 0.04
    assert mixer.trace == [{"step": 4, "gains": {"a": 0.6, "b": 0.0}, "weights": mixer.weights}]


def test_stream_cycles_every_row_of_a_domain_before_repeating():
    rows = _rows("a", 4)
    mixer = AdaptiveMixer(rows, ["a"] * 4, {"a": 1.0}, seed=0)
    first = [r["id"] for r in itertools.islice(mixer.stream(), 8)]
    assert sorted(first[:4]) == sorted(first[4:]) == ["a0", "a1", "a2", "a3"]


def test_adaptive_needs_a_heldout_monitor_and_rejects_sft_and_curriculum():
    with pytest.raises(ConfigError, match="held-out monitoring is off"):
        adaptive_stream(_rows("a", 2), ["a", "a"], OrderConfig(mixing="adaptive"), [], seed=0)
    with pytest.raises(ValueError, match="only GRPO"):
        SftConfig(order=OrderConfig(mixing="adaptive"))
    with pytest.raises(ValueError, match="cannot follow a curriculum"):
        OrderConfig(mixing="adaptive", curriculum="easy_to_hard")


def _task(domain: str, i: int) -> Task:
    return Task(domain=domain, split=Split.TRAIN,
                prompt=[Message(role="user", content=f"{domain} task {i}: write f")],
                verifier=UnitTestVerifier(entry_point="f", tests={"t": "assert f() == 1"}),
                reference="def f():\n    return 1", source=Source(connector="test"))


def test_grpo_with_adaptive_mixing_shifts_prompts_towards_the_domain_that_gains_least(tiny_model_dir, tmp_path):
    from sdk.train.grpo import run_grpo

    seen: list[str] = []

    def reward(prompts, completions, **kw):
        seen.extend(p[-1]["content"].split()[0] for p in prompts)
        return [float(len(c[0]["content"]) % 2) for c in completions]

    evals = iter([{"a": 0.0, "b": 0.0}, {"a": 0.9, "b": 0.0}, {"a": 0.9, "b": 0.0}, {"a": 0.9, "b": 0.0}])
    monitor = HeldoutMonitor(lambda model, tok: next(evals), every=2, threshold=math.inf)
    tasks = [_task("a", i) for i in range(4)] + [_task("b", i) for i in range(4)]
    cfg = RlConfig(max_steps=6, batch_size=2, num_generations=2, max_completion_length=4, use_vllm="never",
                   save_steps=100, order=OrderConfig(mixing="adaptive", adaptive_eta=8.0), heldout={"every": 2})
    stats = run_grpo(str(tiny_model_dir), None, tasks, reward, cfg, LoraConfig(r=2), tmp_path, seed=0,
                     progress=False, callbacks=[monitor])
    order = stats.details["order"]
    assert order["mixing"] == "adaptive" and order["trace"], order
    assert order["weights"]["b"] > 0.9           # a gained 0.9, b nothing: b takes the mix
    per_step = [seen[i:i + 2][0] for i in range(0, len(seen), 2)]
    assert per_step[-2:] == ["b", "b"], per_step  # the last steps draw from b


def test_adaptive_weights_survive_huge_steps_and_nan_probes():
    from sdk.train.mixing import adaptive_weights

    big = adaptive_weights({"a": 0.5, "b": 0.5}, {"a": -0.71, "b": 0.0}, eta=1000.0, floor=0.0)
    assert big["a"] == pytest.approx(1.0) and big["b"] == pytest.approx(0.0)  # no OverflowError: log space
    both = adaptive_weights({"a": 0.5, "b": 0.5}, {"a": 0.5, "b": 0.5}, eta=1e4)
    assert sum(both.values()) == pytest.approx(1.0) and both["a"] == pytest.approx(0.5)
    nan = adaptive_weights({"a": 0.5, "b": 0.5}, {"a": float("nan"), "b": 0.2}, eta=2.0, floor=0.0)
    assert nan["a"] > nan["b"] and sum(nan.values()) == pytest.approx(1.0)   # NaN gain = no measurement
    with pytest.raises(ValueError, match="finite"):
        adaptive_weights({"a": 1.0}, {}, eta=math.inf)


def test_a_nan_probe_keeps_the_stream_alive_and_the_last_good_baseline():
    rows = _rows("a", 2) + _rows("b", 2)
    mixer = AdaptiveMixer(rows, ["a", "a", "b", "b"], {"a": 0.5, "b": 0.5}, eta=2.0, floor=0.0, seed=0)
    stream = mixer.stream()
    mixer.update(0, {"a": 0.1, "b": 0.2})
    mixer.update(2, {"a": float("nan"), "b": 0.3})
    next(stream)                                              # weights stay finite
    assert all(math.isfinite(w) for w in mixer.weights.values())
    mixer.update(4, {"a": 0.6, "b": 0.3})                     # a's gain is measured from its last good 0.1
    assert mixer.trace[-1]["gains"]["a"] == pytest.approx(0.5)


def test_config_rejects_adaptive_mixing_without_a_heldout_probe_before_any_stage_runs():
    with pytest.raises(ValueError, match="nothing probes held-out progress"):
        RlConfig(order=OrderConfig(mixing="adaptive"))
    assert RlConfig(order=OrderConfig(mixing="adaptive"), heldout={"every": 2}).order.mixing == "adaptive"
    with pytest.raises(ValueError):
        OrderConfig(mixing="adaptive", adaptive_eta=math.inf)
