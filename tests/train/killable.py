"""Shared by the kill-and-resume tests: a job that stalls once after step 3, and starting, killing and
finishing such a job in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from transformers import TrainerCallback

ROOT = Path(__file__).resolve().parents[2]


class StallOnce(TrainerCallback):
    """Writes ``marker`` after step 3 and sleeps, the first time only (the test kills the job there)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def on_step_end(self, args, state, control, **kwargs):
        """Trainer hook: stall after step 3 unless the marker exists."""
        if state.global_step == 3 and not self.marker.exists():
            self.marker.write_text("stalled after step 3")
            time.sleep(600)  # the test kills us here


def start(job: Path, *args: object, env: dict | None = None) -> subprocess.Popen:
    """``python job *args`` from the repository root, output captured."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.Popen([sys.executable, str(job), *map(str, args)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def kill_when_stalled(proc: subprocess.Popen, marker: Path, timeout_s: float = 240) -> None:
    """Wait for ``marker`` (the job stalled after step 3), then SIGKILL the job."""
    deadline = time.monotonic() + timeout_s
    while not marker.exists():
        assert proc.poll() is None, proc.stderr.read()[-2000:]
        assert time.monotonic() < deadline, "the job never reached step 3"
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def finish(proc: subprocess.Popen) -> dict:
    """Wait for a job; assert it exited 0; its last stdout line as JSON."""
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    return json.loads(out.strip().splitlines()[-1])
