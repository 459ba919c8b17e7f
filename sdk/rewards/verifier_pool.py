"""Verifier workers that can be killed: answer checks and judges run here, never in the caller.

Field cases W1 and W2. A verifier that limits its own time with ``signal.alarm`` fails off the
main thread; one that never returns holds whatever runs it. So every answer check and judge
call runs in a worker *process* (:mod:`sdk.rewards._verifier_worker`, started with
``python -m``, so no ``__main__`` is re-imported and nothing is forked from a threaded
trainer), at most ``workers`` at a time, each with a deadline the parent enforces:

- past its deadline a call's worker is killed (SIGKILL) and replaced; the call's outcome is
  ``timeout`` and its input (the pickled call) is remembered, so the same input is answered
  ``timeout`` at once next time instead of hanging a worker again (never retried forever);
- a call that raises, or whose worker dies, is ``error``; a call that cannot be pickled
  (a lambda judge) is ``error`` with the fix;
- the other calls go on in the other workers and finish on time.

No signal is used in the caller, so this works from any thread (calls are serialised by a lock).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import pickle
import selectors
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sdk.errors import RewardError
from sdk.rewards._verifier_worker import read_frame, write_frame

PRELOAD = ("sdk.rewards.tiered",)
_MAX_HUNG = 10_000


@dataclass(frozen=True)
class Outcome:
    """One call's outcome: ``status`` ``ok`` (``value`` is the return value), ``error`` or
    ``timeout`` (``detail`` says why)."""

    status: str
    value: Any = None
    detail: str = ""


class _Worker:
    def __init__(self, startup_s: float) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "sdk.rewards._verifier_worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, bufsize=0, env=dict(os.environ))
        write_frame(self.proc.stdin, pickle.dumps((list(sys.path), PRELOAD)))
        self.startup_s = startup_s

    def wait_ready(self) -> None:
        """Block until the worker has imported :data:`PRELOAD`; ``RewardError`` if it cannot."""
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout.fileno(), selectors.EVENT_READ)
            ready = sel.select(self.startup_s)
        frame = read_frame(self.proc.stdout) if ready else None
        if frame is None or pickle.loads(frame)[0] != "ready":
            self.kill()
            raise RewardError(f"a verifier worker did not start within {self.startup_s:g} s "
                              f"(exit {self.proc.returncode})",
                              "check that `python -m sdk.rewards._verifier_worker` runs and can import sdk")

    def kill(self) -> None:
        """Kill the worker process if it still runs, reap it and close its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for fh in (self.proc.stdin, self.proc.stdout):
            try:
                fh.close()
            except OSError:
                pass


class VerifierPool:
    """Up to ``workers`` verifier processes with per-call deadlines (see the module docstring).

    Args:
        workers: worker processes (started on demand, kept for later calls).
        timeout_s: default seconds per call.
        startup_s: seconds a new worker may take to start and import :data:`PRELOAD`.
    """

    def __init__(self, workers: int = 8, timeout_s: float = 10.0, startup_s: float = 60.0) -> None:
        self.workers, self.timeout_s, self.startup_s = workers, timeout_s, startup_s
        self._idle: list[_Worker] = []
        self._hung: set[str] = set()
        self._lock = threading.Lock()
        self.killed = 0  # workers killed at a deadline
        self.started = 0

    def run(self, calls: Sequence[tuple[Callable[..., Any], tuple]], timeout_s: float | None = None) -> list[Outcome]:
        """Run ``fn(*args)`` for each call, concurrently; one :class:`Outcome` per call, in order."""
        timeout = self.timeout_s if timeout_s is None else timeout_s
        out: list[Outcome | None] = [None] * len(calls)
        todo: deque[tuple[int, bytes, str]] = deque()
        for i, call in enumerate(calls):
            try:
                payload = pickle.dumps(call)
            except Exception as exc:  # noqa: BLE001 - a lambda or a live client
                out[i] = Outcome("error", detail=f"the verifier cannot be sent to a worker process: {exc}; "
                                                 "fix: make it a module-level function or a picklable object")
                continue
            key = hashlib.sha256(payload).hexdigest()
            if key in self._hung:
                out[i] = Outcome("timeout", detail="this input hung a verifier before; not run again")
            else:
                todo.append((i, payload, key))
        with self._lock:
            self._grow(min(self.workers, len(todo)))
            self._dispatch(todo, out, timeout)
        return [o or Outcome("error", detail="lost") for o in out]

    def _dispatch(self, todo: deque, out: list, timeout: float) -> None:
        sel = selectors.DefaultSelector()
        busy: dict[int, tuple[_Worker, int, str, float]] = {}
        try:
            while todo or busy:
                while todo and len(busy) < self.workers:
                    i, payload, key = todo.popleft()
                    worker = self._take()
                    try:
                        write_frame(worker.proc.stdin, payload)
                    except OSError as exc:
                        worker.kill()
                        out[i] = Outcome("error", detail=f"verifier worker lost: {exc}")
                        continue
                    fd = worker.proc.stdout.fileno()
                    busy[fd] = (worker, i, key, time.monotonic() + timeout)
                    sel.register(fd, selectors.EVENT_READ)
                wait = min(d for _, _, _, d in busy.values()) - time.monotonic() if busy else 0
                for sk, _ in sel.select(max(wait, 0.0)):
                    worker, i, key, _ = busy.pop(sk.fd)
                    sel.unregister(sk.fd)
                    out[i] = self._receive(worker)
                now = time.monotonic()
                for fd in [fd for fd, (_, _, _, d) in busy.items() if d <= now]:
                    worker, i, key, _ = busy.pop(fd)
                    sel.unregister(fd)
                    worker.kill()
                    self.killed += 1
                    if len(self._hung) < _MAX_HUNG:
                        self._hung.add(key)
                    out[i] = Outcome("timeout", detail=f"verifier passed its {timeout:g} s deadline; its worker "
                                                       "was killed and replaced")
        finally:
            sel.close()
            for worker, *_ in busy.values():
                worker.kill()

    def _grow(self, n: int) -> None:
        """Start workers (in parallel) until ``n`` are idle."""
        new = [_Worker(self.startup_s) for _ in range(n - len(self._idle))]
        self.started += len(new)
        for worker in new:
            worker.wait_ready()
            self._idle.append(worker)

    def _take(self) -> _Worker:
        if not self._idle:
            self._grow(1)
        return self._idle.pop()

    def _receive(self, worker: _Worker) -> Outcome:
        """Read a call's reply; a worker that died is discarded."""
        try:
            frame = read_frame(worker.proc.stdout)
            reply = pickle.loads(frame) if frame is not None else None
        except Exception as exc:  # noqa: BLE001
            reply = ("error", f"unreadable reply: {exc}")
        if reply is None:
            worker.kill()
            return Outcome("error", detail=f"verifier worker died (exit {worker.proc.returncode})")
        self._idle.append(worker)
        return Outcome("ok", value=reply[1]) if reply[0] == "ok" else Outcome("error", detail=str(reply[1]))

    def close(self) -> None:
        """Stop every idle worker (a later :meth:`run` starts new ones)."""
        with self._lock:
            for worker in self._idle:
                worker.kill()
            self._idle.clear()


_SHARED: dict[int, VerifierPool] = {}
_SHARED_LOCK = threading.Lock()


def shared_pool(workers: int = 8) -> VerifierPool:
    """This process's pool with ``workers`` workers (built on first use, closed at exit)."""
    with _SHARED_LOCK:
        if workers not in _SHARED:
            _SHARED[workers] = VerifierPool(workers)
            atexit.register(_SHARED[workers].close)
        return _SHARED[workers]


def require(outcome: Outcome, what: str) -> Any:
    """``outcome.value``, or :class:`RewardError` naming ``what`` (for self-tests)."""
    if outcome.status != "ok":
        raise RewardError(f"{what}: {outcome.status}: {outcome.detail}",
                          "check that `python -m sdk.rewards._verifier_worker` can start and import sdk")
    return outcome.value


def judged(judge: Callable[..., float | None], task: Any, completion: str) -> Any:
    """Run a reward model / LLM ``judge`` on one sample (in a worker): a ``judged_unverified``
    :class:`~sdk.rewards.result.RewardResult` (flag ``not_verifiable``), or ``not_verifiable``
    when the judge returns ``None``. Raises ``ValueError`` for a non-finite judgement."""
    import math

    from sdk.rewards.result import RewardResult, RewardStatus

    value = judge(task, completion)
    if value is None:
        return RewardResult.not_judged(RewardStatus.NOT_VERIFIABLE, "the judge could not score this completion")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"judge returned {value}")
    return RewardResult(score=value, components={"judge": value}, status=RewardStatus.JUDGED_UNVERIFIED,
                        flags=("not_verifiable",), detail="scored by a judge, not by a verifier")


def verdicts(pool: VerifierPool, calls: Sequence[tuple[Callable[..., Any], tuple]], timeout_s: float,
             retries: int = 1) -> list[Any]:
    """Each call's :class:`~sdk.rewards.result.RewardResult` from ``pool``: a call that raised
    (or whose worker died) is re-run up to ``retries`` times, then ``verifier_error``; one past
    its deadline is ``verifier_timeout`` at once (never re-run); both carry ``score=None``."""
    from sdk.rewards.result import RewardResult, RewardStatus

    outcomes = pool.run(calls, timeout_s)
    for _ in range(retries):
        again = [i for i, o in enumerate(outcomes) if o.status == "error"]
        if not again:
            break
        for i, o in zip(again, pool.run([calls[i] for i in again], timeout_s)):
            outcomes[i] = o
    out = []
    for o in outcomes:
        if o.status == "ok" and isinstance(o.value, RewardResult):
            out.append(o.value)
        elif o.status == "timeout":
            out.append(RewardResult.not_judged(RewardStatus.VERIFIER_TIMEOUT, o.detail))
        else:
            detail = o.detail if o.status == "error" else f"the verifier returned {type(o.value).__name__}"
            out.append(RewardResult.not_judged(RewardStatus.VERIFIER_ERROR, detail))
    return out
