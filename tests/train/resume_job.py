"""A small SFT job for the resume test: ``python resume_job.py MODEL OUT_DIR MARKER``.

Trains 6 steps (checkpoint every 2). When ``MARKER`` does not exist yet, the job writes it after
step 3 and then waits, so the test can SIGKILL it mid-training at a known point; re-running the
same command must resume from ``checkpoint-2`` and finish.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from killable import StallOnce

from sdk.config import LoraConfig, SftConfig
from sdk.train.sft import run_sft


def main(model: str, out_dir: str, marker: str) -> None:
    rows = [{"prompt": [{"role": "user", "content": f"echo {i}"}],
             "completion": [{"role": "assistant", "content": f"{i} {i} {i}"}]} for i in range(12)]
    cfg = SftConfig(max_steps=6, batch_size=2, save_steps=2, learning_rate=5e-3, lora=LoraConfig(r=2))
    stats = run_sft(model, rows, cfg, Path(out_dir), seed=0, progress=False, callbacks=[StallOnce(Path(marker))])
    print(json.dumps({"steps": stats.steps}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
