"""Field cases E1, K1 and D1 (shared/cases/CASES.md) as named tests (issue 15 honesty rules).

E1 an answer that stops at end-of-sequence: why generation stopped is recorded apart from
   correctness; base and tuned go through one parse policy; the grader's self-test (references
   through the eval path) scores 100%; an all-zero baseline is called out.
K1 two beginnings of sequence: one tokenize path for SFT, rollouts and evaluation; a probe
   conversation's token ids are identical across them; exactly one BOS; EOS in labels unchanged.
D1 pairs that become identical: compared as token ids after truncation, dropped and counted as
   ``identical_after_truncation``; no zero-gradient pair reaches DPO.
"""

from __future__ import annotations

import pytest

from sdk.config import RewardConfig, SandboxConfig
from sdk.eval.checkpoints import grader_self_test, honesty_section
from sdk.eval.run import compare, evaluate
from sdk.tasks.records import Message, Source, Split, Task, UnitTestVerifier

TESTS = {"test_add.py": "from solution import add\n\n\ndef test_small():\n    assert add(2, 3) == 5\n"}
PROBE = [{"role": "system", "content": "Reply with one ```python code block."},
         {"role": "user", "content": "Write `add(a, b)`."}]


def add_task(i: int = 0) -> Task:
    return Task(domain="python/demo", prompt=(Message(role="user", content=f"Write `add(a, b)` ({i})."),),
                verifier=UnitTestVerifier(tests=TESTS, entry_point="add", timeout_s=5.0),
                source=Source(connector="test", locator=f"demo.py::add{i}"), reference="def add(a, b):\n    return a + b",
                split=Split.HELDOUT)


@pytest.fixture(scope="module")
def score():
    from sdk.rewards.tiered import score_batch
    from sdk.sandbox import make_sandbox

    sandbox = make_sandbox(SandboxConfig())
    return lambda ts, cs: score_batch(ts, cs, sandbox, RewardConfig())


def fixed(outs):
    return lambda prompts, n: [[outs[i]] * n for i in range(len(prompts))]


# ----- E1 -------------------------------------------------------------------------------------
def test_e1_stop_reasons_recorded_apart_from_correctness(score):
    eos_answer = "```python\ndef add(a, b):\n    return a + b\n"  # ended by EOS: no closing fence
    rows = evaluate([add_task(0), add_task(1)], fixed([(eos_answer, 9, "eos"), ("```python\nx = 1\n```", 6, "stop")]),
                    score, "base", 1, progress=False)
    assert [r.stop_reasons for r in rows] == [("eos",), ("stop",)]
    assert rows[0].passed == (True,), "an answer cut by EOS before its closing fence is still parsed and passes"
    assert rows[1].passed == (False,)


def test_e1_one_parse_policy_for_base_and_tuned(score):
    texts = ["```python\ndef add(a, b):\n    return a + b\n", "def add(a, b):\n    return a + b",
             "Sure:\n```py\ndef add(a, b): return a + b\n```\nDone.", "no code here"]
    tasks = [add_task(i) for i in range(len(texts))]
    outs = [(t, 5, "eos") for t in texts]
    base = evaluate(tasks, fixed(outs), score, "base", 1, progress=False)
    tuned = evaluate(tasks, fixed(outs), score, "tuned", 1, progress=False)
    assert [(r.rewards, r.statuses) for r in base] == [(r.rewards, r.statuses) for r in tuned]
    assert [r.passed[0] for r in base] == [True, True, True, False]


def test_e1_grader_self_test_scores_100(score):
    from sdk.train.sft import answer_text

    tasks = [add_task(i) for i in range(3)]
    rows = evaluate(tasks, fixed([(answer_text(t), 0, "reference") for t in tasks]), score, "reference", 1,
                    progress=False)
    assert grader_self_test(rows) == {"passed": 3, "total": 3, "rate": 1.0, "failed": 0, "failed_ids": []}


def test_e1_all_zero_baseline_called_out(score):
    tasks = [add_task(i) for i in range(3)]
    base = evaluate(tasks, fixed([("I cannot help.", 4, "eos")] * 3), score, "base", 1, progress=False)
    tuned = evaluate(tasks, fixed([("```python\ndef add(a, b):\n    return a + b\n```", 9, "stop")] * 3), score,
                     "tuned", 1, progress=False)
    h = honesty_section(compare(base, tuned, n_resamples=100), {"base": base, "tuned": tuned})
    assert h["all_zero_baseline"] and "passed none of the 3 held-out tasks" in h["warnings"][0]
    assert h["stop_reasons"] == {"base": {"eos": 3}, "tuned": {"stop": 3}}
    # no integrity flag fired on the passes, so every gain counts
    assert h["flagged_gains"] == 0


# ----- K1 -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def llama_style(tiny_model_dir, tmp_path_factory):
    """The tiny tokenizer made Llama-style: a BOS the template writes and the tokenizer also adds."""
    from tokenizers import processors
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    tok.add_special_tokens({"bos_token": "<s>"})
    bos = tok.bos_token_id
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)])
    tok.chat_template = "{{ bos_token }}" + tok.chat_template
    return tok


def test_k1_one_tokenize_path_exactly_one_bos(llama_style, tiny_model_dir):
    from sdk.generate import chat_texts, encode_chat

    tok, bos = llama_style, llama_style.bos_token_id
    text = chat_texts(tok, [PROBE])[0]
    naive = tok(text)["input_ids"]
    assert naive[:2] == [bos, bos], "the hazard is real for this tokenizer: template BOS + tokenizer BOS"
    ours = encode_chat(tok, [text])["input_ids"][0].tolist()
    rollout = tok.apply_chat_template(conversation=[PROBE], add_generation_prompt=True, tokenize=True,
                                      return_dict=True)["input_ids"][0]  # what TRL's GRPOTrainer does
    assert ours == list(rollout) and ours.count(bos) == 1 and ours[0] == bos


def test_k1_sft_prompt_ids_match_and_eos_kept_in_labels(llama_style, tiny_model_dir, tmp_path):
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from sdk.generate import chat_texts, encode_chat
    from sdk.models import load_model

    tok, bos = llama_style, llama_style.bos_token_id
    model, _ = load_model(tiny_model_dir)
    model.resize_token_embeddings(len(tok))
    row = {"prompt": PROBE, "completion": [{"role": "assistant", "content": "```python\nx = 1\n```"}]}
    trainer = SFTTrainer(model=model, processing_class=tok, train_dataset=Dataset.from_list([row]),
                         args=SFTConfig(output_dir=str(tmp_path), completion_only_loss=True, max_length=None,
                                        report_to=[], use_cpu=True))
    ex = trainer.train_dataset[0]
    ids, labels = ex["input_ids"], ex["labels"]
    prompt = encode_chat(tok, chat_texts(tok, [PROBE]))["input_ids"][0].tolist()
    assert ids[:len(prompt)] == prompt, "SFT sees the prompt exactly as evaluation and rollouts do"
    assert ids.count(bos) == 1
    trained = [t for t in labels if t != -100]
    assert trained and len(trained) < len(ids), "only the completion is trained"
    assert tok.eos_token_id in trained, "the completion's end-of-turn token is still a label"


# ----- D1 -------------------------------------------------------------------------------------
def test_d1_pairs_identical_after_truncation_are_dropped_and_counted(tiny_model_dir):
    from transformers import AutoTokenizer

    from sdk.train.dpo import drop_identical_after_truncation

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    long_prompt = [{"role": "user", "content": "word " * 600}]
    same_start = {"prompt": long_prompt, "chosen": [{"role": "assistant", "content": "a " * 50 + "GOOD"}],
                  "rejected": [{"role": "assistant", "content": "a " * 50 + "BAD"}]}
    short = {"prompt": [{"role": "user", "content": "hi"}], "chosen": [{"role": "assistant", "content": "hello"}],
             "rejected": [{"role": "assistant", "content": "go away"}]}
    twins = {"prompt": [{"role": "user", "content": "hi"}], "chosen": [{"role": "assistant", "content": "same"}],
             "rejected": [{"role": "assistant", "content": "same"}]}
    kept, dropped = drop_identical_after_truncation([same_start, short, twins], tok, max_length=512)
    assert kept == [short] and dropped == 2
    kept, dropped = drop_identical_after_truncation([same_start], tok, max_length=8192)
    assert kept == [same_start] and dropped == 0, "with room for the difference the pair teaches something"
