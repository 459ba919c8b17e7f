"""Aggregation that survives failure: from several reward functions to group advantages.

Pure functions, no model and no torch (NumPy only), so every rule has a hand-computed test.

- ``None`` means *not judged* (R1): :func:`combine` sums the weighted rewards of the functions
  that judged a sample (TRL's ``nansum``) and leaves ``None`` where none did, with a warning.
- :func:`call_safely` runs a reward function; if it raises on the batch, it is re-run one
  sample at a time and only the sample that raises becomes ``None`` (R1: one exception costs
  one sample, never the step).
- :func:`check_rewards` checks length and finiteness before rewards reach advantages.
- :func:`group_advantages` follows verl's ``compute_grpo_outcome_advantage``
  (``trainer/ppo/core_algos.py``): per-group mean, unbiased std, ``(r - mean) / (std + eps)``;
  a group of one gets mean 0 and std 1 (verl). Deviations: masked samples (``None``) get
  advantage 0 and are left out of their group's statistics (as TRL 1.16 does for unscorable
  rows), and a group left with a single judged sample by masking gets 0 (no baseline); a group
  whose judged rewards are all equal gets *exactly* zero advantages and is counted (R4).
  verl computes ``r - mean`` in float32, where the mean of equal values can miss them by an
  ulp; here statistics are computed in float64 and cast to float32 last.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sdk.errors import RewardError

log = logging.getLogger(__name__)


def call_safely(fn: Callable[..., Sequence[float | None]], prompts: Sequence[Any], completions: Sequence[Any],
                **columns: Any) -> tuple[list[float | None], list[str]]:
    """Call a TRL-style reward function, containing exceptions to the samples that raise.

    Args:
        fn: ``fn(prompts=..., completions=..., **columns) -> list[float | None]`` (length B).
        prompts, completions: length B.
        columns: dataset columns, each a list of length B (other values are passed as is).
    Returns:
        ``(rewards, errors)``: B rewards (``None`` where not judged or where the call raised)
        and one ``"index: Type: message"`` string per sample that raised.
    """
    n = len(completions)
    try:
        out = list(fn(prompts=list(prompts), completions=list(completions), **columns))
        check_rewards(out, n)
        return out, []
    except Exception as batch_exc:  # noqa: BLE001 - retry per sample below
        log.warning("reward function %s failed on the batch (%s); scoring samples one by one",
                    getattr(fn, "__name__", type(fn).__name__), batch_exc)
    rewards: list[float | None] = []
    errors: list[str] = []
    for i in range(n):
        cols = {k: ([v[i]] if isinstance(v, list) and len(v) == n else v) for k, v in columns.items()}
        try:
            one = list(fn(prompts=[prompts[i]], completions=[completions[i]], **cols))
            check_rewards(one, 1)
            rewards.append(one[0])
        except Exception as exc:  # noqa: BLE001 - one sample, never the step
            rewards.append(None)
            errors.append(f"{i}: {type(exc).__name__}: {exc}")
    return rewards, errors


def check_rewards(rewards: Sequence[float | None], expected_len: int) -> None:
    """Raise if ``rewards`` has the wrong length or holds NaN/inf or a non-number.

    Raises:
        RewardError: naming the first bad index (``None`` is allowed: not judged).
    """
    if len(rewards) != expected_len:
        raise RewardError(f"reward function returned {len(rewards)} rewards for {expected_len} completions",
                          "return exactly one reward (or None) per completion")
    for i, r in enumerate(rewards):
        if r is None:
            continue
        if isinstance(r, bool) or not isinstance(r, (int, float, np.floating, np.integer)) or not math.isfinite(r):
            raise RewardError(f"reward {i} is {r!r}, not a finite number",
                              "return a finite float, or None when the sample cannot be judged")


def combine(per_function: Sequence[Sequence[float | None]], weights: Sequence[float] | None = None
            ) -> list[float | None]:
    """Weighted sum over the reward functions that judged each sample.

    Args:
        per_function: F lists of length B (one per reward function).
        weights: F weights (default 1.0 each).
    Returns:
        B values; ``None`` where every function returned ``None`` (warned, to be masked).
    Raises:
        RewardError: lists of different lengths or a wrong number of weights.
    """
    if not per_function:
        return []
    n = len(per_function[0])
    weights = list(weights) if weights is not None else [1.0] * len(per_function)
    if len(weights) != len(per_function) or any(len(f) != n for f in per_function):
        raise RewardError("reward lists or weights do not line up",
                          "give one weight per reward function and one reward per completion in each")
    out: list[float | None] = []
    for i in range(n):
        judged = [(w, f[i]) for w, f in zip(weights, per_function) if f[i] is not None]
        out.append(sum(w * float(r) for w, r in judged) if judged else None)
    unjudged = sum(r is None for r in out)
    if unjudged:
        log.warning("%d of %d samples were judged by no reward function; they are masked", unjudged, n)
    return out


@dataclass(frozen=True)
class Advantages:
    """Output of :func:`group_advantages`.

    Attributes:
        values: float32 array, shape (B,): the advantage of each sample (0 where masked).
        mask: bool array, shape (B,): True where the sample was judged.
        groups: number of groups.
        zero_std_groups: groups whose judged rewards were all equal (advantage exactly 0).
        masked: samples with no reward.
    """

    values: np.ndarray
    mask: np.ndarray
    groups: int
    zero_std_groups: int
    masked: int


def group_advantages(rewards: Sequence[float | None], group_ids: Sequence[Hashable] | None = None,
                     group_size: int | None = None, scale: bool = True, eps: float = 1e-6) -> Advantages:
    """GRPO outcome advantages per group (see the module docstring).

    Args:
        rewards: B rewards (float, float32 array or None for not judged).
        group_ids: B group keys (verl's ``index``); or give ``group_size`` for contiguous
            groups of that size (TRL's layout: B must be a multiple).
        scale: divide by the group's std (verl ``norm_adv_by_std_in_grpo``); False gives Dr.GRPO.
        eps: added to the std.
    Returns:
        :class:`Advantages`.
    Raises:
        RewardError: non-finite rewards, mismatched lengths, or neither/both grouping arguments.
    """
    n = len(rewards)
    check_rewards(list(rewards), n)
    if (group_ids is None) == (group_size is None):
        raise RewardError("give exactly one of group_ids or group_size", "pass group_size=num_generations")
    if group_ids is None:
        if group_size <= 0 or n % group_size:
            raise RewardError(f"{n} rewards do not split into groups of {group_size}",
                              "pass a batch whose size is a multiple of num_generations")
        group_ids = [i // group_size for i in range(n)]
    if len(group_ids) != n:
        raise RewardError(f"{len(group_ids)} group ids for {n} rewards", "give one group id per reward")
    mask = np.array([r is not None for r in rewards], dtype=bool)
    values = np.array([float(r) if r is not None else 0.0 for r in rewards], dtype=np.float64)
    adv = np.zeros(n, dtype=np.float64)
    members: dict[Hashable, list[int]] = {}
    for i, g in enumerate(group_ids):
        members.setdefault(g, []).append(i)
    zero_std = 0
    for idx in members.values():
        judged = [i for i in idx if mask[i]]
        if not judged:
            continue
        vals = values[judged]
        if len(idx) == 1:
            mean, std = 0.0, 1.0  # verl: a group of one is compared with 0
        elif len(judged) == 1:
            continue  # the others were masked: no baseline, no signal (as TRL's nanstd gives)
        elif np.all(vals == vals[0]):
            zero_std += 1
            continue  # exactly zero: no signal in this group
        else:
            mean, std = float(vals.mean()), float(vals.std(ddof=1))
        adv[judged] = (vals - mean) / (std + eps) if scale else vals - mean
    return Advantages(values=adv.astype(np.float32), mask=mask, groups=len(members),
                      zero_std_groups=zero_std, masked=int((~mask).sum()))
