"""What a stage receives: :class:`StageContext` (frozen), and :class:`RunInputs`, the run's files
read once and shared by the stages of one invocation.

A stage function is ``def stage_x(ctx: StageContext) -> StageStats``: everything it may use is a
field here, so a reader sees a stage's inputs in its signature instead of a service locator.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sdk.errors import SourceError
from sdk.run.layout import RunLayout
from sdk.run.shipped import shipped_adapter

if TYPE_CHECKING:
    from sdk.config import RunConfig
    from sdk.sandbox.contract import Sandbox
    from sdk.sources import SftExample
    from sdk.tasks.taskset import TaskSet


class RunInputs:
    """The tasks stage's outputs, each read from disk once and re-read only when the file changed
    (its size or modification time), so every stage of one invocation shares one parsed copy.
    """

    def __init__(self, layout: RunLayout) -> None:
        self.layout = layout
        self._cache: dict[str, tuple[Any, Any]] = {}

    def forget(self) -> None:
        """Drop what was read."""
        self._cache.clear()

    def _once(self, key: str, path: Path, load: Callable[[], Any]) -> Any:
        try:
            st = path.stat()
            stamp: Any = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        hit = self._cache.get(key)
        if hit is None or hit[0] != stamp:
            hit = (stamp, load())
            self._cache[key] = hit
        return hit[1]

    def taskset(self) -> "TaskSet":
        """The task set (``tasks/tasks.jsonl``)."""
        from sdk.tasks.taskset import TaskSet

        return self._once("taskset", self.layout.tasks_jsonl, lambda: TaskSet.load(self.layout.tasks_jsonl))

    def sft_examples(self) -> list["SftExample"]:
        """The SFT examples of feedback sources (``[]`` when the file is missing)."""
        from sdk.jsonl import read_models
        from sdk.sources import SftExample

        return self._once("examples", self.layout.sft_examples_jsonl, lambda: read_models(
            self.layout.sft_examples_jsonl, SftExample, SourceError,
            "re-run the tasks stage (`tuneloop tasks build CONFIG --force`) to rewrite the file", missing_ok=True))

    def counts(self) -> dict[str, Any]:
        """``tasks/counts.json`` (``{}`` when missing or unreadable: the tasks stage has not run)."""
        def load() -> dict[str, Any]:
            try:
                data = json.loads(self.layout.counts_json.read_text())
            except (OSError, json.JSONDecodeError):
                return {}
            return data if isinstance(data, dict) else {}

        return self._once("counts", self.layout.counts_json, load)


@dataclass(frozen=True)
class StageContext:
    """Everything one stage may use.

    Attributes:
        cfg: the validated run config.
        layout: the run folder's paths.
        inputs: the tasks stage's outputs, read once.
        console: where progress and summaries go (stderr).
        progress: show progress bars.
        fingerprint: this stage's fingerprint (recorded in adapter lineage).
        complete: the stages whose markers match their fingerprint when this stage started.
        model_path: the resolved base model folder ("" for stages that need no model).
        sandbox: the run's one sandbox (None for stages that execute no code).
        scorers: memo of :meth:`score` (one :class:`sdk.rewards.score_cache.ScoreCache` per stage run).
    """

    cfg: "RunConfig"
    layout: RunLayout
    inputs: RunInputs
    console: Console
    progress: bool = True
    fingerprint: str = ""
    complete: frozenset[str] = field(default_factory=frozenset)
    model_path: str = ""
    sandbox: "Sandbox | None" = None
    scorers: list = field(default_factory=list, repr=False, compare=False)

    def need_sandbox(self) -> "Sandbox":
        """The sandbox; a stage asking for it without declaring ``needs_sandbox`` is a bug."""
        if self.sandbox is None:
            raise RuntimeError("this stage's StageSpec does not declare needs_sandbox=True")
        return self.sandbox

    def score(self, tasks: list, completions: list[str]) -> list:
        """The run's sandboxed tiered reward (:func:`sdk.rewards.tiered.score_batch` with ``cfg.reward``)
        of ``completions[i]`` on ``tasks[i]``, through this stage's one
        :class:`~sdk.rewards.score_cache.ScoreCache`: a completion already judged for the same task is
        not run again (same result). Raises as :meth:`need_sandbox` and ``score_batch``."""
        if not self.scorers:
            from sdk.rewards.score_cache import ScoreCache
            from sdk.rewards.tiered import score_batch

            sandbox, weights = self.need_sandbox(), self.cfg.reward
            self.scorers.append(ScoreCache(lambda ts, cs: score_batch(ts, cs, sandbox, weights)))
        return self.scorers[0](tasks, completions)

    def bar(self, label: str, total: int) -> Progress:
        """A rich progress bar with one task of ``total`` steps (disabled when ``progress`` is off)."""
        prog = _LoggedProgress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                               console=self.console, disable=not self.progress)
        prog.add_task(label, total=total)
        return prog


class _LoggedProgress(Progress):
    """A rich bar that also writes ``validating references: 48/360 (13 %, 95 s)`` on the
    ``tuneloop.progress`` logger at each tenth of the way: that logger reaches stderr only where the
    live bar does not render (not a terminal: CI, a log file, ``| tee``; see :mod:`sdk.run.output`),
    where a 16-minute ``tasks build`` printed nothing between reading and the summary."""

    def add_task(self, description: str, *args: Any, total: float | None = 100.0, **kwargs: Any):
        """Rich's ``add_task``; remembers the label, total and start for the log lines."""
        self._log = (description, total or 0, time.monotonic(), 0)
        return super().add_task(description, *args, total=total, **kwargs)

    def advance(self, task_id, advance: float = 1) -> None:
        """Rich's ``advance``, then a log line when a new tenth of the total is reached."""
        super().advance(task_id, advance)
        label, total, start, shown = self._log
        done = self.tasks[0].completed if self.tasks else 0
        step = int(10 * done / total) if total else 0
        if step > shown:
            self._log = (label, total, start, step)
            logging.getLogger("tuneloop.progress").info(
                f"{label}: {done:.0f}/{total:.0f} ({100 * done / total:.0f} %, {time.monotonic() - start:.0f} s)")


def adapter_for_eval(cfg: "RunConfig", layout: RunLayout) -> Path | None:
    """The adapter the run ships as ``tuned`` (:func:`sdk.run.shipped.shipped_adapter`): the one chosen
    on the validation split (``eval.select: validation``), else the newest (RL's, else SFT's), else None."""
    return shipped_adapter(cfg, layout)
