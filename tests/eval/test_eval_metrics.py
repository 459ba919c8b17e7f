"""pass@k against hand-computed values, and the bootstrap intervals."""

from math import comb

import numpy as np
import pytest

from sdk.eval.metrics import bootstrap_ci, flag_counts, paired_bootstrap_ci, pass_at_k, pass_at_k_per_task
from sdk.eval.records import EvalError, EvalRow
from sdk.tasks.records import Split


@pytest.mark.parametrize("n,c,k,want", [
    (1, 1, 1, 1.0),
    (1, 0, 1, 0.0),
    (10, 3, 1, 0.3),            # pass@1 is c/n
    (5, 2, 2, 0.7),             # 1 - C(3,2)/C(5,2) = 1 - 3/10
    (4, 1, 2, 0.5),             # 1 - C(3,2)/C(4,2) = 1 - 3/6
    (10, 1, 5, 0.5),            # 1 - C(9,5)/C(10,5) = 1 - 126/252
    (3, 2, 2, 1.0),             # n - c < k: every draw of 2 holds a pass
    (200, 0, 100, 0.0),
])
def test_pass_at_k_hand_computed(n, c, k, want):
    assert pass_at_k(n, c, k) == pytest.approx(want, abs=1e-12)


def test_pass_at_k_matches_binomial_form_and_is_stable_for_large_n():
    for n, c, k in [(20, 7, 3), (50, 10, 10), (100, 1, 50)]:
        assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k), rel=1e-12)
    # C(1000, 500) overflows a float; the product form does not
    assert 0.0 < pass_at_k(1000, 1, 500) <= 1.0
    assert pass_at_k(1000, 1, 500) == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize("n,c,k", [(0, 0, 1), (3, 4, 1), (3, -1, 1), (3, 1, 0), (3, 1, 4)])
def test_pass_at_k_rejects_bad_arguments(n, c, k):
    with pytest.raises(EvalError, match="pass@k needs"):
        pass_at_k(n, c, k)


def test_vectorised_matches_scalar_with_mixed_n():
    ns = [5, 5, 10, 10, 10, 3, 7]
    cs = [0, 2, 1, 10, 4, 3, 6]
    for k in (1, 2, 3):
        got = pass_at_k_per_task(ns, cs, k)
        assert got.shape == (7,)
        np.testing.assert_allclose(got, [pass_at_k(n, c, k) for n, c in zip(ns, cs)], rtol=1e-12)


def test_vectorised_rejects_bad_task_and_shapes():
    with pytest.raises(EvalError):
        pass_at_k_per_task([2, 2], [1, 3], 1)
    with pytest.raises(EvalError, match="equal length"):
        pass_at_k_per_task([2, 2], [1], 1)


def test_bootstrap_ci_is_seeded_and_brackets_the_mean():
    vals = [1.0] * 30 + [0.0] * 70
    a = bootstrap_ci(vals, seed=3)
    b = bootstrap_ci(vals, seed=3)
    assert a == b
    assert a.value == pytest.approx(0.3) and a.n == 100
    assert 0.18 < a.low < 0.3 < a.high < 0.42        # binomial se ~0.046: +-1.96 se
    wide = bootstrap_ci(vals[:10] + vals[-10:], seed=3)
    assert wide.high - wide.low > a.high - a.low      # fewer tasks, wider interval


def test_wilson_interval_hand_computed():
    from sdk.eval.metrics import wilson_interval
    # 0/30 at 95%: centre = (z^2/60)/(1+z^2/30), half equal -> upper 0.1135 (z = 1.95996)
    assert wilson_interval(0, 30) == pytest.approx((0.0, 0.11351), abs=1e-4)
    # 15/30: centre 0.5, half = z*sqrt(0.25/30 + z^2/3600)/(1+z^2/30) = 0.16939
    assert wilson_interval(15, 30) == pytest.approx((0.33151, 0.66849), abs=1e-4)
    with pytest.raises(EvalError):
        wilson_interval(0, 0)


def test_bootstrap_ci_degenerate_uses_wilson_and_empty_fails():
    est = bootstrap_ci([0.0] * 30)
    assert (est.value, est.low, est.method) == (0.0, 0.0, "wilson")
    assert est.high == pytest.approx(0.11351, abs=1e-4)       # 0/30 is not proof of a 0% rate
    assert bootstrap_ci([1.0] * 30).low == pytest.approx(1 - 0.11351, abs=1e-4)
    assert bootstrap_ci([1.0, 0.0]).method == "percentile"
    with pytest.raises(EvalError, match="non-empty"):
        bootstrap_ci([])
    with pytest.raises(EvalError, match="confidence"):
        bootstrap_ci([1.0], confidence=1.5)


def test_paired_bootstrap_is_tighter_than_unpaired_for_correlated_models():
    rng = np.random.default_rng(0)
    base = (rng.random(60) < 0.5).astype(float)
    tuned = base.copy()
    tuned[:6] = 1.0 - tuned[:6]  # tuned differs on 6 tasks only
    tuned[6:12] = 1.0
    d = paired_bootstrap_ci(base, tuned, seed=1)
    assert d.value == pytest.approx(tuned.mean() - base.mean())
    assert d.low <= d.value <= d.high
    ib, it = bootstrap_ci(base, seed=1), bootstrap_ci(tuned, seed=2)
    assert (d.high - d.low) < (ib.high - ib.low) + (it.high - it.low)
    with pytest.raises(EvalError, match="equal lengths"):
        paired_bootstrap_ci([1.0, 0.0], [1.0])


def test_paired_bootstrap_without_discordant_tasks_uses_wilson_bounds():
    same = paired_bootstrap_ci([1.0, 0.0] * 15, [1.0, 0.0] * 15)
    assert same.value == 0.0 and same.method == "wilson"
    assert (same.low, same.high) == pytest.approx((-0.11351, 0.11351), abs=1e-4)
    up = paired_bootstrap_ci([0.0] * 30, [1.0] * 30)
    assert up.value == 1.0 and (up.low, up.high) == pytest.approx((1 - 0.11351, 1.0), abs=1e-4)
    down = paired_bootstrap_ci([1.0] * 30, [0.0] * 30)
    assert (down.low, down.high) == pytest.approx((-1.0, -1 + 0.11351), abs=1e-4)


def test_flag_counts_counts_samples_once_per_flag():
    row = EvalRow(task_id="t", domain="d", split=Split.HELDOUT, model="m", completions=("a", "b"),
                  rewards=(0.0, 1.0), passed=(False, True), statuses=("failed", "ok"),
                  flags=(("exit_zero", "exit_zero", "conftest"), ()))
    assert flag_counts([row, row]) == {"conftest": 2, "exit_zero": 2}


def test_component_stats_skip_unjudged_samples():
    from sdk.eval.metrics import component_stats
    row = EvalRow(task_id="t", domain="d", split=Split.HELDOUT, model="m", completions=("a", "b", "c"),
                  rewards=(0.5, None, 1.0), passed=(False, False, True), statuses=("failed", "sandbox_error", "ok"),
                  flags=((), (), ()), components=({"regressions": 2.0, "parses": 1.0}, {"regressions": 9.0},
                                                  {"regressions": 0.0, "parses": 1.0}))
    assert component_stats([row]) == {"parses": {"mean": 1.0, "nonzero": 2, "samples": 2},
                                      "regressions": {"mean": 1.0, "nonzero": 1, "samples": 2}}
    with pytest.raises(ValueError, match="one entry per completion"):
        row.model_validate({**row.model_dump(), "components": ({},)})
