"""Agentic rollouts on a change task mined from a generated git repository, driven by a scripted policy
(a fake model emitting tool calls): the tools act on the task's repository, escapes are refused,
tool answers are masked (engine and TRL's GRPO path), call ids are unique and deterministic, and
the final diff is scored exactly by the change reward (full credit; regression penalty)."""

from __future__ import annotations

import json

import pytest

from connectors.history.source import GitHistorySource
from sdk.rewards.config import RewardConfig
from sdk.rollout.change_agent import (
    ChangeAgent,
    ChangeAgentReward,
    agent_completion,
    tool_components,
)
from sdk.rollout.episode import run_episodes, traces_json
from tests.connectors import history_repo

MUL = "    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
RIGHT = [("list_dir", {"path": "."}), ("read_file", {"path": "calc/ops.py"}), ("search", {"text": "import", "path": "calc"}),
         ("read_file", {"path": "../../etc/passwd"}),
         ("edit_file", {"path": "calc/ops.py", "old_text": "    return a + b\n", "new_text": MUL}),
         ("edit_file", {"path": "calc/__init__.py", "old_text": "import add\n", "new_text": "import add, mul\n"}),
         ("run_tests", {})]
BREAKS_CONCAT = [("edit_file", {"path": "calc/ops.py", "old_text": "    return a + b\n",
                                "new_text": MUL.replace("return a + b", "return b + a if isinstance(a, str) else a + b")}),
                 ("edit_file", {"path": "calc/__init__.py", "old_text": "import add\n", "new_text": "import add, mul\n"}),
                 ("run_tests", {})]


@pytest.fixture(scope="module")
def sandbox():
    yield from history_repo.module_sandbox()


@pytest.fixture(scope="module")
def task(tmp_path_factory, sandbox):
    """The "Add mul" change (fail-to-pass test_mul; pass-to-pass test_add, test_concat), mined here."""
    root = tmp_path_factory.mktemp("agent")
    shas = history_repo.build(root / "calc")
    src = GitHistorySource({"path": "calc", "rev": shas["good"], "max_commits": 1, "heldout_fraction": 0.0,
                            "reruns": 0}, root, "python/calc", sandbox=sandbox)
    [task] = src.read().tasks
    assert task.verifier.fail_to_pass == ("tests/test_ops.py::test_mul",)
    return task


def scripted(tokenizer, calls, final="Done."):
    """A fake model: one tool call per turn from ``calls``, then ``final``."""
    turns = [f"<tool_call>{json.dumps({'name': n, 'arguments': a})}</tool_call>" for n, a in calls] + [final]
    state = {"n": 0}

    def generate(batch):
        out = []
        for _ in batch:
            out.append(tokenizer(turns[min(state["n"], len(turns) - 1)] + "<|im_end|>", add_special_tokens=False)["input_ids"])
        state["n"] += 1
        return out
    return generate


def roll(task, sandbox, tokenizer, calls, final="Done."):
    agent = ChangeAgent([task], sandbox, max_calls=10)
    prompt = [m.model_dump() for m in task.prompt]
    [ep] = run_episodes([prompt], tokenizer, agent, scripted(tokenizer, calls, final), max_completion_tokens=20000,
                        max_turns=12)
    return ep


def test_tools_act_on_the_task_repository_and_refuse_escapes(task, sandbox, tool_tokenizer):
    ep = roll(task, sandbox, tool_tokenizer, RIGHT)
    trace = ep.trace()
    assert ep.stop == "answer" and trace["n_calls"] == len(RIGHT)
    assert trace["n_valid"] == len(RIGHT) - 1  # the refused path is answered as the tool's error
    answers = {c["name"] + str(k): c["answer"] for k, c in enumerate(trace["calls"])}
    assert "calc/" in answers["list_dir0"].split("\n")
    assert "def add(a, b):" in answers["read_file1"] and "calc/__init__.py:1: from calc.ops import add" in answers["search2"]
    assert answers["read_file3"].startswith("error: ToolError: path '../../etc/passwd' leaves the repository")
    assert answers["run_tests6"].startswith("2/2 pass-to-pass tests pass")
    assert "test_mul" not in answers["run_tests6"]  # the fail-to-pass test is neither run nor named
    assert trace["changed_files"] == ["calc/__init__.py", "calc/ops.py"]
    assert task.verifier.files["calc/ops.py"] == history_repo.OPS  # the task's snapshot is untouched


def test_call_ids_are_unique_and_deterministic(task, sandbox, tool_tokenizer):
    calls = RIGHT[:3]
    first, second = (roll(task, sandbox, tool_tokenizer, calls).trace() for _ in range(2))
    ids = [c["id"] for c in first["calls"]]
    assert len(set(ids)) == len(ids) == 3 and ids == [c["id"] for c in second["calls"]]
    ep = roll(task, sandbox, tool_tokenizer, calls)
    answered = [m["tool_call_id"] for m in ep.messages if m["role"] == "tool"]
    made = [c["id"] for m in ep.messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    assert answered == made == ids


def test_tool_output_tokens_have_mask_zero(task, sandbox, tool_tokenizer):
    ep = roll(task, sandbox, tool_tokenizer, RIGHT)
    tok = tool_tokenizer
    assert len(ep.env_mask) == len(ep.completion_ids) and 0 in ep.env_mask
    tool_text = tok.decode([t for t, m in zip(ep.completion_ids, ep.env_mask) if not m])
    model_text = tok.decode([t for t, m in zip(ep.completion_ids, ep.env_mask) if m])
    for answer in (c["answer"] for c in ep.trace()["calls"]):
        assert answer[:60] in tool_text and answer[:60] not in model_text
    assert "<|im_start|>tool" not in model_text and model_text.count("<tool_call>") == len(RIGHT)
    assert model_text.endswith("Done.<|im_end|>")


def test_the_final_diff_is_scored_exactly(task, sandbox, tool_tokenizer):
    weights = RewardConfig()
    reward = ChangeAgentReward(weights, sandbox=sandbox, self_test=False)
    eps = [roll(task, sandbox, tool_tokenizer, RIGHT), roll(task, sandbox, tool_tokenizer, BREAKS_CONCAT),
           roll(task, sandbox, tool_tokenizer, [], final="I cannot do this.")]
    lines = eps[1].trace()["calls"][-1]["answer"].split("\n")
    assert lines[0].startswith("1/2 pass-to-pass tests pass") and lines[1] == "PASSED tests/test_ops.py::test_add"
    assert lines[2].startswith("FAILED tests/test_text.py::test_concat: ") and "'ba' == 'ab'" in lines[2]
    texts = [agent_completion(e.trace()) for e in eps]
    results = reward.score(texts, task_json=[task.model_dump_json()] * 3)
    right, broken, nothing = results
    assert right.score == 1.0 and right.status.value == "ok" and not right.pass_to_pass_broken
    assert broken.pass_to_pass_broken == ("tests/test_text.py::test_concat",) and not broken.fail_to_pass_failing
    assert broken.score == pytest.approx(1.0 - weights.regression_penalty / 2)
    assert nothing.score == 0.0 and nothing.status.value == "no_code"
    scores = reward([None] * 3, [""] * 3, tool_trace=traces_json(eps), task_json=[task.model_dump_json()] * 3)
    assert scores == [r.score for r in results]
    assert tool_components(texts[0]) == {"tool_calls": 7.0, "valid_tool_calls": 6.0, "used_tools": 1.0,
                                         "run_tests_calls": 1.0}


def test_grpo_rollout_func_masks_tool_answers(task, sandbox, tiny_model_dir, tmp_path):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from sdk.config import LoraConfig, RlConfig
    from sdk.models import load_model
    from sdk.rollout.chat_template import ensure_tool_template
    from sdk.rollout.trl_rollout import ToolRolloutFunc
    from sdk.train.common import peft_config
    from sdk.train.grpo import grpo_args, grpo_rows

    model, tok = load_model(tiny_model_dir)
    rl = RlConfig(max_steps=1, num_generations=2, batch_size=2, max_completion_length=4000, use_vllm="never")
    trainer = GRPOTrainer(model=model, reward_funcs=ChangeAgentReward(sandbox=sandbox, self_test=False),
                          args=GRPOConfig(**grpo_args(rl, tmp_path, 0)), train_dataset=Dataset.from_list(grpo_rows([task])),
                          processing_class=tok, peft_config=peft_config(LoraConfig(r=4)),
                          rollout_func=ToolRolloutFunc(ChangeAgent([task], sandbox, max_calls=10)))
    ensure_tool_template(tok)
    script = scripted(tok, RIGHT[:2])
    trainer._generate_single_turn = lambda batch, images, fields, n, has_tool_images=False: (script(batch), None)
    _, completion_ids, tool_mask, _, _, extra, _, _ = trainer._generate([[m.model_dump() for m in task.prompt]] * 2)
    assert len(tool_mask[0]) == len(completion_ids[0])
    masked = tok.decode([t for t, m in zip(completion_ids[0], tool_mask[0]) if not m])
    trained = tok.decode([t for t, m in zip(completion_ids[0], tool_mask[0]) if m])
    assert "def add(a, b):" in masked and "def add(a, b):" not in trained and "<tool_call>" in trained
    trace = json.loads(extra["tool_trace"][0])
    assert [c["name"] for c in trace["calls"]] == ["list_dir", "read_file"] and trace["change"] == ""


def positional(tokenizer, scripts):
    """A fake model for a batch of rollouts: rollout ``i`` of the batch follows ``scripts[i]`` (one call per turn,
    then "Done."). Rollouts that stop early must come last, so the others keep their place in the batch."""
    state = {"turn": 0}

    def generate(batch):
        turn, state["turn"] = state["turn"], state["turn"] + 1
        texts = [f"<tool_call>{json.dumps({'name': n, 'arguments': a})}</tool_call>" if turn < len(s) else "Done."
                 for s in scripts[:len(batch)] for n, a in [s[turn] if turn < len(s) else ("", {})]]
        return [tokenizer(t + "<|im_end|>", add_special_tokens=False)["input_ids"] for t in texts]
    return generate


def test_expert_iteration_trains_on_the_verified_trajectory_with_tool_output_masked(task, sandbox, tool_tokenizer,
                                                                                     tiny_model_dir, tmp_path, monkeypatch):
    import sdk.train.sft as sft_module
    from sdk.rewards.tiered import score_batch
    from sdk.train.agentic_expert import AgenticExpert
    from sdk.train.config import ExpertIterationConfig, RlConfig, SftConfig
    from sdk.train.expert_iteration import run_expert_iteration
    from sdk.train.tool_rows import token_rows

    scripts = [RIGHT, BREAKS_CONCAT + [("list_dir", {"path": "."})] * 4, []]   # right, breaks a test, nothing
    expert = AgenticExpert(ChangeAgent([task], sandbox, max_calls=10),
                           lambda m, a, s: (None, tool_tokenizer, positional(tool_tokenizer, scripts)), 20000, 12,
                           tmp_path / "traces.jsonl")
    trained, real_sft = [], sft_module.run_sft
    monkeypatch.setattr(sft_module, "run_sft", lambda model, rows, *a, **kw: trained.append(rows) or real_sft(model, rows, *a, **kw))
    rc = RlConfig(algorithm="expert_iteration", eval_midway=False,
                  expert=ExpertIterationConfig(rounds=1, k=3, max_per_task=2, epochs=1, batch_size=1))
    result = run_expert_iteration(tiny_model_dir, None, [task], lambda ts, cs: score_batch(ts, cs, sandbox, RewardConfig()),
                                  rc, SftConfig(max_length=4096), tmp_path, 0, progress=False,
                                  make_generator=expert.make_generator, row_of=expert.row, references=expert.references)
    [rnd] = result.details["rounds"]
    assert (rnd["sampled"], rnd["verified"], rnd["kept"], rnd["rows"]) == (3, 1, 1, 1) and result.steps > 0
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    [[row]] = trained
    msgs = row["messages"]
    made = [c["id"] for m in msgs if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    assert made == [f"call_{t}_0" for t in range(len(RIGHT))]                          # T4: unique, deterministic
    assert [m["tool_call_id"] for m in msgs if m["role"] == "tool"] == made and msgs[-1]["content"] == "Done."
    again = expert.make_generator(tiny_model_dir, None, 0)([[m.model_dump() for m in task.prompt]], 1)
    assert expert.row(task, again[0][0]) == row                                                   # the same rollout, the same row
    [tokens] = token_rows([row], tool_tokenizer)
    trained_text = tool_tokenizer.decode([t for t, m in zip(tokens["input_ids"], tokens["completion_mask"]) if m])
    assert trained_text.count("<tool_call>") == len(RIGHT) and trained_text.endswith("Done.<|im_end|>")
    for answer in ("pass-to-pass tests pass", "from calc.ops import add", "leaves the repository", "def add(a, b):"):
        assert answer not in trained_text and answer in tool_tokenizer.decode(tokens["input_ids"])


def test_a_reference_is_replayed_as_an_edit_file_demonstration_that_earns_full_marks(task, sandbox):
    from sdk.rewards.tiered import score_completion
    from sdk.rollout.change_tools import ChangeToolBox
    from sdk.rollout.tools import ToolCall
    from sdk.train.agentic_expert import DONE, reference_row

    row = reference_row(task, ChangeAgent([task], sandbox))
    turn = row["messages"][len(task.prompt)]
    calls = [(c["id"], c["function"]["name"], c["function"]["arguments"]["path"]) for c in turn["tool_calls"]]
    assert calls == [("call_0_0", "edit_file", "calc/__init__.py"), ("call_0_1", "edit_file", "calc/ops.py")]
    tools = row["messages"][len(task.prompt) + 1:-1]
    assert [m["tool_call_id"] for m in tools] == ["call_0_0", "call_0_1"] and row["messages"][-1]["content"] == DONE
    assert tools[1]["content"] == "edited calc/ops.py (2 file(s) changed so far)"
    box = ChangeToolBox(task.verifier, None)
    for c in turn["tool_calls"]:
        box.answer(ToolCall(name="edit_file", id=c["id"], raw=json.dumps(c["function"]["arguments"])))
    assert score_completion(task, agent_completion(box.final()), sandbox, RewardConfig()).score == 1.0


def test_sft_with_the_change_agent_trains_references_as_demonstrations(task, sandbox, tool_tokenizer):
    from sdk.train.agentic_expert import DONE, demonstration_rows, reference_row
    from sdk.train.sft import sft_rows
    from sdk.train.tool_rows import token_rows

    other = {"prompt": [{"role": "user", "content": "Say hi."}], "completion": [{"role": "assistant", "content": "hi"}]}
    agent = ChangeAgent([task], sandbox)
    rows = demonstration_rows([task], sft_rows([task], []) + [other], agent)   # the diff answer row is replaced
    assert rows == [reference_row(task, agent), {"messages": [*other["prompt"], *other["completion"]], "tools": []}]
    demo, hi = token_rows(rows, tool_tokenizer)
    trained = tool_tokenizer.decode([t for t, m in zip(demo["input_ids"], demo["completion_mask"]) if m])
    assert trained.count('<tool_call>{"name": "edit_file"') == 2 and trained.endswith(DONE + "<|im_end|>")
    assert "edited calc/ops.py" not in trained and "Make the change" not in trained
    assert tool_tokenizer.decode([t for t, m in zip(hi["input_ids"], hi["completion_mask"]) if m]) == "hi<|im_end|>"
