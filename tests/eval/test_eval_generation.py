"""Generation for evaluation stops at the closing code fence and records why it stopped (E1)."""

import torch

from sdk.generate import FenceStop, HFGenerator, closed_fence


def test_closed_fence():
    assert closed_fence("```python\ndef f():\n    return 1\n```")
    assert not closed_fence("```python\ndef f():\n")
    assert not closed_fence("def f(): return '```'")


def test_fence_stop_is_per_row(tiny_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    rows = ["```python\nx = 1\n```\n", "```python\nx = 1\n", "plain"]
    ids = [tok(r, add_special_tokens=False)["input_ids"] for r in rows]
    width = max(map(len, ids))
    batch = torch.tensor([[tok.pad_token_id] * (width - len(i)) + i for i in ids])
    prompt = torch.full((3, 2), tok.pad_token_id)
    done = FenceStop(tok, 2)(torch.cat([prompt, batch], dim=1), None)
    assert done.tolist() == [True, False, False]


def test_generator_returns_stop_reasons(tiny_model_dir):
    gen = HFGenerator(tiny_model_dir, batch_size=2, max_new_tokens=4, temperature=0.0)
    try:
        out = gen([[{"role": "user", "content": "hi"}], [{"role": "user", "content": "add two numbers"}]], 1)
    finally:
        gen.close()
    assert len(out) == 2 and all(len(o) == 1 and len(o[0]) == 3 for o in out)
    text, n_tokens, reason = out[0][0]
    assert reason in ("eos", "length", "stop") and 0 < n_tokens <= 4
