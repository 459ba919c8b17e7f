"""What a training run hands back: :class:`TrainResult`, a frozen record free of torch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class TrainResult:
    """One trainer run (SFT, DPO or GRPO) after its adapter was saved.

    Attributes:
        stage: ``sft``, ``dpo`` or ``rl``.
        steps: optimizer steps trained (TRL's ``global_step``).
        rows: training rows (prompt-completion rows, preference pairs or prompts).
        tokens_trained: tokens the trainer consumed (TRL's ``num_tokens``; 0 where not counted).
        tokens_generated: completion tokens generated during training (GRPO).
        log_history: the trainer's log history, one dict per logged step (TRL's keys).
        details: stage-specific summary, JSON-able (SFT: ``lengths``; GRPO: ``order``, ``zero_std``).
    """

    stage: str
    steps: int
    rows: int
    tokens_trained: int = 0
    tokens_generated: int = 0
    log_history: tuple[Mapping[str, Any], ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """Steps, rows and details as one plain dict (what a stage marker records)."""
        return {"steps": self.steps, "rows": self.rows, **dict(self.details)}
