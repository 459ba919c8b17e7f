"""run_batched keeps the sandbox busy across chunk ends (two chunks in flight), with results in
request order and progress reported per chunk in order (issue 15, demo time: tasks stage)."""

import threading

from sdk.sandbox.contract import ExecRequest, ExecResult, ExecStatus
from sdk.tasks.validate import run_batched
from sdk.types import Language


class TwoAtOnceSandbox:
    """Answers each request with its solution in ``detail``; the first chunk waits (up to 30 s)
    until a second chunk has arrived, which a chunk-at-a-time loop never sends."""

    def __init__(self):
        self.calls, self.lock, self.second = [], threading.Lock(), threading.Event()

    def run(self, requests):
        with self.lock:
            self.calls.append(len(requests))
            first = len(self.calls) == 1
            if not first:
                self.second.set()
        self.overlapped = self.second.wait(timeout=30) if first else getattr(self, "overlapped", None)
        return [ExecResult(status=ExecStatus.OK, detail=r.solution) for r in requests]


def test_two_chunks_in_flight_results_in_order():
    reqs = [ExecRequest(language=Language.PYTHON, solution=f"x = {i}", tests={"test_x.py": "def test(): pass"})
            for i in range(7)]
    sandbox, advanced = TwoAtOnceSandbox(), []
    out = run_batched(sandbox, reqs, advanced.append, chunk=3)
    assert [r.detail for r in out] == [f"x = {i}" for i in range(7)]
    assert advanced == [3, 3, 1] and sorted(sandbox.calls) == [1, 3, 3]
    assert sandbox.overlapped is True
