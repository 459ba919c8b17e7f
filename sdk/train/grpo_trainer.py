"""The GRPO trainer tuneloop runs: TRL's ``GRPOTrainer`` with two changes, each in its own place.

1. Zero-variance groups left out of the loss (:class:`sdk.train.zero_std.ZeroStdDroppingGRPOTrainer`).
2. A data order that survives a resume (:class:`EpochRepeatSampler`). TRL 1.16's ``RepeatSampler``
   seeds one generator at construction and draws a new permutation on every pass over the data, so
   epoch ``e`` uses the ``e+1``-th draw. A run resumed from a checkpoint in epoch ``e >= 1`` builds a
   fresh sampler, and ``Trainer`` fast-forwards past the finished epochs without iterating them (it only
   ``skip_first_batches`` within the current epoch), so the resumed run replays epoch 0's order
   (measured: tests/train/test_grpo_resume.py, 4 prompts, 2 per step, killed after step 3 and resumed
   from checkpoint-2: steps 3-6 saw the prompts of steps 1-4). :meth:`EpochRepeatSampler.set_epoch`,
   which accelerate's ``DataLoaderShard`` calls before every pass, re-seeds the generator and draws
   ``e`` permutations first, so epoch ``e`` gets the same order in an uninterrupted run (identical to
   TRL's) and in a resumed one.
"""

from __future__ import annotations

import torch
from trl.trainer.utils import RepeatSampler

from sdk.train.zero_std import ZeroStdDroppingGRPOTrainer


class EpochRepeatSampler(RepeatSampler):
    """TRL's ``RepeatSampler`` whose shuffled order depends only on ``(seed, epoch)``.

    Same arguments as ``RepeatSampler``. Without ``shuffle`` or without a ``seed`` it behaves as TRL's.
    """

    @classmethod
    def like(cls, sampler: RepeatSampler) -> EpochRepeatSampler:
        """An :class:`EpochRepeatSampler` with ``sampler``'s settings (a fresh generator)."""
        return cls(data_source=sampler.data_source, mini_repeat_count=sampler.mini_repeat_count,
                   batch_size=sampler.batch_size, repeat_count=sampler.repeat_count, shuffle=sampler.shuffle,
                   seed=sampler.seed)

    def set_epoch(self, epoch: int) -> None:
        """Put the generator where an uninterrupted run has it at the start of ``epoch`` (0-based):
        re-seed, then draw and discard ``epoch`` permutations (``epoch x len(data)`` numbers)."""
        if not self.shuffle or self.seed is None:
            return
        self.generator.manual_seed(self.seed)
        for _ in range(epoch):
            torch.randperm(self.num_samples, generator=self.generator)


class TuneloopGRPOTrainer(ZeroStdDroppingGRPOTrainer):
    """``GRPOTrainer`` + zero-variance group dropping + a resumable data order (module docstring).

    Args: those of :class:`sdk.train.zero_std.ZeroStdDroppingGRPOTrainer`.
    """

    def _get_train_sampler(self, dataset=None):
        """TRL's sampler as an :class:`EpochRepeatSampler`."""
        return EpochRepeatSampler.like(super()._get_train_sampler(dataset))
