"""Pure functions for the evaluation math: pass@k and bootstrap intervals.

No models, no I/O; numpy only.

* pass@k: the unbiased estimator of Chen et al. 2021, "Evaluating Large Language Models
  Trained on Code" (the HumanEval paper), eq. 1, in its numerically stable product form
  ``1 - prod_{i=n-c+1..n} (1 - k / i)`` (the paper's figure 3) instead of a ratio of binomials.
* Confidence intervals: percentile bootstrap over *tasks* (Efron & Tibshirani 1993, ch. 13),
  seeded so a report is reproducible. For a difference of two models on the same tasks the
  resampling is *paired* (one index draw for both), which is what makes a small held-out set
  still informative.
* Deviation: when every task has the same value (0/30 passed, or two models that agree on every
  task) the percentile interval collapses to a point, which claims certainty 30 tasks cannot
  give. Then the interval is the Wilson score interval (Wilson 1927) of the rate over ``n``
  tasks, and for a paired difference with no discordant task it is ``±`` the Wilson upper bound
  of the discordant share (0 of ``n``); :attr:`Estimate.method` says which was used.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Mapping, Sequence

import numpy as np

from sdk.eval.records import EvalError, Estimate, EvalRow


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task: probability that at least one of k samples drawn without
    replacement from ``n`` samples, ``c`` of them correct, is correct.

    Args:
        n: samples generated (judged) for the task, ``n >= 1``.
        c: correct samples, ``0 <= c <= n``.
        k: ``1 <= k <= n``.
    Returns:
        A float in [0, 1]; exactly ``c / n`` for ``k == 1``.
    Raises:
        EvalError: when the arguments break the constraints above.
    """
    _check_nck(n, c, k)
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1, dtype=np.float64)))


def pass_at_k_per_task(ns: Sequence[int], cs: Sequence[int], k: int) -> np.ndarray:
    """Vectorised :func:`pass_at_k` over tasks.

    Args:
        ns: samples per task, shape ``(T,)``; may differ between tasks, each ``>= k``.
        cs: correct samples per task, shape ``(T,)``.
        k: the k of pass@k.
    Returns:
        ``float64`` array of shape ``(T,)``.
    Raises:
        EvalError: shapes differ, or a task breaks the constraints of :func:`pass_at_k`.
    """
    n_arr = np.asarray(ns, dtype=np.int64)
    c_arr = np.asarray(cs, dtype=np.int64)
    if n_arr.shape != c_arr.shape or n_arr.ndim != 1:
        raise EvalError(f"ns and cs must be 1-D and of equal length, got {n_arr.shape} and {c_arr.shape}",
                        "pass one n and one c per task")
    out = np.empty(n_arr.shape, dtype=np.float64)
    for n in np.unique(n_arr):  # one vectorised product per distinct n (usually one)
        sel = n_arr == n
        c_sel = c_arr[sel]
        for c in (int(c_sel.min()), int(c_sel.max())):
            _check_nck(int(n), c, k)
        # ratio[i] = 1 - k / (n - c + 1 + i) for i in 0..c-1, terms beyond c are 1.
        i = np.arange(int(n), dtype=np.float64)
        denom = (n - c_sel[:, None] + 1 + i[None, :]).astype(np.float64)
        terms = np.where(i[None, :] < c_sel[:, None], 1.0 - k / denom, 1.0)
        vals = 1.0 - np.prod(np.clip(terms, 0.0, 1.0), axis=1)
        out[sel] = np.where(n - c_sel < k, 1.0, vals)
    return out


def bootstrap_ci(values: Sequence[float], n_resamples: int = 2000, confidence: float = 0.95,
                 seed: int = 0) -> Estimate:
    """Mean of per-task ``values`` with a percentile bootstrap interval (tasks resampled).

    Args:
        values: one number per task, shape ``(T,)``, e.g. per-task pass@k; ``T >= 1``.
        n_resamples: bootstrap replicates.
        confidence: interval mass, in (0, 1).
        seed: RNG seed (``numpy.random.default_rng``); equal seeds give equal intervals.
    Raises:
        EvalError: no values, or ``confidence`` outside (0, 1).
    """
    x = _as_values(values, "values")
    if np.ptp(x) == 0 and 0.0 <= x[0] <= 1.0:  # no spread: percentile interval would be a point
        low, high = wilson_interval(float(x[0]) * len(x), len(x), confidence)
        return _fixed(float(x[0]), low, high, len(x), confidence)
    means = _resample_means(x, n_resamples, seed)
    return _estimate(float(x.mean()), means, len(x), confidence)


def paired_bootstrap_ci(base: Sequence[float], tuned: Sequence[float], n_resamples: int = 2000,
                        confidence: float = 0.95, seed: int = 0) -> Estimate:
    """Mean of ``tuned - base`` over the same tasks, with a paired percentile bootstrap interval.

    Args:
        base, tuned: per-task values of the two models, aligned, shape ``(T,)`` each.
        n_resamples, confidence, seed: as in :func:`bootstrap_ci`.
    Returns:
        An :class:`Estimate` of the difference (in [-1, 1] for rates).
    Raises:
        EvalError: lengths differ or are zero.
    """
    a = _as_values(base, "base")
    b = _as_values(tuned, "tuned")
    if a.shape != b.shape:
        raise EvalError(f"paired values need equal lengths, got {len(a)} and {len(b)}",
                        "align base and tuned values on the same tasks first")
    d = b - a
    if np.ptp(d) == 0 and d[0] in (-1.0, 0.0, 1.0):  # every task moved the same way (or not at all)
        n, v = len(d), float(d[0])
        if v == 0.0:
            u = wilson_interval(0, n, confidence)[1]
            return _fixed(0.0, -u, u, n, confidence)
        lo = wilson_interval(n, n, confidence)[0]
        return _fixed(v, lo if v > 0 else -1.0, 1.0 if v > 0 else -lo, n, confidence)
    return _estimate(float(d.mean()), _resample_means(d, n_resamples, seed), len(d), confidence)


def paired_over_common(base: Mapping[str, float], tuned: Mapping[str, float]) -> Estimate | None:
    """:func:`paired_bootstrap_ci` of ``tuned - base`` over the task keys both mappings hold (sorted),
    or ``None`` when they share none (e.g. two arms' per-task pass@1, ``{task key: 0.0 | 1.0}``)."""
    ids = sorted(set(base) & set(tuned))
    return paired_bootstrap_ci([base[i] for i in ids], [tuned[i] for i in ids]) if ids else None


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``successes / n`` (Wilson 1927), clipped to [0, 1].

    Raises:
        EvalError: ``n < 1`` or ``confidence`` outside (0, 1).
    """
    if n < 1 or not 0.0 < confidence < 1.0:
        raise EvalError(f"wilson_interval needs n >= 1 and 0 < confidence < 1, got n={n}, confidence={confidence}",
                        "pass the number of tasks and e.g. 0.95")
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def flag_counts(rows: Sequence[EvalRow]) -> dict[str, int]:
    """``{flag: number of samples that raised it}`` over ``rows``, sorted by flag name."""
    out: dict[str, int] = {}
    for row in rows:
        for sample_flags in row.flags:
            for f in set(sample_flags):
                out[f] = out.get(f, 0) + 1
    return dict(sorted(out.items()))


def component_stats(rows: Sequence[EvalRow]) -> dict[str, dict[str, float]]:
    """Reward components over the judged samples of ``rows``.

    Returns:
        ``{component: {"mean": mean value, "nonzero": samples where it is not 0, "samples": samples
        carrying it}}``, sorted by name. Side effects show here: ``regressions`` (previously
        passing tests broken), ``hidden_gap`` (visible minus hidden pass fraction),
        ``side_effect_penalty``, ``flag_*``.
    """
    acc: dict[str, list[float]] = {}
    for row in rows:
        for reward, comp in zip(row.rewards, row.components):
            if reward is None:
                continue
            for key, val in comp.items():
                acc.setdefault(key, []).append(val)
    return {k: {"mean": float(np.mean(v)), "nonzero": int(np.count_nonzero(v)), "samples": len(v)}
            for k, v in sorted(acc.items())}


def _check_nck(n: int, c: int, k: int) -> None:
    if n < 1 or not 0 <= c <= n or not 1 <= k <= n:
        raise EvalError(f"pass@k needs n >= 1, 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}",
                        "generate at least k samples per task (eval.n_samples) or ask for a smaller k")


def _as_values(values: Sequence[float], name: str) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise EvalError(f"{name}: need a non-empty 1-D sequence of per-task values, got shape {x.shape}",
                        "evaluate at least one task in the slice")
    return x


def _resample_means(x: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    if n_resamples < 1:
        raise EvalError(f"n_resamples must be >= 1, got {n_resamples}", "use e.g. 2000")
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples, dtype=np.float64)
    chunk = max(1, 2_000_000 // len(x))  # bound memory to ~16 MB per chunk
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        idx = rng.integers(0, len(x), size=(stop - start, len(x)))
        means[start:stop] = x[idx].mean(axis=1)
    return means


def _fixed(value: float, low: float, high: float, n: int, confidence: float) -> Estimate:
    if not 0.0 < confidence < 1.0:
        raise EvalError(f"confidence must be in (0, 1), got {confidence}", "use e.g. 0.95")
    return Estimate(value=value, low=low, high=high, n=n, confidence=confidence, method="wilson")


def _estimate(value: float, means: np.ndarray, n: int, confidence: float) -> Estimate:
    if not 0.0 < confidence < 1.0:
        raise EvalError(f"confidence must be in (0, 1), got {confidence}", "use e.g. 0.95")
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return Estimate(value=value, low=float(low), high=float(high), n=n, confidence=confidence)
