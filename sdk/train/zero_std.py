"""Drop GRPO groups whose rewards have no variance, during training (DAPO's "dynamic sampling").

A group whose completions all get the same reward has advantage 0 everywhere: no policy gradient,
but its tokens still count in the loss normaliser of the ``bnpo`` and ``dapo`` loss types (and in the
KL term when ``beta > 0``), which dilutes the signal from the groups that do differ (DAPO, Yu et al.
2025, arXiv:2503.14476, section 3.2). :class:`ZeroStdDroppingGRPOTrainer` zeroes the completion mask
of every such group after TRL has scored the batch, the way TRL's own ``mask_truncated_completions``
drops a completion, and recounts ``num_items_in_batch`` (the ``dapo`` normaliser) over the kept tokens.

What a drop does per loss type (TRL 1.16 ``GRPOTrainer._compute_loss``): ``dapo`` and ``bnpo`` average
over the kept tokens only; ``grpo`` still averages over all sequences (a dropped row adds 0) and
``dr_grpo`` divides by a constant, so for those two a drop only removes the KL term of dropped rows.
A step whose groups are all dropped has an all-zero mask: every loss type then gives exactly 0 (TRL
clamps each normaliser to >= 1) and no NaN; TRL logs ``None`` for the per-sequence clip minima.

Deviations from DAPO:
- DAPO over-samples and refills the batch with groups that have variance; we only drop, so a step
  trains on fewer groups (there is no re-generation hook in TRL 1.16).
- The test is "the group's judged rewards are all equal" (weighted sum over reward functions, as
  TRL aggregates them; unscorable rows ignored), not "all advantages are exactly 0": in float32, TRL
  gives identical rewards such as 0.7 x 8 advantages of about 6e-4, not 0 (measured; their std is
  ~6e-8, which TRL's ``frac_reward_zero_std`` also misses: it uses ``isclose(std, 0)``, atol 1e-8).
Groups are decided on the rewards of all processes (TRL gathers them), so a local batch that is not a
whole number of groups is handled too.

Logged per step (``trainer.state.log_history``): ``zero_std/dropped_groups`` (count, all processes)
and ``zero_std/groups``; :func:`sdk.train.difficulty.zero_std_summary` adds them up.
"""

from __future__ import annotations

import logging

import torch
from trl import GRPOTrainer

log = logging.getLogger(__name__)


def weighted_rewards(rewards_per_func: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """TRL's reward aggregation: ``sum_k w_k * r_k`` over the judged functions; NaN where none judged.

    Args:
        rewards_per_func: float, shape (B, K); NaN where function k could not judge completion b.
        weights: float, shape (K,).
    Returns:
        float, shape (B,).
    """
    out = (rewards_per_func * weights.to(rewards_per_func.device).unsqueeze(0)).nansum(dim=1)
    out[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan
    return out


def zero_variance_groups(rewards: torch.Tensor, num_generations: int) -> torch.Tensor:
    """Which groups have no reward variance: their judged rewards are all equal (exact comparison).

    A group with at most one judged reward also counts (TRL gives it advantage 0: no baseline).
    Args:
        rewards: float, shape (B,), NaN = unscorable; groups are contiguous runs of ``num_generations``.
        num_generations: group size G.
    Returns:
        bool, shape (B // G,).
    Raises:
        ValueError: B is not a multiple of G.
    """
    if rewards.numel() % num_generations:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {num_generations}")
    grouped = rewards.view(-1, num_generations)
    judged = ~torch.isnan(grouped)
    hi = torch.where(judged, grouped, torch.full_like(grouped, -torch.inf)).amax(dim=1)
    lo = torch.where(judged, grouped, torch.full_like(grouped, torch.inf)).amin(dim=1)
    return (hi == lo) | (judged.sum(dim=1) <= 1)


def drop_rows(completion_mask: torch.Tensor, drop: torch.Tensor) -> torch.Tensor:
    """``completion_mask`` with the rows where ``drop`` is True set to 0.

    Args:
        completion_mask: int, shape (B, T).
        drop: bool, shape (B,).
    Returns:
        a new tensor, same shape and dtype.
    """
    return completion_mask * (~drop).unsqueeze(1).to(completion_mask.dtype)


def local_drop_rows(group_drop: torch.Tensor, num_generations: int, process_index: int, local_rows: int
                    ) -> torch.Tensor:
    """This process's rows to drop: group flags of the gathered batch, expanded to rows and sliced
    the way TRL slices advantages (process p holds rows ``[p * local_rows, (p + 1) * local_rows)``).

    Returns:
        bool, shape (local_rows,).
    """
    rows = group_drop.repeat_interleave(num_generations)
    return rows[process_index * local_rows:(process_index + 1) * local_rows]


class ZeroStdDroppingGRPOTrainer(GRPOTrainer):
    """TRL's ``GRPOTrainer`` that drops zero-variance groups from the loss (see the module docstring).

    Args:
        drop_zero_std_groups: False = exactly TRL's behaviour (nothing masked, nothing extra logged).
        *args, **kwargs: ``GRPOTrainer``'s.
    """

    def __init__(self, *args, drop_zero_std_groups: bool = True, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.drop_zero_std_groups = drop_zero_std_groups
        self._scored: torch.Tensor | None = None

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        """TRL's rewards of all processes, shape (B_global, K); kept for :meth:`_drop_zero_std`."""
        self._scored = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        return self._scored

    def _generate_and_score_completions(self, inputs):
        """TRL's generation and scoring, then (training only) the zero-variance groups masked out."""
        training = self.model.training
        self._scored = None
        out = super()._generate_and_score_completions(inputs)
        if self.drop_zero_std_groups and training and self._scored is not None:
            self._drop_zero_std(out)
        self._scored = None
        return out

    def _drop_zero_std(self, out: dict) -> None:
        """Zero the completion mask of zero-variance groups in ``out``, recount ``num_items_in_batch``, log."""
        mask, n = out["completion_mask"], self.num_generations
        rewards = weighted_rewards(self._scored, self.reward_weights)
        if rewards.numel() != mask.size(0) * self.accelerator.num_processes or rewards.numel() % n:
            log.warning("zero-variance groups not dropped this step: %d rewards for %d local rows x %d processes "
                        "(groups of %d)", rewards.numel(), mask.size(0), self.accelerator.num_processes, n)
            return
        groups = zero_variance_groups(rewards, n)
        drop = local_drop_rows(groups, n, self.accelerator.process_index, mask.size(0))
        out["completion_mask"] = drop_rows(mask, drop)
        loss_mask = out["completion_mask"] * out["tool_mask"] if "tool_mask" in out else out["completion_mask"]
        out["num_items_in_batch"] = self.accelerator.gather(loss_mask.sum()).sum()
        self._metrics["train"]["zero_std/dropped_groups"].append(float(groups.sum().item()))
        self._metrics["train"]["zero_std/groups"].append(float(groups.numel()))
