"""examples/production_loop/run_example.py runs end to end and does what its README says.

With the tiny model (it cannot learn the preferred behaviour: LoRA cannot move its near-uniform
output head) the machinery is checked: registration, serving by version, a canary decided by its
rule, the rollback drill, the audit log, and every rated interaction attributed to the version that
answered it. With SmolLM2-135M the outcome is checked too: support@2 wins its canary, a candidate
trained back on the old answers fails the gate and its promotion is refused with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "production_loop"

pytest.importorskip("langchain_openai", reason="the dev extra installs langchain-openai (the example's bot)")


def run_example(work: Path, *args: str) -> dict:
    cmd = [sys.executable, str(EXAMPLE / "run_example.py"), "--workdir", str(work), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3000, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads((work / "summary.json").read_text())


def check_machinery(summary: dict) -> None:
    actions = [(n, a) for n, a, _ in summary["events"]]
    assert actions[:4] == [(1, "register"), (1, "promote"), (2, "register"), (2, "canary")]
    assert summary["canary"]["decision"] in ("promote", "rollback")
    assert summary["mismatched"] == 0 and summary["attributed"] == summary["requests"] > 80
    assert set(summary["states"]) == {"support@1", "support@2", "support@3"}
    assert list(summary["states"].values()).count("production") == 1


@pytest.mark.slow
def test_example_runs_the_whole_cycle_on_the_tiny_model(tmp_path):
    summary = run_example(tmp_path / "run", "--model", "tiny", "--run-config", str(EXAMPLE / "trainer-tiny.yaml"))
    check_machinery(summary)
    drill = summary["rollback"]  # traffic follows the rollback, and the roll-forward restores production
    assert drill["answered_after_rollback"] == drill["rolled_back_to"] != drill["restored"]
    assert summary["states"][drill["restored"]] == "production"


@pytest.mark.slow
def test_example_on_smollm2_the_candidate_wins_and_a_bad_one_is_refused(tmp_path):
    summary = run_example(tmp_path / "run")
    check_machinery(summary)
    assert summary["canary"]["decision"] == "promote", summary["canary"]
    m = summary["canary"]["metrics"]
    assert m["2"]["positive_rate"] > m["1"]["positive_rate"]
    versus = summary["canary"]["gate"]["versus"]  # the loop's paired comparison with production
    assert versus["heldout"]["n"] == 6 and versus["replay"]["n"] > 10
    assert versus["heldout"]["candidate"] > versus["heldout"]["production"]
    assert versus["replay"]["candidate"] > versus["replay"]["production"]
    bad = summary["bad_candidate"]
    assert bad["action"] == "gate-failed" and bad["refusal_status"] == 409
    assert "heldout tasks (same prompts, same seeds)" in bad["refusal"]
    assert summary["rollback"] == {"rolled_back_to": "support@1", "answered_after_rollback": "support@1",
                                   "restored": "support@2"}
    assert summary["states"] == {"support@1": "retired", "support@2": "production", "support@3": "candidate"}
    assert [(n, a) for n, a, _ in summary["events"]] == [
        (1, "register"), (1, "promote"), (2, "register"), (2, "canary"), (2, "promote"), (1, "retire"),
        (3, "register"), (1, "rollback"), (2, "rollback"), (2, "promote"), (1, "retire")]
