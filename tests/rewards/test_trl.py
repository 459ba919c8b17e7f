"""SandboxReward as a TRL reward function: picklable, chat completions, None, the JSONL log."""

from __future__ import annotations

import json
import math
import pickle
from types import SimpleNamespace

import pytest

from sdk.errors import RewardError
from sdk.rewards.trl import SandboxReward, completion_text

from .helpers import add_task, fake_factory, flaky_factory

HONEST = "```python\ndef add(a, b):\n    return a + b\n```"
WRONG = "```python\ndef add(a, b):\n    return a - b\n```"


def test_name_seen_by_trl():
    # TRL 1.16 names a reward column getattr(func, "__name__", type(func).__name__)
    assert SandboxReward(sandbox_factory=fake_factory).__name__ == "sandbox_reward"


def test_picklable_before_and_after_use(tmp_path):
    reward = SandboxReward(sandbox_factory=fake_factory, log_path=tmp_path / "r.jsonl")
    clone = pickle.loads(pickle.dumps(reward))
    task_json = [add_task().model_dump_json()]
    assert clone(prompts=["p"], completions=[HONEST], task_json=task_json) == [1.0]
    assert reward._sandbox is None  # lazily built, and only in the process that scores
    reward(prompts=["p"], completions=[HONEST], task_json=task_json)
    assert reward._sandbox is not None
    again = pickle.loads(pickle.dumps(reward))  # a live sandbox never crosses the pickle
    assert again._sandbox is None
    assert again(prompts=["p"], completions=[HONEST], task_json=task_json) == [1.0]
    assert again._sandbox is not None and again._sandbox is not reward._sandbox


def test_chat_completions_and_log(tmp_path):
    log = tmp_path / "logs" / "rewards.jsonl"
    reward = SandboxReward(sandbox_factory=fake_factory, log_path=log)
    task = add_task()
    completions = [[{"role": "assistant", "content": HONEST}], [{"role": "assistant", "content": "no idea"}]]
    metrics = {}
    scores = reward(prompts=[[{"role": "user", "content": "q"}]] * 2, completions=completions, completion_ids=None,
                    task_json=[task.model_dump_json()] * 2, trainer_state=SimpleNamespace(global_step=7),
                    log_metric=lambda name, value: metrics.setdefault(name, value))
    assert scores == [1.0, 0.0]
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["step"] for r in rows] == [7, 7] and rows[0]["task_id"] == task.id
    assert rows[0]["components"]["tests"] == 1.0 and rows[1]["status"] == "no_code"
    assert rows[0]["completion"] == HONEST
    assert metrics["reward/unjudged_frac"] == 0.0


def test_hacking_flags_reach_metrics_and_log(tmp_path):
    log = tmp_path / "r.jsonl"
    reward = SandboxReward(sandbox_factory=fake_factory, log_path=log)
    cheat = "```python\nimport sys\ndef add(a, b):\n    sys.exit(0)\n```"
    metrics = {}
    scores = reward(["p"], [cheat], task_json=[add_task().model_dump_json()], log_metric=metrics.__setitem__)
    assert scores == [0.0]
    assert metrics["hacking/exit_trick"] == 1.0 and metrics["hacking/any"] == 1.0
    assert metrics["hacking/always_equal"] == 0.0  # every flag is logged every call
    assert json.loads(log.read_text())["flags"] == ["exit_trick"]


def test_infrastructure_failure_is_none_which_trl_masks(tmp_path):
    reward = SandboxReward(sandbox_factory=flaky_factory, self_test=False)  # mid-run failures (start: test_W1_*)
    scores = reward(["p", "p"], [HONEST, WRONG], task_json=[add_task().model_dump_json()] * 2)
    assert scores == [None, None]
    # what TRL 1.16's _calculate_rewards does with them: NaN, then masked as unscorable
    as_trl = [s if s is not None else math.nan for s in scores]
    assert all(math.isnan(x) for x in as_trl)


def test_bad_task_row_costs_one_sample():
    reward = SandboxReward(sandbox_factory=fake_factory)
    scores = reward(["p", "p"], [HONEST, HONEST], task_json=["{not a task", add_task().model_dump_json()])
    assert scores == [None, 1.0]


def test_missing_task_column_is_a_wiring_error():
    with pytest.raises(RewardError, match="task_json"):
        SandboxReward(sandbox_factory=fake_factory)(["p"], [HONEST])


def test_completion_text_shapes():
    assert completion_text("x") == "x"
    assert completion_text([{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]) == "ab"
    assert completion_text([{"role": "tool", "content": "t"}, {"role": "assistant", "content": "y"}]) == "y"


def test_reference_is_the_regression_baseline_and_is_run_once():
    from sdk.sandbox.contract import ExecResult, ExecStatus

    from .helpers import FakeSandbox, outcome

    def respond(req):  # the reference passes both tests; a completion marked BREAKS fails one
        broken = "BREAKS" in req.solution
        return ExecResult(status=ExecStatus.FAILED if broken else ExecStatus.OK, tests=(
            outcome("test_add.py::test_small", True), outcome("test_add.py::test_negative", not broken)))

    sandbox = FakeSandbox(respond)
    reward = SandboxReward(sandbox_factory=lambda: sandbox, self_test=False)  # counts batches
    task = add_task(hidden=False, reference=HONEST)
    tj = [task.model_dump_json()] * 2
    breaking = "```python\ndef add(a, b):\n    # BREAKS\n    return a + b\n```"
    scores = reward(["p"] * 2, [HONEST, breaking], task_json=tj)
    reward(["p"] * 2, [HONEST, HONEST], task_json=tj)
    assert scores[0] == 1.0
    assert scores[1] == pytest.approx(0.05 + 0.05 + 0.9 * 0.5 - 0.5 * 0.5)
    assert len(sandbox.batches) == 3  # baseline once, then one batch per call


def _no_sandbox():
    from sdk.errors import SandboxError

    raise SandboxError("bubblewrap is not usable here", "set sandbox.allow_unisolated")


def test_answer_tasks_never_build_a_sandbox_and_a_broken_sandbox_masks_code_tasks():
    from sdk.tasks.records import AnswerVerifier, Message, Source, Task

    answer = Task(domain="qa", prompt=(Message(role="user", content="2+2?"),), verifier=AnswerVerifier(
        mode="numeric", expected="4"), source=Source(connector="t"))
    reward = SandboxReward(sandbox_factory=_no_sandbox, self_test=False)  # at start this stops the run (W1)
    scores = reward(["p"] * 2, ["Answer: 4", HONEST], task_json=[answer.model_dump_json(), add_task().model_dump_json()])
    assert scores == [1.0, None]


class _Counting:
    """A picklable factory that counts the sandboxes it builds (in this process)."""

    built = 0

    def __call__(self):
        from .helpers import FakeSandbox

        type(self).built += 1
        return FakeSandbox()


def test_a_given_sandbox_is_used_and_no_second_one_is_built(monkeypatch):
    import sdk.sandbox
    from .helpers import FakeSandbox

    made = []
    monkeypatch.setattr(sdk.sandbox, "make_sandbox", lambda cfg=None: made.append(cfg) or FakeSandbox())
    _Counting.built = 0
    run_box = FakeSandbox()
    reward = SandboxReward(sandbox=run_box, sandbox_factory=_Counting())
    tj = [add_task().model_dump_json()] * 2
    assert reward(["p"] * 2, [HONEST, WRONG], task_json=tj)[0] == 1.0
    assert run_box.batches and _Counting.built == 0 and made == []
    reward.close()  # the run's sandbox is the run's to close: kept
    assert reward.sandbox is run_box
    plain = SandboxReward(sandbox=run_box)  # no factory: the config would be used, but never is
    plain(["p"], [HONEST], task_json=tj[:1])
    assert made == []


def test_pickled_reward_carries_the_config_and_rebuilds_lazily(monkeypatch):
    import sdk.sandbox
    from sdk.sandbox.config import SandboxConfig
    from .helpers import FakeSandbox

    made = []
    monkeypatch.setattr(sdk.sandbox, "make_sandbox", lambda cfg=None: made.append(cfg) or FakeSandbox())
    cfg = SandboxConfig(backend="process", allow_unisolated=True, concurrency=3)
    run_box = FakeSandbox()
    reward = SandboxReward(sandbox=run_box, sandbox_config=cfg)
    tj = [add_task().model_dump_json()]
    reward(["p"], [HONEST], task_json=tj)
    blob = pickle.dumps(reward)
    assert b"FakeSandbox" not in blob  # the live sandbox stays in this process
    clone = pickle.loads(blob)
    assert clone._sandbox is None and made == [] and clone.sandbox_config == cfg
    assert clone(["p"], [HONEST], task_json=tj) == [1.0]
    assert made == [cfg] and clone.sandbox is not run_box  # built once, from the carried config
    clone(["p"], [WRONG], task_json=tj)
    assert len(made) == 1
