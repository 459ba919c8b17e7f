"""Expert iteration (rl.algorithm: expert_iteration): sample k, keep the verified, SFT on them."""

from pathlib import Path

import pytest

from sdk.errors import ConfigError
from sdk.rewards.result import RewardResult, RewardStatus
from sdk.tasks.records import Message, ReferenceOnly, Source, Task, UnitTestVerifier
from sdk.train.config import ExpertIterationConfig, RlConfig, SftConfig
from sdk.train.expert_iteration import keep_verified, round_tasks, run_expert_iteration

GOOD, BAD = "```python\ndef f():\n    return 1\n```", "```python\ndef f():\n    return 2\n```"


def task(i: int) -> Task:
    return Task(domain="d", prompt=(Message(role="user", content=f"write f ({i})"),),
                verifier=UnitTestVerifier(tests={"test_f.py": "def test_f():\n    assert True\n"}),
                source=Source(connector="t"), reference="def f():\n    return 1")


def ok(text: str, flags=()) -> RewardResult:
    good = text.strip().startswith(GOOD.strip()[:20]) and "return 1" in text
    return RewardResult(score=1.0 if good else 0.2, status=RewardStatus.OK if good else RewardStatus.FAILED,
                        flags=tuple(flags))


def test_keep_verified_dedupes_caps_and_skips_flagged():
    tasks = [task(0), task(1)]
    samples = [[(GOOD, 5), (GOOD + " ", 5), (GOOD + "\n# two", 6)], [(BAD, 5), (GOOD, 5), (BAD, 5)]]
    results = [ok(GOOD), ok(GOOD), ok(GOOD + "\n# two"), ok(BAD), ok(GOOD, flags=("hardcoded_outputs",)), ok(BAD)]
    rows, counts = keep_verified(tasks, samples, results, max_per_task=2)
    assert counts == {"sampled": 6, "verified": 3, "kept": 2, "tasks_solved": 1}
    assert [r["completion"][0]["content"] for r in rows] == [GOOD, GOOD + "\n# two"], "whitespace twins count once"


def test_round_tasks_are_seeded_and_skip_reference_only():
    tasks = [task(i) for i in range(10)] + [task(99).model_copy(update={"verifier": ReferenceOnly()})]
    assert len(round_tasks(tasks, None, 0, 0)) == 10
    a, b = round_tasks(tasks, 4, 0, 0), round_tasks(tasks, 4, 0, 1)
    assert len(a) == 4 and a == round_tasks(tasks, 4, 0, 0) and a != b


class FakeGen:
    def __init__(self, adapter):
        self.adapter = adapter

    def __call__(self, prompts, n):
        return [[(GOOD if j % 2 == 0 else BAD, 7, "stop") for j in range(n)] for _ in prompts]

    def close(self):
        pass


def test_rounds_train_continue_and_save_midway(tiny_model_dir, tmp_path):
    seen = []

    def make(model_path, adapter, seed):
        seen.append(adapter)
        return FakeGen(adapter)

    rc = RlConfig(algorithm="expert_iteration", eval_midway=True,
                  expert=ExpertIterationConfig(rounds=2, k=2, max_per_task=1, epochs=1, batch_size=2))
    sft = SftConfig(max_length=128)
    result = run_expert_iteration(tiny_model_dir, None, [task(i) for i in range(3)],
                                  lambda ts, cs: [ok(c) for c in cs], rc, sft, tmp_path, seed=0, progress=False,
                                  make_generator=make)
    assert seen == [None, tmp_path / "rounds" / "1" / "adapter"], "round 2 samples with round 1's adapter"
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    assert (tmp_path / "midway" / "adapter" / "adapter_config.json").is_file()
    rounds = result.details["rounds"]
    assert [r["verified"] for r in rounds] == [3, 3] and rounds[0]["rows"] == 3 and result.steps > 0
    assert result.details["midway"]["round"] == 1 and result.details["midway"]["compute_s"] > 0


def test_nothing_verifiable_is_a_config_error(tiny_model_dir, tmp_path):
    ref_only = task(0).model_copy(update={"verifier": ReferenceOnly()})
    with pytest.raises(ConfigError, match="nothing to sample"):
        run_expert_iteration(tiny_model_dir, None, [ref_only], lambda ts, cs: [], RlConfig(), SftConfig(),
                             Path(tmp_path), 0, progress=False)


def test_replay_rows_join_every_round_that_trains(tmp_path, monkeypatch):
    import sdk.train.sft as sft_module
    from sdk.train.result import TrainResult

    trained = []

    def fake_sft(model_path, rows, cfg, out, seed, dtype, progress, adapter_dir=None, **kw):
        trained.append([r["completion"][0]["content"] for r in rows])
        (out / "adapter").mkdir(parents=True)
        (out / "adapter" / "adapter_config.json").write_text("{}")
        return TrainResult("sft", steps=1, rows=len(rows), tokens_trained=10)

    monkeypatch.setattr(sft_module, "run_sft", fake_sft)
    replay = [{"prompt": [{"role": "user", "content": "plain"}], "completion": [{"role": "assistant", "content": "R"}]}]
    rc = RlConfig(algorithm="expert_iteration", eval_midway=False,
                  expert=ExpertIterationConfig(rounds=2, k=2, max_per_task=1, replay_references=False))
    result = run_expert_iteration("unused", None, [task(0)], lambda ts, cs: [ok(c) for c in cs], rc, SftConfig(),
                                  tmp_path, seed=0, progress=False, make_generator=lambda m, a, s: FakeGen(a),
                                  replay_rows=replay)
    assert trained == [[GOOD, "R"], [GOOD, "R"]], "each round: its verified rows, then the replayed ones"
    assert [r["replayed"] for r in result.details["rounds"]] == [1, 1]


def test_replay_without_self_distill_rows_is_a_config_error(tmp_path):
    from types import SimpleNamespace

    from sdk.run.layout import RunLayout
    from sdk.run.stage_rl import self_distill_replay

    on = RlConfig(expert=ExpertIterationConfig(replay_self_distill=True))
    ctx = SimpleNamespace(cfg=SimpleNamespace(rl=on), layout=RunLayout(tmp_path))
    with pytest.raises(ConfigError, match="replay_self_distill"):
        self_distill_replay(ctx)
    rows = tmp_path / "sft" / "self_distill_rows.jsonl"
    rows.parent.mkdir(parents=True)
    rows.write_text('{"prompt": [], "completion": []}\n')
    assert self_distill_replay(ctx) == [{"prompt": [], "completion": []}]
    assert self_distill_replay(SimpleNamespace(cfg=SimpleNamespace(rl=RlConfig()), layout=ctx.layout)) == []


def test_a_row_of_that_refuses_a_sample_keeps_the_next_distinct_one():
    samples = [[(GOOD, 5, "bad call"), (GOOD + "\n# two", 6, "ok")]]
    rows, counts = keep_verified([task(0)], samples, [ok(GOOD), ok(GOOD + "\n# two")], max_per_task=1,
                                 row_of=lambda t, s: None if s[2] == "bad call" else {"messages": [s[0]]})
    assert rows == [{"messages": [GOOD + "\n# two"]}] and (counts["verified"], counts["kept"]) == (2, 1)


def test_agentic_expert_iteration_refuses_single_turn_replay():
    from types import SimpleNamespace

    from sdk.run.stage_rl import agentic_expert

    rc = RlConfig(algorithm="expert_iteration", expert=ExpertIterationConfig(replay_self_distill=True))
    with pytest.raises(ConfigError, match="replay_self_distill: false"):
        agentic_expert(SimpleNamespace(cfg=SimpleNamespace(rl=rc, tools=None)))
