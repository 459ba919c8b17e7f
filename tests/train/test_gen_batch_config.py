"""Issue 15 (make demo time): the sampling batch of expert iteration and self-distillation is a config
field (`rl.expert.gen_batch_size`, `sft.self_distill.gen_batch_size`, default 8: the batch they always
used), and the default generators take it."""

import pytest
from pydantic import ValidationError

from sdk.train.config import ExpertIterationConfig, RlConfig, SelfDistillConfig


class Recorder:
    """Stands in for HFGenerator: keeps its keyword arguments."""

    made: list[dict] = []

    def __init__(self, model_path, adapter=None, **kw):
        Recorder.made.append({"adapter": adapter, **kw})


@pytest.fixture
def recorder(monkeypatch):
    Recorder.made = []
    monkeypatch.setattr("sdk.generate.HFGenerator", Recorder)
    return Recorder


def test_defaults_keep_the_batch_of_eight():
    assert ExpertIterationConfig().gen_batch_size == 8
    assert SelfDistillConfig().gen_batch_size == 8
    with pytest.raises(ValidationError):
        ExpertIterationConfig(gen_batch_size=0)


def test_expert_iteration_samples_in_batches_of_its_config(recorder):
    from sdk.train.expert_iteration import _hf_generator

    rc = RlConfig(algorithm="expert_iteration", expert=ExpertIterationConfig(gen_batch_size=32), temperature=0.9)
    _hf_generator(rc, "auto")("model", None, 3)
    assert recorder.made == [{"adapter": None, "batch_size": 32, "max_new_tokens": rc.max_completion_length,
                              "temperature": 0.9, "seed": 3, "dtype": "auto"}]


def test_self_distillation_samples_in_batches_of_its_config(recorder, tmp_path):
    from sdk.rewards.result import RewardResult, RewardStatus
    from sdk.train.self_distill import distill_rows
    from tests.train.test_expert_iteration import task

    class Gen(Recorder):
        def __call__(self, prompts, n, **kw):
            return [[("```python\ndef f():\n    return 1\n```", 5, "stop")] * n for _ in prompts]

        def close(self):
            pass

    import sdk.generate

    sdk.generate.HFGenerator = Gen  # the fixture's monkeypatch restores the real class
    cfg = SelfDistillConfig(enabled=True, domains=["d"], k=2, gen_batch_size=16)
    score = lambda ts, cs: [RewardResult(score=1.0, status=RewardStatus.OK) for _ in cs]  # noqa: E731
    rows, counts = distill_rows("model", [task(0)], score, cfg, tmp_path / "log.jsonl", seed=0)
    assert [m["batch_size"] for m in Recorder.made] == [16]
    assert counts["sampled"] == 2 and len(rows) == 1
