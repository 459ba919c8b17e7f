"""Run bookkeeping: what a stage cost and the markers that say it finished (no torch, no sdk).

:class:`StageStats` is what every stage function returns; the pipeline fills in the clock
(:class:`StageClock`) and writes it into the stage's marker ``state/<stage>.json`` next to the
fingerprint it ran under.
"""

from __future__ import annotations

import json
import resource
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sdk.jsonl import write_json


@dataclass(frozen=True)
class StageStats:
    """Cost and summary of one stage.

    Attributes:
        stage: the stage name.
        wall_s, cpu_s: seconds of wall clock and CPU (own process and waited-for children).
        tokens_trained, tokens_generated: tokens through the trainer / produced by generation.
        extra: stage-specific summary written into the marker (JSON-able; ``log_history`` is left
            out of the marker because it has its own file).
        output: what the stage hands back to the caller and never writes to the marker (the report
            stage: its :class:`sdk.eval.report.EvalReport`).
    """

    stage: str
    wall_s: float = 0.0
    cpu_s: float = 0.0
    tokens_trained: int = 0
    tokens_generated: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    output: Any = None

    def timed(self, clock: "StageClock") -> "StageStats":
        """A copy carrying the clock's wall and CPU seconds."""
        return replace(self, wall_s=clock.wall_s, cpu_s=clock.cpu_s)

    def marker_stats(self) -> dict[str, Any]:
        """The flat mapping stored under ``stats`` in the marker."""
        data: dict[str, Any] = {"stage": self.stage, "wall_s": self.wall_s, "cpu_s": self.cpu_s,
                                "tokens_trained": self.tokens_trained, "tokens_generated": self.tokens_generated}
        data.update({k: v for k, v in self.extra.items() if k != "log_history"})
        return data


class StageClock:
    """Context manager measuring wall and CPU seconds (own + children) of a stage.

    After the ``with`` block, ``wall_s`` and ``cpu_s`` hold the seconds spent inside it.
    """

    def __init__(self) -> None:
        self.wall_s = 0.0
        self.cpu_s = 0.0

    def __enter__(self) -> "StageClock":
        self._wall, self._cpu = time.perf_counter(), _cpu_seconds()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall_s += time.perf_counter() - self._wall
        self.cpu_s += _cpu_seconds() - self._cpu


def _cpu_seconds() -> float:
    """CPU seconds of this process and its waited-for children (the sandbox runs count)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def write_marker(path: Path, fingerprint: str, stats: StageStats, inputs: dict[str, Any] | None = None) -> None:
    """Write a completion marker atomically: ``{"fingerprint": ..., "stats": {...}, "inputs": {...}}``
    (``inputs``: what the fingerprint hashed, so a later mismatch can name the settings that changed)."""
    write_json(path, {"fingerprint": fingerprint, "stats": stats.marker_stats(), "inputs": inputs or {}})


def read_marker(path: Path) -> dict[str, Any] | None:
    """The marker's content, or None when it is missing or unreadable (a half-written marker
    counts as not finished)."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None
