"""The rollout engine with a scripted generator: masks, error answers, limits, traces; the tool-task reward."""

from __future__ import annotations

import json
import pickle

from sdk.rollout.config import ToolRewardConfig
from sdk.rollout.episode import run_episodes, traces_json
from sdk.rollout.rewards import ToolTaskReward
from sdk.rollout.tools import ToolBox
from sdk.tasks.records import AnswerVerifier, Message, Source, Task


def stock(sku: str) -> int:
    """Units in stock.

    Args:
        sku: item code.
    """
    return {"A-100": 7}.get(sku, 0)


def scripted(tokenizer, turns_per_row):
    """A generator answering the rollout whose first user message is ``u<r>...`` (or row 0) with its next scripted turn."""
    seen: dict[int, int] = {}

    def generate(batch):
        out = []
        for ids in batch:
            user = tokenizer.decode(ids).split("<|im_start|>user\n", 1)[1]
            row = int(user[1]) if user.startswith("u") and user[1].isdigit() else 0
            n = seen.get(row, 0)
            seen[row] = n + 1
            out.append(tokenizer(turns_per_row[row][n] + "<|im_end|>", add_special_tokens=False)["input_ids"])
        return out
    return generate


PROMPT = [{"role": "system", "content": "Use tools."}, {"role": "user", "content": "How many A-100?"}]


def test_rollout_answers_calls_masks_tool_tokens_and_goes_on_after_errors(tool_tokenizer):
    turns = [['<tool_call>{"name": "stock", "arguments": "{\\"sku\\": \\"A-1'  # cut-off argument string
              '"}</tool_call>', '<tool_call>{"name": "stock", "arguments": {"sku": "A-100"}}</tool_call>', "Answer: 7"]]
    [ep] = run_episodes([PROMPT], tool_tokenizer, lambda: ToolBox([stock], max_calls=3), scripted(tool_tokenizer, turns),
                        max_completion_tokens=4000)
    assert ep.stop == "answer" and ep.final_text == "Answer: 7"
    trace = ep.trace()
    assert [c["valid"] for c in trace["calls"]] == [False, True]
    assert trace["calls"][0]["answer"].startswith("error: arguments are not valid JSON")
    assert trace["calls"][1]["answer"] == "7" and trace["calls"][1]["arguments"] == {"sku": "A-100"}
    assert len(ep.env_mask) == len(ep.completion_ids)
    tok = tool_tokenizer
    model_text = tok.decode([t for t, m in zip(ep.completion_ids, ep.env_mask) if m])
    tool_text = tok.decode([t for t, m in zip(ep.completion_ids, ep.env_mask) if not m])
    assert model_text.endswith("Answer: 7<|im_end|>") and "error:" not in model_text and "<|im_start|>" not in model_text
    assert "error: arguments are not valid JSON" in tool_text and "<|im_start|>tool" in tool_text
    # the sequence is exactly what the template renders for the conversation (no re-tokenisation drift)
    full = tok.decode(ep.prompt_ids + ep.completion_ids)
    assert full.count("<|im_start|>tool\n") == 2 and full.endswith("<|im_start|>assistant\nAnswer: 7<|im_end|>")


def test_call_limit_and_max_turns_and_length(tool_tokenizer):
    call = '<tool_call>{"name": "stock", "arguments": {"sku": "B"}}</tool_call>'
    [ep] = run_episodes([PROMPT], tool_tokenizer, lambda: ToolBox([stock], max_calls=1),
                        scripted(tool_tokenizer, [[call, call, call]]), max_completion_tokens=4000)
    assert ep.stop == "max_turns" and len(ep.outcomes) == 2
    assert "limit of 1 tool calls" in ep.outcomes[1][1].content
    [short] = run_episodes([PROMPT], tool_tokenizer, lambda: ToolBox([stock]), scripted(tool_tokenizer, [[call * 3]]),
                           max_completion_tokens=10)
    assert short.stop == "length" and len(short.completion_ids) == 10 and short.outcomes[0][1].call.error


def test_batch_of_rollouts_finishing_at_different_turns(tool_tokenizer):
    call = '<tool_call>{"name": "stock", "arguments": {"sku": "A-100"}}</tool_call>'
    prompts = [[{"role": "user", "content": "u0 How many A-100?"}], [{"role": "user", "content": "u1 Say hi"}]]
    eps = run_episodes(prompts, tool_tokenizer, lambda: ToolBox([stock]),
                       scripted(tool_tokenizer, [[call, "7"], ["hi"]]), max_completion_tokens=4000)
    assert [e.stop for e in eps] == ["answer", "answer"]
    assert [e.final_text for e in eps] == ["7", "hi"] and eps[1].outcomes == []
    assert all(eps[1].env_mask)


def _task(expected="7", tools=("stock",)):
    return Task(domain="tools/inventory", prompt=(Message(role="user", content="How many A-100?"),),
                verifier=AnswerVerifier(expected=expected, mode="numeric"), source=Source(connector="test"),
                metadata={"expected_tools": list(tools)})


def test_tool_task_reward_components_weights_and_not_judged(tool_tokenizer):
    good = ['<tool_call>{"name": "stock", "arguments": {"sku": "A-100"}}</tool_call>', "Answer: 7"]
    guess = ["Answer: 7"]
    wasteful = ['<tool_call>[{"name": "stock", "arguments": {"sku": "A-100"}}, {"name": "stock", "arguments": '
                '{"sku": "A-100"}}, {"name": "stock", "arguments": ["x"]}]</tool_call>', "Answer: 7"]
    prompts = [[{"role": "user", "content": f"u{r} How many A-100?"}] for r in range(3)]
    eps = run_episodes(prompts, tool_tokenizer, lambda: ToolBox([stock]),
                       scripted(tool_tokenizer, [good, guess, wasteful]), max_completion_tokens=4000)
    traces = traces_json(eps)
    task = _task().model_dump_json()
    reward = ToolTaskReward(ToolRewardConfig(answer=1.0, right_tool=0.5, valid_args=0.5, no_waste=0.5))
    logged = {}
    scores = reward([None] * 4, [None] * 4, tool_trace=traces + ["not json"], task_json=[task] * 4,
                    log_metric=lambda k, v: logged.__setitem__(k, v))
    assert scores[0] == 1.0
    assert scores[1] == (1.0 + 0 + 0) / 2.0     # right answer, no tool used: right_tool 0, valid_args 0
    comps = reward.score(_task(), json.loads(traces[2]))[1]
    assert comps == {"answer": 1.0, "right_tool": 1.0, "valid_args": 2 / 3, "no_waste": 1 / 3}
    assert scores[3] is None
    assert set(logged) == {"tools/answer", "tools/right_tool", "tools/valid_args", "tools/no_waste"}
    assert pickle.loads(pickle.dumps(reward)).weights == reward.weights


def test_a_generator_taking_max_new_tokens_gets_the_room_left_in_the_budget(tool_tokenizer):
    """A later turn is asked for no more tokens than the rollout still has room for (was: the full per-turn
    limit each turn, the excess generated then cut)."""
    call = '<tool_call>{"name": "stock", "arguments": {"sku": "A-100"}}</tool_call>'
    plain = scripted(tool_tokenizer, [[call, "Answer: 7"], ["hi"]])
    asked: list[int] = []

    def generate(batch, max_new_tokens):
        asked.append(max_new_tokens)
        return plain(batch)

    prompts = [[{"role": "user", "content": "u0 How many A-100?"}], [{"role": "user", "content": "u1 Say hi"}]]
    eps = run_episodes(prompts, tool_tokenizer, lambda: ToolBox([stock]), generate, max_completion_tokens=300)
    assert [e.final_text for e in eps] == ["Answer: 7", "hi"]
    used_after_turn_0 = len(eps[0].completion_ids) - len(tool_tokenizer("Answer: 7<|im_end|>",
                                                                        add_special_tokens=False)["input_ids"])
    assert asked == [300, 300 - used_after_turn_0] and asked[1] < 300
