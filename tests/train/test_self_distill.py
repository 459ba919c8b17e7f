"""Self-distillation replay (sft.self_distill): the base model's verified answers on a train pool."""

import json

import pytest
from pydantic import ValidationError

from sdk.errors import ConfigError
from sdk.rewards.result import RewardResult, RewardStatus
from sdk.tasks.records import Message, Source, Split, Task, UnitTestVerifier
from sdk.train.config import SelfDistillConfig, SftConfig
from sdk.train.self_distill import answer_format, distill_rows, in_domains, split_pool

GOOD, BAD = "```python\ndef f():\n    return 1\n```", "```python\ndef f():\n    return 2\n```"


def task(i: int, domain: str = "general", split: Split = Split.TRAIN) -> Task:
    return Task(domain=domain, split=split, prompt=(Message(role="user", content=f"write f ({i})"),),
                verifier=UnitTestVerifier(tests={"test_f.py": "def test_f():\n    assert True\n"}),
                source=Source(connector="t"), reference="def f():\n    return 1")


def judge(text: str) -> RewardResult:
    good = "return 1" in text
    return RewardResult(score=1.0 if good else 0.1, status=RewardStatus.OK if good else RewardStatus.FAILED)


def test_domains_match_exactly_or_as_prefix():
    assert in_domains(task(0, "general"), ["general"]) and in_domains(task(0, "general/str"), ["general"])
    assert not in_domains(task(0, "generalist"), ["general"]) and not in_domains(task(0, "acme/money"), ["general"])


def test_pool_is_split_off_and_off_means_no_pool():
    tasks = [task(0, "acme/money"), task(1, "general"), task(2, "general/x")]
    others, pool = split_pool(tasks, SelfDistillConfig(enabled=True, domains=["general"]))
    assert [t.domain for t in others] == ["acme/money"] and len(pool) == 2
    assert split_pool(tasks, SelfDistillConfig()) == (tasks, [])


@pytest.mark.parametrize("split", [Split.HELDOUT, Split.OOD])
def test_heldout_or_ood_tasks_never_feed_the_pool(split):
    with pytest.raises(ConfigError, match="only train tasks"):
        split_pool([task(0), task(1, split=split)], SelfDistillConfig(enabled=True, domains=["general"]))


def test_enabled_without_domains_is_rejected():
    with pytest.raises(ValidationError, match="domains"):
        SftConfig(self_distill={"enabled": True})


def test_rows_are_the_base_models_verified_answers(tmp_path):
    seen = []

    class Gen:
        def __call__(self, prompts, n):
            return [[(GOOD if j == 0 else BAD, 5, "stop") for j in range(n)] for _ in prompts]

        def close(self):
            seen.append("closed")

    def make(model_path, seed):
        seen.append(model_path)
        return Gen()

    cfg = SelfDistillConfig(enabled=True, domains=["general"], k=3)
    rows, counts = distill_rows("base-model", [task(0), task(1)], lambda ts, cs: [judge(c) for c in cs], cfg,
                                tmp_path / "log.jsonl", 0, make_generator=make)
    assert seen == ["base-model", "closed"]
    assert counts == {"sampled": 6, "verified": 2, "kept": 2, "tasks_solved": 2, "tasks": 2}
    assert [r["completion"][0]["content"] for r in rows] == [GOOD, GOOD], "only verified answers, never references"
    assert len((tmp_path / "log.jsonl").read_text().splitlines()) == 6
    assert all(json.loads(line)["step"] == 0 for line in (tmp_path / "log.jsonl").read_text().splitlines())


def test_a_verified_answer_with_prose_around_it_is_trained_as_its_code_only():
    row = {"prompt": [{"role": "user", "content": "write f (0)"}],
           "completion": [{"role": "assistant", "content": "Here's f:\n\n" + GOOD + "\n\nIt returns 1."}]}
    out = answer_format(row, task(0).model_copy(update={"verifier": UnitTestVerifier(
        tests={"test_f.py": "def test_f():\n    assert True\n"}, entry_point="f")}))
    assert out["completion"][0]["content"] == GOOD and out["prompt"] == row["prompt"]
