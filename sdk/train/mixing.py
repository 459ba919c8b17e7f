"""Multi-domain mixing: sampling weights per domain and a deterministic mixed sequence.

Three weightings (``rl.order.mixing`` / ``sft.order.mixing``):

* ``static``: the user's weights, matched to domains exactly or by prefix (``feedback`` covers
  ``feedback/assistant``); unlisted domains get weight 0 and are left out (reported).
* ``temperature``: ``p_d ∝ n_d^(1/T)`` over domain sizes ``n_d`` (T=1 proportional, T→∞
  uniform), the temperature sampling of multilingual pre-training (Arivazhagan et al. 2019,
  "Massively Multilingual NMT"; XLM-R).
* adaptive (:func:`adaptive_weights`): an exponentiated-gradient step towards domains whose
  held-out reward improves least, after DoReMi (Xie et al. 2023), whose excess-loss signal we
  replace by the held-out gain because that is what tuneloop measures. Pure function; the
  caller decides when to apply it.

:func:`mix_sequence` turns weights into an order without randomness: at each position it takes
the domain whose share is furthest behind its target (smooth weighted round-robin, as in nginx's
upstream balancer), so every prefix of the sequence holds each domain within one row of
``weight x length``. Each domain's rows are taken in their given order and cycled when used up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from sdk.errors import ConfigError


def match_weight(domain: str, weights: Mapping[str, float]) -> float | None:
    """The weight for ``domain``: an exact key, else the longest key that is a ``/`` prefix; None if none."""
    if domain in weights:
        return float(weights[domain])
    keys = [k for k in weights if domain.startswith(k.rstrip("/") + "/")]
    return float(weights[max(keys, key=len)]) if keys else None


def domain_weights(counts: Mapping[str, int], mode: str, static: Mapping[str, float] | None = None,
                   temperature: float = 1.0) -> dict[str, float]:
    """Sampling probabilities per domain.

    Args:
        counts: rows per domain (domains with 0 rows are ignored).
        mode: ``none`` (proportional to counts), ``static`` or ``temperature``.
        static: ``domain or prefix -> weight >= 0`` for ``static``.
        temperature: T > 0 for ``temperature``.
    Returns:
        ``{domain: p}`` with p >= 0 summing to 1, every domain of ``counts`` present (0 when left out).
    Raises:
        ConfigError: unknown mode, a bad temperature, or static weights that match no domain with rows.
    """
    present = {d: n for d, n in counts.items() if n > 0}
    if not present:
        return {}
    if mode in ("none", "temperature"):
        if temperature <= 0:
            raise ConfigError(f"mixing temperature {temperature} must be > 0", "set order.mixing_temperature: 1.0")
        t = 1.0 if mode == "none" else temperature
        raw = {d: n ** (1.0 / t) for d, n in present.items()}
    elif mode == "static":
        raw = {d: max(match_weight(d, static or {}) or 0.0, 0.0) for d in present}
        if sum(raw.values()) <= 0:
            raise ConfigError(f"order.domain_weights {dict(static or {})} give no weight to any domain with rows "
                              f"({sorted(present)})", "name at least one of those domains (or a prefix) with weight > 0")
    else:
        raise ConfigError(f"unknown mixing mode {mode!r}", "use none, static or temperature")
    total = sum(raw.values())
    return {d: raw.get(d, 0.0) / total for d in counts}


def adaptive_weights(weights: Mapping[str, float], gains: Mapping[str, float], eta: float = 1.0,
                     floor: float = 0.02) -> dict[str, float]:
    """One exponentiated-gradient step: ``w_d ∝ w_d · exp(-eta · gain_d)``, then a floor.

    Computed in log space (the largest exponent subtracted), so no ``eta`` or gain overflows or
    underflows every weight to 0.

    Args:
        weights: current probabilities per domain.
        gains: held-out reward change per domain since the last step (absolute, e.g. +0.1);
            domains without a measurement, or whose gain is not finite (a NaN probe), keep their
            relative weight.
        eta: step size (per unit of gain), finite and > 0.
        floor: minimum probability of every domain (keeps a regressing-then-recovering domain
            in the mix; DoReMi smooths with a uniform mixture the same way).
    Returns:
        New probabilities summing to 1 (uniform when no domain has weight).
    Raises:
        ValueError: ``eta`` is not finite.
    """
    if not math.isfinite(eta):
        raise ValueError(f"adaptive mixing step size eta={eta} must be finite; e.g. 2.0")
    live = {d: w for d, w in weights.items() if w > 0 and math.isfinite(w)}
    logs = {}
    for d, w in live.items():
        gain = gains.get(d, 0.0)
        logs[d] = math.log(w) - eta * (gain if math.isfinite(gain) else 0.0)
    top = max(logs.values(), default=0.0)
    raw = {d: math.exp(logs[d] - top) if d in logs else 0.0 for d in weights}
    total = sum(raw.values())
    k = len(raw)
    probs = {d: v / total for d, v in raw.items()} if total > 0 else {d: 1.0 / k for d in raw}
    if not k or floor <= 0:
        return probs
    floor = min(floor, 1.0 / k)
    return {d: floor + (1 - floor * k) * p for d, p in probs.items()}


def mix_sequence(queues: Mapping[str, Sequence[int]], weights: Mapping[str, float], n: int) -> list[int]:
    """Interleave per-domain queues into ``n`` items by ``weights`` (deterministic).

    Args:
        queues: ``domain -> item indices`` in the order each domain should be consumed.
        weights: ``domain -> weight``; domains with weight 0 or an empty queue are skipped; the
            rest are renormalised.
        n: length of the result.
    Returns:
        ``n`` indices; domain ``d`` appears ``round(n · p_d)`` times (± 1), its queue cycled.
    """
    live = {d: w for d, w in weights.items() if w > 0 and queues.get(d)}
    if n <= 0 or not live:
        return []
    total = sum(live.values())
    share = {d: w / total for d, w in live.items()}
    taken = dict.fromkeys(share, 0)
    out: list[int] = []
    for t in range(1, n + 1):
        d = max(share, key=lambda x: (share[x] * t - taken[x], share[x]))
        queue = queues[d]
        out.append(queue[taken[d] % len(queue)])
        taken[d] += 1
    return out
