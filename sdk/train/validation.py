"""The validation split: train tasks set aside to steer choices, so held-out tasks never do.

Issue 15's honesty rule: early stopping (the GRPO held-out watch), arm selection (the schedule
comparison's probe) and any tuning read a *validation* split carved from train, never the
held-out split the report's verdict rests on. :func:`carve_validation` takes a share of the
train tasks that carry an automatic verifier, per top-level domain, chosen by a seeded hash of each task's logic key
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
    """``(fit, validation)``: ``fraction`` of the verifiable ``train`` tasks of each top-level domain
    (``acme`` of ``acme/money``) go to validation, ``round(fraction × n)`` of its ``n``: those with the
    lowest seeded hash of their logic key, so validation mirrors the train mix (a plain threshold on
    the hash took 10 of the quickstart's 28 ``general`` tasks, a third of its self-distillation pool).

    Args:
        train: the train split.
        fraction: in [0, 1); 0 gives no validation tasks.
        seed: the run's seed.
    Returns:
        Both lists in the input order; tasks without an automatic verifier always stay in ``fit``.
    """
    if fraction <= 0:
        return list(train), []
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(train):
        if t.verifier.kind != "reference":
            groups.setdefault(t.domain.split("/")[0], []).append(i)
    chosen: set[int] = set()
    for members in groups.values():
        ranked = sorted(members, key=lambda i: (_unit(logic_key(train[i]), seed), train[i].id))
        chosen.update(ranked[:round(fraction * len(members))])
    return ([t for i, t in enumerate(train) if i not in chosen], [t for i, t in enumerate(train) if i in chosen])


def validation_record(fraction: float, fit: Sequence[Task], validation: Sequence[Task], used_for: Sequence[str],
                      probe_split: str) -> dict[str, Any]:
    """What the report's honesty section shows about the split: sizes, what steered on it, and
    which split the training probe read (``validation``, or ``heldout`` when none was carved)."""
    return {"fraction": fraction, "train_tasks": len(fit), "validation_tasks": len(validation),
            "used_for": list(used_for), "probe_split": probe_split}
