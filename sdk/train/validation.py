"""The validation split: train tasks set aside to steer choices, so held-out tasks never do.

Issue 15's honesty rule: early stopping (the GRPO held-out watch), arm selection (the schedule
comparison's probe) and any tuning read a *validation* split carved from train, never the
held-out split the report's verdict rests on. :func:`carve_validation` takes a share of the
train tasks that carry an automatic verifier, chosen by a seeded hash of each task's logic key
(:func:`sdk.tasks.split.logic_key`, the key the held-out split uses: the same tasks for the same
seed whatever the order of the task set, and whatever the prompt shows: with repository context
on or off, one validation split and one fit set, so two prompt formats compare as arms on the same
training tasks; a hash of the task id, which covers the prompt, carved a different set for each);
SFT, GRPO and expert iteration then train on the rest only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from sdk.tasks.records import Task
from sdk.tasks.split import logic_key


def _unit(key: str, seed: int) -> float:
    digest = hashlib.sha256(f"validation:{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def carve_validation(train: Sequence[Task], fraction: float, seed: int = 0) -> tuple[list[Task], list[Task]]:
    """``(fit, validation)``: about ``fraction`` of the verifiable ``train`` tasks go to validation.

    Args:
        train: the train split.
        fraction: in [0, 1); 0 gives no validation tasks.
        seed: the run's seed.
    Returns:
        Both lists in the input order; tasks without an automatic verifier always stay in ``fit``.
    """
    if fraction <= 0:
        return list(train), []
    fit, val = [], []
    for t in train:
        (val if t.verifier.kind != "reference" and _unit(logic_key(t), seed) < fraction else fit).append(t)
    return fit, val


def validation_record(fraction: float, fit: Sequence[Task], validation: Sequence[Task], used_for: Sequence[str],
                      probe_split: str) -> dict[str, Any]:
    """What the report's honesty section shows about the split: sizes, what steered on it, and
    which split the training probe read (``validation``, or ``heldout`` when none was carved)."""
    return {"fraction": fraction, "train_tasks": len(fit), "validation_tasks": len(validation),
            "used_for": list(used_for), "probe_split": probe_split}
