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



def _varied_model(tiny_model_dir, out_dir) -> str:
    """The tiny model with weights redrawn (seeded) so greedy rows differ (the tiny one repeats a token)."""
    from sdk.models import load_model

    model, tok = load_model(tiny_model_dir)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0, 0.5)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return str(out_dir)


def _pruned_and_generate_rows(tiny_model_dir, tmp_path, temperature: float, batch_size: int, n: int):
    """Rows of HFGenerator with and without dropping finished rows (``prune_done``), the EOS set to a
    token the rows emit at different positions (so rows end at different steps)."""
    import collections

    from sdk.generate import chat_texts

    path = _varied_model(tiny_model_dir, tmp_path / "varied")
    prompts = [[{"role": "user", "content": c}] for c in
               ("hi", "add two numbers", "sort a list of words", "x", "the quick brown fox", "1 2 3")]
    probe = HFGenerator(path, max_new_tokens=12, prune_done=False)
    enc = probe.tokenizer(chat_texts(probe.tokenizer, prompts), return_tensors="pt", padding=True,
                          add_special_tokens=False)
    free = probe.model.generate(**enc, max_new_tokens=12, do_sample=False, eos_token_id=None,
                                pad_token_id=probe.tokenizer.pad_token_id)[:, enc["input_ids"].shape[1]:]
    common = collections.Counter(int(t) for row in free for t in set(row[1:8].tolist())).most_common(1)[0][0]
    stop_token = probe.tokenizer.convert_ids_to_tokens(common)
    probe.close()
    rows = {}
    for prune in (False, True):
        gen = HFGenerator(path, batch_size=batch_size, max_new_tokens=12, temperature=temperature, prune_done=prune)
        gen.tokenizer.eos_token = stop_token
        try:
            rows[prune] = gen(prompts, n)
        finally:
            gen.close()
    return rows


def test_greedy_pruning_gives_generate_rows(tiny_model_dir, tmp_path):
    """Greedy decoding that drops finished rows (the default) returns the rows ``generate`` does,
    rows ending at different steps: the EOS is a token the rows emit at different positions."""
    rows = _pruned_and_generate_rows(tiny_model_dir, tmp_path, 0.0, 6, 1)
    assert rows[True] == rows[False]
    assert len({n for (_, n, _), in rows[False]}) > 1  # rows ended at different steps: pruning was exercised


def test_sampling_pruning_gives_generate_samples(tiny_model_dir, tmp_path):
    """Sampling that drops finished rows draws ``generate``'s samples for the same seed: 2 samples of
    6 prompts in 4 batches of 3 (the generator's state carries from batch to batch), rows ending at
    different steps; and the samples are not all alike (sampling, not greedy)."""
    rows = _pruned_and_generate_rows(tiny_model_dir, tmp_path, 1.0, 3, 2)
    assert rows[True] == rows[False]
    flat = [s for per_prompt in rows[False] for s in per_prompt]
    assert len({n for _, n, _ in flat}) > 1 and len({t for t, _, _ in flat}) > 2
