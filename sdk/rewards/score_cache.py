"""A memo of sandbox rewards: the same completion for the same task is scored once.

The eval stage scores three candidate adapters (SFT-only, RL midway, RL end) on the same
validation and held-out tasks, and close adapters often answer a task with the *identical* text;
expert iteration and self-distillation sample ``k`` answers per task, and short functions come
back identical too. Each such repeat is one more sandbox run (an acme pytest run costs about 0.3
CPU-s) for a verdict already known. :class:`ScoreCache` wraps a ``score(tasks, completions)``
function (:func:`sdk.rewards.tiered.score_batch` over the run's sandbox and reward weights) and
sends it only the ``(task, completion)`` pairs it has not judged yet, repeats inside one batch
included; the rest get the stored :class:`~sdk.rewards.result.RewardResult`.

The key is the task's id, a hash of the whole task record (prompt, verifier, reference, metadata:
integrity checks read the prompt) and the completion's exact text; one cache serves one reward
configuration (the wrapped function's weights), so a stage makes its own. Only verdicts about the
code are stored: a result that was not judged (``score=None``: sandbox or toolchain failure,
reward error) or that hit the time limit (a ``timeout`` can come from a busy machine) is scored
again the next time it is asked for.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

from sdk.rewards.result import RewardResult, RewardStatus
from sdk.tasks.records import Task

Score = Callable[[list[Task], list[str]], Sequence[Any]]


def task_hash(task: Task) -> str:
    """SHA-256 (hex) of ``task``'s full JSON record: two records with one id but another verifier,
    prompt or reference get different keys."""
    return hashlib.sha256(task.model_dump_json().encode()).hexdigest()


def reusable(result: Any) -> bool:
    """True when ``result`` is a verdict on the code that a repeat would get again: judged (a score),
    and not a timeout (load-dependent)."""
    return (isinstance(result, RewardResult) and result.score is not None and result.status.judged
            and result.status != RewardStatus.TIMEOUT)


class ScoreCache:
    """``cache(tasks, completions) -> results``: ``score`` called on the pairs not seen before only.

    Args:
        score: ``(tasks, completions) -> results`` aligned with its inputs (one call per batch).
    Attributes:
        hits: results served from the memo (repeats inside a batch included).
        misses: pairs sent to ``score``.
    Raises (when called):
        ValueError: ``tasks`` and ``completions`` differ in length.
        RuntimeError: ``score`` returned another number of results than it was given pairs.
    Thread safety: calls may come from several threads (expert iteration scores in a background
    thread); the memo is guarded by a lock, ``score`` itself runs outside it, so two threads asking
    for one new pair at once may both score it (the second result is kept; both are the same verdict).
    """

    def __init__(self, score: Score) -> None:
        self._score = score
        self._memo: dict[tuple[str, str, str], Any] = {}
        self._hashes: dict[int, tuple[Task, str]] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def _key(self, task: Task, completion: str) -> tuple[str, str, str]:
        got = self._hashes.get(id(task))
        if got is None or got[0] is not task:   # id() reused by another object: hash afresh
            got = (task, task_hash(task))
            self._hashes[id(task)] = got
        return task.id, got[1], completion

    def __call__(self, tasks: Sequence[Task], completions: Sequence[str]) -> list[Any]:
        if len(tasks) != len(completions):
            raise ValueError(f"{len(tasks)} tasks and {len(completions)} completions: pass one completion per task")
        with self._lock:
            keys = [self._key(t, c) for t, c in zip(tasks, completions)]
            first: dict[tuple[str, str, str], int] = {}
            for i, k in enumerate(keys):
                if k not in self._memo and k not in first:
                    first[k] = i
        todo = list(first.values())
        fresh = list(self._score([tasks[i] for i in todo], [completions[i] for i in todo])) if todo else []
        if len(fresh) != len(todo):
            raise RuntimeError(f"score returned {len(fresh)} results for {len(todo)} completions")
        new = {keys[i]: res for i, res in zip(todo, fresh)}
        with self._lock:
            self.misses += len(todo)
            self.hits += len(keys) - len(todo)
            self._memo.update((k, r) for k, r in new.items() if reusable(r))
            return [new[k] if k in new else self._memo[k] for k in keys]


__all__ = ["ScoreCache", "reusable", "task_hash"]
