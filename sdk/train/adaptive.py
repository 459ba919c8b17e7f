"""Adaptive domain mixing for GRPO: sampling weights that follow held-out progress while training runs.

``rl.order.mixing: adaptive`` streams the GRPO prompts instead of fixing their order up front: each
prompt's domain is drawn from the current weights, and after every held-out evaluation of
:class:`sdk.train.monitor.HeldoutMonitor` the weights take one exponentiated-gradient step
(:func:`sdk.train.mixing.adaptive_weights`) towards the domains whose held-out reward gained least
since the previous evaluation, after DoReMi (Xie et al. 2023, arXiv:2305.10429), with the held-out
reward gain in place of DoReMi's excess loss. The starting weights are the temperature weights
(``order.mixing_temperature``; T=1 is proportional to the domains' sizes).

The stream is a ``datasets.IterableDataset`` (TRL's GRPOTrainer reproduces its RepeatSampler
grouping on streams); it is unbounded, so GRPO's ``max_steps`` ends it. Accelerate reads one
batch ahead, so a weight change reaches the batches after the next one. Limits: after a resume
from a checkpoint the weights restart from the starting weights (the held-out history is not in
the checkpoint), so the post-resume order is not the uninterrupted run's; the other schedules
keep it.
"""

from __future__ import annotations

import logging
import math
import random
from collections import Counter
from collections.abc import Sequence

from transformers import TrainerCallback

from sdk.train.mixing import adaptive_weights

log = logging.getLogger(__name__)


class AdaptiveMixer:
    """An unbounded, seeded stream of rows whose domain mix follows :meth:`update`.

    Args:
        rows: dataset rows (dicts), aligned with ``domains``.
        domains: the domain of each row.
        weights: starting probability per domain (domains missing or at 0 are never drawn until
            :meth:`update` gives them weight; the floor of :func:`adaptive_weights` does).
        eta: step size of the update, per unit of held-out reward gain.
        floor: minimum probability of each domain after an update.
        seed: seeds the draws and each domain's (cycled, reshuffled) row order.
    Attributes:
        weights: current probabilities; trace: ``[{"step", "gains", "weights"}]`` per update.
    Raises:
        ValueError: ``rows`` and ``domains`` differ in length, or no row has a domain with weight.
    """

    def __init__(self, rows: Sequence[dict], domains: Sequence[str], weights: dict[str, float], eta: float = 2.0,
                 floor: float = 0.02, seed: int = 0) -> None:
        if len(rows) != len(domains):
            raise ValueError(f"{len(rows)} rows but {len(domains)} domains; they must be aligned")
        self.by_domain: dict[str, list[dict]] = {}
        for row, dom in zip(rows, domains):
            self.by_domain.setdefault(dom, []).append(row)
        self.weights = {d: float(weights.get(d, 0.0)) for d in self.by_domain}
        if sum(self.weights.values()) <= 0:
            raise ValueError(f"no domain with rows has weight: rows in {sorted(self.by_domain)}, weights {weights}")
        self.eta, self.floor, self.seed = eta, floor, seed
        self.trace: list[dict] = []
        self.drawn: dict[str, int] = dict.fromkeys(self.by_domain, 0)
        self._last_scores: dict[str, float] | None = None

    def stream(self):
        """Yield rows forever: a domain drawn from the current weights, then that domain's next row."""
        rng = random.Random(self.seed)
        orders = {d: [] for d in self.by_domain}
        domains = sorted(self.by_domain)
        while True:
            dom = rng.choices(domains, weights=[self.weights[d] for d in domains])[0]
            if not orders[dom]:
                orders[dom] = list(range(len(self.by_domain[dom])))
                rng.shuffle(orders[dom])
            self.drawn[dom] += 1
            yield self.by_domain[dom][orders[dom].pop()]

    def dataset(self):
        """The stream as a ``datasets.IterableDataset`` for TRL (the generator reads ``self``, so
        :meth:`update` takes effect on rows not yet drawn)."""
        from datasets import IterableDataset

        mixer = self

        def gen():
            yield from mixer.stream()

        return IterableDataset.from_generator(gen)

    def update(self, step: int, scores: dict[str, float]) -> dict[str, float]:
        """One weight step from a held-out evaluation ``{domain: mean reward}`` taken at ``step``.

        The first call only records the scores (no gain yet). Domains without a score keep their
        relative weight. Returns the new weights.
        """
        if self._last_scores is not None:
            gains = {d: scores[d] - self._last_scores[d] for d in scores
                     if d in self._last_scores and d in self.weights
                     and math.isfinite(scores[d]) and math.isfinite(self._last_scores[d])}
            self.weights = adaptive_weights(self.weights, gains, self.eta, self.floor)
            self.trace.append({"step": step, "gains": gains, "weights": dict(self.weights)})
            log.info("adaptive mixing at step %d: gains %s -> weights %s", step, gains, self.weights)
        # a domain whose probe failed (NaN) keeps its last good score as the baseline
        self._last_scores = {**(self._last_scores or {}), **{d: v for d, v in scores.items() if math.isfinite(v)}}
        return self.weights

    def summary(self) -> dict:
        """For the stage stats: rows drawn per domain, the weight trace and the final weights."""
        return {"mixing": "adaptive", "drawn": dict(self.drawn), "trace": self.trace, "weights": dict(self.weights)}


class AdaptiveMixingCallback(TrainerCallback):
    """Feed each new evaluation of a :class:`~sdk.train.monitor.HeldoutMonitor` to an :class:`AdaptiveMixer`.

    Must come after the monitor in the trainer's callback list (callbacks run in order).
    """

    def __init__(self, mixer: AdaptiveMixer, monitor) -> None:
        self.mixer, self.monitor, self._seen = mixer, monitor, 0

    def _sync(self) -> None:
        for entry in self.monitor.history[self._seen:]:
            self.mixer.update(entry["step"], entry["scores"])
        self._seen = len(self.monitor.history)

    def on_train_begin(self, args, state, control, **kwargs):
        """Trainer hook: take the monitor's evaluation before the first step as the starting point."""
        self._sync()

    def on_step_end(self, args, state, control, **kwargs):
        """Trainer hook: apply any evaluation the monitor made at this step."""
        self._sync()


def adaptive_stream(rows: Sequence[dict], domains: Sequence[str], order_cfg, callbacks: Sequence, seed: int):
    """Set up adaptive mixing for GRPO: ``(mixer, IterableDataset, callback to add after the monitor)``.

    Starting weights: :func:`sdk.train.mixing.domain_weights` in ``temperature`` mode with
    ``order_cfg.mixing_temperature``.

    Raises:
        ConfigError: no :class:`~sdk.train.monitor.HeldoutMonitor` among ``callbacks`` (adaptive mixing
            needs held-out evaluations: set ``rl.heldout.every``).
    """
    from sdk.errors import ConfigError
    from sdk.train.mixing import domain_weights
    from sdk.train.monitor import HeldoutMonitor

    monitor = next((c for c in callbacks if isinstance(c, HeldoutMonitor)), None)
    if monitor is None:
        raise ConfigError("rl.order.mixing is `adaptive` but held-out monitoring is off, so there is no progress "
                          "signal to adapt to", "set rl.heldout.every (e.g. 4), or use mixing: temperature")
    start = domain_weights(Counter(domains), "temperature", temperature=order_cfg.mixing_temperature)
    mixer = AdaptiveMixer(rows, domains, start, eta=order_cfg.adaptive_eta, seed=seed)
    return mixer, mixer.dataset(), AdaptiveMixingCallback(mixer, monitor)
