"""Curriculum: the order train rows reach the trainer, phased from easy to hard (or short to long).

:func:`schedule` is the one entry point. It cuts the rows into ``phases`` by a key (measured pass
rate, highest first; or length, shortest first), shuffles inside each phase (seeded), gives each
phase a share of the run's ``n`` rows proportional to its size, and fills that share either by
cycling the phase or, with domain mixing on, by :func:`sdk.train.mixing.mix_sequence` over the
phase's domains. The result is a list of row indices: the dataset handed to TRL with shuffling
off (``GRPOConfig.shuffle_dataset=False``; ``train_sampling_strategy="sequential"`` for SFT).

Sources and deviations: phases by measured pass rate follow the "learnability" ordering of
curriculum RL for LLMs (e.g. Kimi k1.5's difficulty-sorted sampling; DAPO's observation that
tasks always or never solved carry no GRPO signal, which :mod:`sdk.train.difficulty` filters);
the context-length curriculum (short rows first) follows the length warm-up of long-context
training (e.g. Qwen2.5-1M). We phase by rank, not by fixed thresholds, so a model that solves
little still gets a non-empty first phase. Tasks without a measured pass rate sit in the middle.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from sdk.train.config import OrderConfig
from sdk.train.mixing import domain_weights, mix_sequence

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Item:
    """What the schedule needs to know about one row.

    Attributes:
        domain: the row's domain.
        difficulty: measured pass rate in [0, 1] (higher is easier), or None when not measured.
        length: size of the row in characters (prompt + target), for ``short_to_long``.
    """

    domain: str
    difficulty: float | None = None
    length: int = 0


def is_default(cfg: OrderConfig) -> bool:
    """True when the config asks for TRL's own (shuffled) order."""
    return cfg.curriculum == "none" and cfg.mixing == "none"


def phase_chunks(items: Sequence[Item], mode: str, phases: int, seed: int) -> list[list[int]]:
    """Indices of ``items`` cut into at most ``phases`` chunks of near-equal size, easiest first,
    each chunk shuffled with ``seed``.

    ``mode``: ``easy_to_hard`` (key: pass rate descending; unmeasured = median of the measured, 0.5
    if none is), ``short_to_long`` (key: length ascending), ``none`` (one chunk).
    """
    idx = list(range(len(items)))
    if mode == "easy_to_hard":
        measured = sorted(x.difficulty for x in items if x.difficulty is not None)
        mid = measured[len(measured) // 2] if measured else 0.5
        idx.sort(key=lambda i: (-(items[i].difficulty if items[i].difficulty is not None else mid), i))
    elif mode == "short_to_long":
        idx.sort(key=lambda i: (items[i].length, i))
    elif mode != "none":
        raise ValueError(f"unknown curriculum {mode!r}; use none, easy_to_hard or short_to_long")
    k = 1 if mode == "none" else max(1, min(phases, len(idx)))
    bounds = [round(j * len(idx) / k) for j in range(k + 1)]
    rng = random.Random(seed)
    chunks = []
    for a, b in pairwise(bounds):
        chunk = idx[a:b]
        rng.shuffle(chunk)
        chunks.append(chunk)
    return [c for c in chunks if c]


def _shares(sizes: Sequence[int], n: int) -> list[int]:
    """Split ``n`` proportionally to ``sizes`` (largest remainders; sums to exactly ``n``)."""
    total = sum(sizes)
    exact = [n * s / total for s in sizes]
    out = [int(e) for e in exact]
    for j in sorted(range(len(sizes)), key=lambda j: exact[j] - out[j], reverse=True)[: n - sum(out)]:
        out[j] += 1
    return out


def schedule(items: Sequence[Item], cfg: OrderConfig, n: int | None = None, seed: int = 0) -> list[int]:
    """The data order: ``n`` indices into ``items`` (default ``len(items)``).

    Rows of domains whose mixing weight is 0 never appear. With ``curriculum`` set, phase ``j``
    occupies a contiguous stretch of the result, easier phases first; with ``mixing`` set, each
    stretch holds the domains in their weights' proportions (± 1 row).

    Raises:
        ConfigError: static weights that match no domain (from :func:`domain_weights`).
    """
    n = len(items) if n is None else n
    counts: dict[str, int] = {}
    for x in items:
        counts[x.domain] = counts.get(x.domain, 0) + 1
    weights = domain_weights(counts, cfg.mixing, cfg.domain_weights, cfg.mixing_temperature)
    keep = [i for i, x in enumerate(items) if weights.get(x.domain, 0) > 0]
    if not keep or n <= 0:
        return []
    sub = [items[i] for i in keep]
    chunks = phase_chunks(sub, cfg.curriculum, cfg.phases, seed)
    out: list[int] = []
    for chunk, size in zip(chunks, _shares([len(c) for c in chunks], n)):
        if cfg.mixing == "none":
            out += [keep[chunk[j % len(chunk)]] for j in range(size)]
            continue
        queues: dict[str, list[int]] = {}
        for j in chunk:
            queues.setdefault(sub[j].domain, []).append(keep[j])
        out += mix_sequence(queues, weights, size)
    return out


def order_summary(items: Sequence[Item], order: Sequence[int]) -> dict:
    """Rows per domain in ``order`` and the mean pass rate of each quarter (for logs and the report)."""
    per_domain: dict[str, int] = {}
    for i in order:
        per_domain[items[i].domain] = per_domain.get(items[i].domain, 0) + 1
    quarters = []
    for q in range(4):
        part = [items[i].difficulty for i in order[q * len(order) // 4:(q + 1) * len(order) // 4]
                if items[i].difficulty is not None]
        quarters.append(round(sum(part) / len(part), 3) if part else None)
    return {"rows": len(order), "per_domain": per_domain, "mean_pass_rate_by_quarter": quarters}


def order_rows(rows: Sequence[dict], items: Sequence[Item], cfg: OrderConfig, n: int | None,
               seed: int) -> tuple[list[dict], dict]:
    """Rows in :func:`schedule` order (``n`` rows, default one pass), and :func:`order_summary`.

    ``rows`` and ``items`` are aligned. With the default config the rows come back unchanged
    (TRL shuffles them).

    Raises:
        ValueError: ``rows`` and ``items`` differ in length (a wiring bug).
    """
    if len(rows) != len(items):
        raise ValueError(f"{len(rows)} rows but {len(items)} schedule items; they must be aligned")
    if is_default(cfg):
        return list(rows), {}
    if cfg.curriculum == "easy_to_hard" and all(x.difficulty is None for x in items):
        log.warning("curriculum easy_to_hard but no row has a measured pass rate: the order is one shuffled "
                    "phase; enable rl.difficulty to measure pass rates first")
    order = schedule(items, cfg, n, seed)
    return [rows[i] for i in order], order_summary(items, order)
