"""The RL-midway checkpoint: the adapter saved at half the training budget, an evaluated point of
the benefit curve (issue 15: base, SFT, RL midway, RL end against compute).

TRL's own checkpoints under ``<stage>/checkpoints`` rotate (``save_total_limit``) and fall on
``save_steps`` multiples, so the midway point is saved on its own by :class:`MidwaySaver`, with the
process CPU seconds spent in training up to it (the compute axis of the curve).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback


def midway_step(max_steps: int) -> int:
    """The step the midway adapter is saved at: ``max_steps // 2``, at least 1."""
    return max(1, max_steps // 2)


class MidwaySaver(TrainerCallback):
    """Save the trained adapter once, at ``step``, into ``out`` (a PEFT adapter folder).

    Args:
        out: the folder (``RunLayout.midway_adapter(stage)``); replaced when it exists.
        step: the global step to save at (:func:`midway_step`).
    Attributes:
        record: after the save, ``{"step": n, "compute_s": CPU seconds of this process since
            training began}``; ``{}`` before it (e.g. a resumed run past the step).
    """

    def __init__(self, out: Path, step: int) -> None:
        self.out, self.step = Path(out), step
        self.record: dict[str, Any] = {}
        self._cpu0 = time.process_time()

    def on_train_begin(self, args, state, control, **kwargs):  # noqa: D102 - TrainerCallback hook
        """Start the compute clock."""
        self._cpu0 = time.process_time()

    def on_step_end(self, args, state, control, model=None, **kwargs):  # noqa: D102 - TrainerCallback hook
        """At ``step``, save the adapter and record the compute spent so far."""
        if state.global_step == self.step and model is not None and state.is_world_process_zero:
            save_adapter(model, self.out)
            self.record = {"step": self.step, "compute_s": time.process_time() - self._cpu0}


def save_adapter(model, out: Path) -> Path:
    """Write ``model``'s PEFT adapter to ``out`` (an emptied folder); returns ``out``."""
    import shutil

    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    return out
