"""Pure scheduling math: domain weights, the mixed sequence, and phased curricula (no model)."""

from __future__ import annotations

from collections import Counter

import pytest

from sdk.config import OrderConfig
from sdk.errors import ConfigError
from sdk.train.curriculum import Item, is_default, order_summary, phase_chunks, schedule
from sdk.train.mixing import (
    adaptive_weights,
    domain_weights,
    match_weight,
    mix_sequence,
)


def test_temperature_weights_flatten_towards_uniform():
    counts = {"a": 90, "b": 10}
    prop = domain_weights(counts, "none")
    assert prop == pytest.approx({"a": 0.9, "b": 0.1})
    t2 = domain_weights(counts, "temperature", temperature=2.0)
    assert t2["a"] == pytest.approx(3 / 4)  # sqrt(90) : sqrt(10) = 3 : 1
    assert domain_weights(counts, "temperature", temperature=1e6)["b"] == pytest.approx(0.5, abs=1e-4)


def test_static_weights_match_by_prefix_and_leave_unlisted_out():
    w = domain_weights({"acme": 5, "feedback/assistant": 5, "other": 5}, "static", {"acme": 3, "feedback": 1})
    assert w == pytest.approx({"acme": 0.75, "feedback/assistant": 0.25, "other": 0.0})
    assert match_weight("feedback/assistant", {"feedback": 1, "feedback/assistant": 2}) == 2
    assert match_weight("feedbackx", {"feedback": 1}) is None


def test_static_weights_matching_nothing_is_a_config_error():
    with pytest.raises(ConfigError, match="no weight to any domain"):
        domain_weights({"acme": 3}, "static", {"billing": 1})


def test_mix_sequence_keeps_proportions_in_every_prefix_and_cycles_queues():
    seq = mix_sequence({"a": [0, 1], "b": [10, 11, 12]}, {"a": 0.75, "b": 0.25}, 40)
    assert len(seq) == 40
    for t in range(1, 41):
        a = sum(1 for x in seq[:t] if x < 10)
        assert abs(a - 0.75 * t) <= 1, (t, seq[:t])
    assert seq.count(0) == seq.count(1) == 15, "domain a's queue cycles in order"
    assert [x for x in seq if x >= 10][:4] == [10, 11, 12, 10]


def test_mix_sequence_skips_zero_weight_and_empty_domains():
    assert set(mix_sequence({"a": [1], "b": [2], "c": []}, {"a": 1, "b": 0, "c": 5}, 5)) == {1}
    assert mix_sequence({}, {}, 3) == []


def test_adaptive_weights_move_towards_lagging_domains_with_a_floor():
    w = adaptive_weights({"a": 0.5, "b": 0.5}, {"a": 0.3, "b": 0.0}, eta=2.0)
    assert w["b"] > w["a"] and sum(w.values()) == pytest.approx(1.0)
    starved = adaptive_weights({"a": 1.0, "b": 0.0}, {}, floor=0.1)
    assert starved["b"] == pytest.approx(0.1)


def _items():
    # 12 items: pass rates 0.0 .. 1.0, two domains, lengths reversed
    return [Item(domain="a" if i % 2 else "b", difficulty=i / 11, length=100 - i) for i in range(12)]


def test_easy_to_hard_phases_go_from_high_to_low_pass_rate():
    items = _items()
    chunks = phase_chunks(items, "easy_to_hard", 3, seed=0)
    assert [len(c) for c in chunks] == [4, 4, 4]
    means = [sum(items[i].difficulty for i in c) / len(c) for c in chunks]
    assert means[0] > means[1] > means[2]
    assert sorted(chunks[0]) == [8, 9, 10, 11]


def test_unmeasured_items_sit_in_the_middle():
    items = [Item("a", 1.0), Item("a", None), Item("a", 0.0)]
    assert [c[0] for c in phase_chunks(items, "easy_to_hard", 3, 0)] == [0, 1, 2]


def test_short_to_long_orders_by_length():
    items = _items()
    chunks = phase_chunks(items, "short_to_long", 2, seed=1)
    assert max(items[i].length for i in chunks[0]) < min(items[i].length for i in chunks[1])


def test_schedule_compresses_all_phases_into_a_short_run():
    items = _items()
    cfg = OrderConfig(curriculum="easy_to_hard", phases=3)
    order = schedule(items, cfg, n=6, seed=0)
    assert len(order) == 6
    rates = [items[i].difficulty for i in order]
    assert min(rates[:2]) > max(rates[-2:]), "the run reaches the hard phase even with few rows"
    assert schedule(items, cfg, n=6, seed=0) == order, "deterministic for a seed"


def test_schedule_mixes_domains_within_each_phase():
    items = _items()
    cfg = OrderConfig(curriculum="easy_to_hard", phases=2, mixing="static", domain_weights={"a": 3, "b": 1})
    order = schedule(items, cfg, n=24, seed=0)
    doms = Counter(items[i].domain for i in order)
    assert doms == {"a": 18, "b": 6}
    summary = order_summary(items, order)
    q = summary["mean_pass_rate_by_quarter"]
    assert q[0] > q[-1] and summary["per_domain"] == {"a": 18, "b": 6}


def test_schedule_drops_zero_weight_domains_and_default_config_is_flagged():
    items = _items()
    order = schedule(items, OrderConfig(mixing="static", domain_weights={"a": 1}), seed=0)
    assert order and all(items[i].domain == "a" for i in order)
    assert is_default(OrderConfig()) and not is_default(OrderConfig(curriculum="short_to_long"))


def test_static_mixing_without_weights_is_rejected_by_the_config():
    with pytest.raises(ValueError, match="domain_weights"):
        OrderConfig(mixing="static")


def test_order_rows_keeps_default_order_and_warns_without_pass_rates(caplog):
    from sdk.train.curriculum import order_rows

    rows = [{"i": i} for i in range(4)]
    items = [Item("a", None, 10 - i) for i in range(4)]
    assert order_rows(rows, items, OrderConfig(), None, 0) == (rows, {})
    got, summary = order_rows(rows, items, OrderConfig(curriculum="easy_to_hard"), 6, 0)
    assert len(got) == 6 and summary["rows"] == 6 and "no row has a measured pass rate" in caplog.text
    short_first, _ = order_rows(rows, items, OrderConfig(curriculum="short_to_long", phases=4), None, 0)
    assert short_first == rows[::-1]
    with pytest.raises(ValueError, match="aligned"):
        order_rows(rows, items[:3], OrderConfig(curriculum="short_to_long"), None, 0)
