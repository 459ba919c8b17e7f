"""A small GRPO job for the resume test: ``python grpo_resume_job.py MODEL OUT_DIR MARKER SEEN``.

Trains 6 steps (checkpoint every 2) on 4 prompts, 2 prompts (groups) per step, so an epoch is 2 steps
and ``checkpoint-2`` sits on an epoch boundary. The reward is pure Python (parity of the completion's
length, no sandbox); it appends what each generation sees (process id, step, prompts, completions) to
``SEEN`` as JSONL. When ``MARKER`` does not exist yet, the job writes it after step 3 and waits, so the
test can SIGKILL it at a known point; re-running the same command must resume from ``checkpoint-2``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from killable import StallOnce

from sdk.config import LoraConfig, RlConfig
from sdk.tasks.records import AnswerVerifier, Message, Source, Task
from sdk.train.grpo import run_grpo


class ParityReward:
    """1.0 when the completion has an even number of characters, else 0.0; logs what it sees."""

    __name__ = "parity"

    def __init__(self, seen: Path) -> None:
        self.seen = seen

    def __call__(self, prompts, completions, trainer_state=None, **kw):
        texts = [c[-1]["content"] for c in completions]
        with self.seen.open("a") as fh:
            fh.write(json.dumps({"pid": os.getpid(), "step": trainer_state.global_step,
                                 "prompts": [p[-1]["content"] for p in prompts], "completions": texts}) + "\n")
        return [float(len(t) % 2 == 0) for t in texts]


def main(model: str, out_dir: str, marker: str, seen: str) -> None:
    tasks = [Task(domain="d", prompt=(Message(role="user", content=f"add {i} and {i + 1}"),), reference=str(2 * i + 1),
                  verifier=AnswerVerifier(expected=str(2 * i + 1)), source=Source(connector="test")) for i in range(4)]
    cfg = RlConfig(max_steps=6, batch_size=4, num_generations=2, max_completion_length=8, save_steps=2,
                   learning_rate=5e-3, use_vllm="never")
    stats = run_grpo(model, None, tasks, ParityReward(Path(seen)), cfg, LoraConfig(r=2), Path(out_dir), seed=0,
                     progress=False, callbacks=[StallOnce(Path(marker))])
    print(json.dumps({"steps": stats.steps}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
