"""Benchmark (not a test): cost of the reward layer over the bare sandbox.

    .venv/bin/python bench/rewards.py [N]

Prints completions/s for score_batch (extraction + static scan + one merged visible+hidden pytest
run + scoring) and for sandbox.run with visible and hidden as separate requests, and their ratio; plus the parent-side cost per
completion of extraction and the static scan alone.
"""

from __future__ import annotations

import sys
import time

from sdk.config import RewardConfig, SandboxConfig
from sdk.rewards.extract import extract_code
from sdk.rewards.integrity import scan_solution
from sdk.rewards.tiered import build_request, score_batch
from sdk.sandbox import make_sandbox

sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[1]))
from tests.rewards.helpers import add_task  # noqa: E402


def main(n: int = 32) -> None:
    task = add_task()
    comps = [f"Sure.\n```python\ndef add(a, b):\n    # variant {i}\n    return a + b\n```\nExample:\n```python\nprint(add(2, 3))\n```"
             for i in range(n)]
    sandbox = make_sandbox(SandboxConfig(allow_unisolated=True, cache=False))
    try:
        sandbox.run([build_request(task.verifier, "def add(a, b):\n    return a + b\n")])  # warm-up
        t0 = time.perf_counter()
        results = score_batch([task] * n, comps, sandbox, RewardConfig())
        t_reward = time.perf_counter() - t0
        assert all(r.score == 1.0 for r in results), results[0]
        reqs = [build_request(task.verifier, extract_code(c, "add").code, hidden=h) for c in comps for h in (False, True)]
        t0 = time.perf_counter()
        sandbox.run(reqs)
        t_bare = time.perf_counter() - t0
    finally:
        sandbox.close()
    t0 = time.perf_counter()
    for c in comps * 10:
        scan_solution(extract_code(c, "add").code, test_sources=task.verifier.tests, prompt_text=task.prompt[0].content)
    t_parent = (time.perf_counter() - t0) / (10 * n)
    print(f"score_batch: {n / t_reward:.1f} completions/s (visible + hidden merged: {n} pytest runs)")
    print(f"bare sandbox.run, visible and hidden as separate runs: {n / t_bare:.1f} completions/s ({2 * n} runs)")
    print(f"ratio reward/bare time: {t_reward / t_bare:.2f}")
    print(f"parent-side extraction + static scan: {t_parent * 1e3:.2f} ms per completion")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 32)
