"""ToolRolloutFunc inside TRL's GRPOTrainer: tool answers reach TRL as masked tokens, traces reach the reward."""

from __future__ import annotations

import json


def stock(sku: str) -> int:
    """Units in stock.

    Args:
        sku: item code.
    """
    return 7


def make_trainer(tiny_model_dir, tmp_path, max_completion_length):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from sdk.config import LoraConfig, RlConfig
    from sdk.models import load_model
    from sdk.rollout.rewards import ToolTaskReward
    from sdk.rollout.tools import ToolBox
    from sdk.rollout.trl_rollout import ToolRolloutFunc
    from sdk.tasks.records import AnswerVerifier, Message, Source, Task
    from sdk.train.common import peft_config
    from sdk.train.grpo import grpo_args, grpo_rows

    model, tok = load_model(tiny_model_dir)
    tasks = [Task(domain="tools/x", prompt=(Message(role="user", content=f"u{i} How many A-100?"),),
                  verifier=AnswerVerifier(expected="7", mode="numeric"), source=Source(connector="t"),
                  metadata={"expected_tools": ["stock"]}) for i in range(2)]
    rl = RlConfig(max_steps=1, num_generations=2, batch_size=2, max_completion_length=max_completion_length, use_vllm="never")
    return GRPOTrainer(model=model, reward_funcs=ToolTaskReward(), args=GRPOConfig(**grpo_args(rl, tmp_path, 0)),
                       train_dataset=Dataset.from_list(grpo_rows(tasks)), processing_class=tok,
                       peft_config=peft_config(LoraConfig(r=4)),
                       rollout_func=ToolRolloutFunc(lambda: ToolBox([stock]), log_path=tmp_path / "traces.jsonl"))


def test_tool_tokens_are_masked_in_trl_and_traces_reach_the_reward(tiny_model_dir, tmp_path):
    trainer = make_trainer(tiny_model_dir, tmp_path, 256)
    tok = trainer.processing_class
    script = ['<tool_call>{"name": "stock", "arguments": {"sku": "A-100"}}</tool_call>', "Answer: 7"]
    turn = {"n": 0}

    def fake_generate(batch, images, fields, n, has_tool_images=False):  # TRL's generation, scripted
        text = script[min(turn["n"], 1)] + "<|im_end|>"
        turn["n"] += 1
        return [tok(text, add_special_tokens=False)["input_ids"] for _ in batch], None

    trainer._generate_single_turn = fake_generate
    prompts = [[{"role": "user", "content": "u0 How many A-100?"}]] * 2
    _, completion_ids, tool_mask, completions, _, extra, _, _ = trainer._generate(prompts)
    assert tool_mask is not None and len(tool_mask[0]) == len(completion_ids[0])
    masked = tok.decode([t for t, m in zip(completion_ids[0], tool_mask[0]) if not m])
    trained = tok.decode([t for t, m in zip(completion_ids[0], tool_mask[0]) if m])
    assert masked.startswith("\n<|im_start|>tool\n7<|im_end|>") and "Answer: 7" not in masked
    assert trained.startswith("<tool_call>") and trained.endswith("Answer: 7<|im_end|>")
    trace = json.loads(extra["tool_trace"][0])
    assert trace["n_valid"] == 1 and trace["final"] == "Answer: 7"
    assert trainer.reward_funcs[0]([None] * 2, completions, tool_trace=extra["tool_trace"],
                                   task_json=[json.dumps({})] * 2) == [None, None]  # bad task: not judged
    logged = [json.loads(line) for line in (tmp_path / "traces.jsonl").read_text().splitlines()]
    assert len(logged) == 2 and logged[0]["calls"][0]["answer"] == "7"


def scripted(tok, turns):
    """A stand-in for TRL's ``_generate_single_turn``: call ``k`` returns ``turns[k][i]`` for row ``i``."""
    calls = {"n": 0}

    def generate(batch, images, fields, n, has_tool_images=False):
        texts = turns[min(calls["n"], len(turns) - 1)]
        calls["n"] += 1
        return [tok(texts[i] + "<|im_end|>", add_special_tokens=False)["input_ids"] for i in range(len(batch))], None

    return generate


def test_later_turns_generate_at_most_the_room_left_and_the_limit_is_restored(tiny_model_dir, tmp_path):
    trainer = make_trainer(tiny_model_dir, tmp_path, 256)
    tok = trainer.processing_class
    assert trainer.generation_config.max_new_tokens == 256
    plain = scripted(tok, [['<tool_call>{"name": "stock", "arguments": {"sku": "A-100"}}</tool_call>'] * 2,
                           ["Answer: 7"] * 2])
    asked: list[int] = []

    def generate(batch, images, fields, n, has_tool_images=False):
        asked.append(trainer.generation_config.max_new_tokens)
        return plain(batch, images, fields, n)

    trainer._generate_single_turn = generate
    prompts = [[{"role": "user", "content": "u0 How many A-100?"}]] * 2
    _, completion_ids, _, _, _, _, _, _ = trainer._generate(prompts)
    last = len(tok("Answer: 7<|im_end|>", add_special_tokens=False)["input_ids"])
    assert asked == [256, 256 - (len(completion_ids[0]) - last)] and asked[1] < 256
    assert trainer.generation_config.max_new_tokens == 256


def test_one_grpo_step_with_tool_rollouts_moves_lora(tiny_model_dir, tmp_path):
    """One group of two rollouts whose rewards differ by construction (a right answer through a valid
    call scores 1, a wrong answer without a call 0): the step must move every LoRA B matrix (A gets no
    gradient while B is still zero)."""
    import torch

    trainer = make_trainer(tiny_model_dir, tmp_path, 256)
    call = '<tool_call>{"name": "stock", "arguments": {"sku": "A-100"}}</tool_call>'
    trainer._generate_single_turn = scripted(trainer.processing_class, [[call, "Answer: 3"], ["Answer: 7"]])
    lora_b = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad and "lora_B" in n}
    assert lora_b

    trainer.train()
    after = dict(trainer.model.named_parameters())
    logged = trainer.state.log_history[0]
    assert trainer.state.global_step == 1
    assert logged["reward"] == 0.5 and logged["reward_std"] > 0.5  # rewards 1.0 and 0.0 in the one group
    unchanged = [n for n, before in lora_b.items() if torch.equal(before, after[n].detach())]
    assert not unchanged, f"{len(unchanged)} of {len(lora_b)} LoRA B matrices did not move: {unchanged[:3]}"
