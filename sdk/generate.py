"""Batched generation for evaluation: base model or base + LoRA adapter.

transformers' ``generate`` with left padding, batched (73 tok/s at batch 8 vs 28 tok/s at batch 1
for SmolLM2-135M on this CPU, shared/DESIGN.md). Greedy when ``temperature == 0``.
On a CUDA GPU with vLLM installed, :func:`make_generator` can use vLLM with a LoRA request instead.

Generation of a sequence stops at the closing code fence (:class:`FenceStop`, on by default): the
answer the reward parses is complete there, and everything after it is prose the sandbox never
reads (issue 15: "stop generation at the closing fence"). Each completion comes back with why it
stopped: ``stop`` (closing fence), ``eos`` or ``length`` (field case E1).

Batches decode in :meth:`HFGenerator._pruned`, a loop that drops each finished row from the batch and
its KV cache (``generate`` keeps computing a finished row, padding it, until the batch's longest row
ends): the same tokens as ``generate`` (``tests/eval/test_eval_generation.py``), fewer row-steps when
rows end at different lengths. Greedy picks the argmax. Sampling draws as ``generate`` does, with its
own logits processors (temperature, top-k), from a full-batch probability table in which finished rows
are a certain pad: ``torch.multinomial`` draws row i from the generator's numbers for row i whatever the
other rows hold, and one draw per step over the full batch consumes the generator as ``generate`` does,
so a fixed seed gives ``generate``'s samples (tested over several batches).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

GenerateFn = Callable[[list[list[dict]], int], list[list[tuple[str, int, str]]]]
FENCE = "```"


def closed_fence(text: str) -> bool:
    """True when ``text`` holds an opening and a closing code-fence line (a complete block)."""
    return sum(1 for line in text.splitlines() if line.lstrip().startswith(FENCE)) >= 2


def fence_closed_line(text: str) -> bool:
    """True when ``text`` is done at its closing fence: a complete block whose fence line is closed
    by the newline after it, or by a fence at the very end (:class:`FenceStop`'s verdict)."""
    return closed_fence(text) and (text.endswith("\n") or text.rstrip().endswith(FENCE))


def chat_texts(tokenizer, conversations: list[list[dict]]) -> list[str]:
    """Each conversation rendered by the chat template with the generation prompt (no tokenizing)."""
    return [tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in conversations]


def encode_chat(tokenizer, texts: list[str], device=None):
    """The one prompt-tokenize path of evaluation, the GRPO held-out probe and serving (field case K1).

    The chat template already writes every special token the model expects (BOS included on
    Llama-style templates), so the rendered text is tokenized with ``add_special_tokens=False``:
    a second BOS is never added, and nothing is appended (an EOS belongs to the completion, not
    the prompt). TRL's SFT and GRPO trainers tokenize conversations the same way
    (``tests/eval/test_field_cases.py`` checks the ids are identical and hold exactly one BOS).

    Args:
        tokenizer: a ``transformers`` tokenizer (its ``padding_side`` is respected).
        texts: from :func:`chat_texts`.
        device: where the tensors go (None: CPU).
    Returns:
        The ``BatchEncoding`` (``input_ids``, ``attention_mask``), padded.
    """
    enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    return enc.to(device) if device is not None else enc


class FenceStop:
    """A ``transformers`` stopping criterion: a row is done once its new text closes a code block.

    One instance serves one ``generate`` call: a row once found done stays done and is not decoded
    again (``generate`` finishes a row the step its criterion says so, and only pads follow), so
    each step decodes the rows still running only, not the whole batch (the same verdicts:
    ``tests/eval/test_eval_generation.py``, ``bench/fence_stop.py``). A call with another batch
    size, or with fewer tokens than the previous call (a new ``generate``), starts afresh.

    Args:
        tokenizer: decodes the new tokens.
        prompt_len: tokens of the (left-padded) prompt; only what follows is checked.
    Returns (when called): a bool tensor, one entry per row (transformers >= 4.39 semantics).
    """

    def __init__(self, tokenizer, prompt_len: int) -> None:
        self.tokenizer, self.prompt_len = tokenizer, prompt_len
        self._done: list[bool] = []
        self._seen = 0

    def __call__(self, input_ids, scores=None, **kwargs):
        import torch

        rows, width = int(input_ids.shape[0]), int(input_ids.shape[1])
        if len(self._done) != rows or width < self._seen:
            self._done = [False] * rows
        self._seen = width
        live = [i for i, done in enumerate(self._done) if not done]
        texts = self.tokenizer.batch_decode(input_ids[live, self.prompt_len:], skip_special_tokens=True) if live else []
        for i, t in zip(live, texts):
            self._done[i] = fence_closed_line(t)
        return torch.tensor(self._done, dtype=torch.bool, device=input_ids.device)


class HFGenerator:
    """``generate(prompts, n) -> [[(completion, n_new_tokens) * n] per prompt]``.

    Args:
        model_path: base model folder or hub id.
        adapter: optional PEFT adapter folder applied on top.
        batch_size: sequences per ``generate`` call.
        max_new_tokens: completion cap, tokens.
        temperature: 0 = greedy.
        seed: sampling seed.
        stop_at_fence: stop a sequence at its closing code fence (:class:`FenceStop`).
        prune_done: batches drop finished rows as they end (:meth:`_pruned`); False: ``generate``.
    """

    streams_batches = True  # ``__call__`` takes ``on_batch`` (sdk.train.expert_iteration.sample_round uses it)

    def __init__(self, model_path: str, adapter: str | Path | None = None, batch_size: int = 8,
                 max_new_tokens: int = 192, temperature: float = 0.0, seed: int = 0, dtype: str = "auto",
                 stop_at_fence: bool = True, prune_done: bool = True) -> None:
        import torch

        from sdk.models import load_model

        self.model, self.tokenizer = load_model(model_path, dtype=dtype)
        if adapter is not None:
            from peft import PeftModel

            self.model = PeftModel.from_pretrained(self.model, str(adapter))
            self.model = self.model.merge_and_unload()
        if torch.cuda.is_available():
            self.model = self.model.to("cuda")
        self.model.eval()
        self.tokenizer.padding_side = "left"
        self.batch_size, self.max_new_tokens, self.temperature, self.seed = batch_size, max_new_tokens, temperature, seed
        self.stop_at_fence, self.prune_done = stop_at_fence, prune_done

    def __call__(self, prompts: list[list[dict]], n: int = 1, progress: Callable[[int], None] | None = None,
                 on_batch: Callable[[list[int], list[tuple[str, int, str]]], None] | None = None):
        """``n`` completions per prompt (see the class docstring); batches of ``batch_size``
        sequences sorted by prompt length. ``on_batch(flat_indices, outs)``, when given, is called
        after each batch with its sequences' indices into the flat list (prompt ``i``'s sample ``j``
        is ``i * n + j``) and their ``(text, new tokens, stop reason)``, so a caller can score them
        while the next batch is generated; it does not change what is generated."""
        import torch

        texts = chat_texts(self.tokenizer, prompts)
        flat = [t for t in texts for _ in range(n)]
        outs: list[tuple[str, int]] = []
        torch.manual_seed(self.seed)
        # sort by length so batches pad little; restore order afterwards
        order = sorted(range(len(flat)), key=lambda i: len(flat[i]))
        results: dict[int, tuple[str, int]] = {}
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            outs = self._batch([flat[i] for i in idx])
            results.update(zip(idx, outs))
            if on_batch:
                on_batch(list(idx), outs)
            if progress:
                progress(len(idx) / n)
        outs = [results[i] for i in range(len(flat))]
        return [outs[i * n:(i + 1) * n] for i in range(len(prompts))]

    def _batch(self, texts: list[str]) -> list[tuple[str, int, str]]:
        import torch
        from transformers import StoppingCriteriaList

        enc = encode_chat(self.tokenizer, texts, self.model.device)
        prompt_len = enc["input_ids"].shape[1]
        kwargs = {"do_sample": self.temperature > 0, "max_new_tokens": self.max_new_tokens,
                  "pad_token_id": self.tokenizer.pad_token_id, "eos_token_id": self.tokenizer.eos_token_id}
        if self.temperature > 0:
            kwargs["temperature"] = self.temperature
        if self.stop_at_fence:
            kwargs["stopping_criteria"] = StoppingCriteriaList([FenceStop(self.tokenizer, prompt_len)])
        if self.prune_done:
            return self._pruned(enc)
        with torch.inference_mode():
            out = self.model.generate(**enc, **kwargs)
        return [self._decode(row) for row in out[:, prompt_len:]]

    def _pruned(self, enc) -> list[tuple[str, int, str]]:
        """Decoding of one left-padded batch, each row leaving the batch (and the KV cache) the step it
        ends: EOS, or its closing fence (:func:`fence_closed_line`, as :class:`FenceStop`). Next tokens
        come from :meth:`_picker` (argmax, or ``generate``'s sampling)."""
        import torch
        from transformers import DynamicCache

        tok, model, eos = self.tokenizer, self.model, self.tokenizer.eos_token_id
        mask = enc["attention_mask"]
        pos = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)  # as generate's, for left padding
        cache, rows = DynamicCache(config=model.config), list(range(mask.shape[0]))
        pick = self._picker(enc["input_ids"])
        new: list[list[int]] = [[] for _ in rows]
        with torch.inference_mode():
            out = model(input_ids=enc["input_ids"], attention_mask=mask, position_ids=pos, cache=cache,
                        use_cache=True, logits_to_keep=1)
            last = pos[:, -1:]
            for step in range(self.max_new_tokens):
                nxt = pick(out.logits[:, -1, :], rows)
                keep = []
                for j, r in enumerate(rows):
                    new[r].append(int(nxt[j]))
                    if new[r][-1] != eos and not (self.stop_at_fence and fence_closed_line(
                            tok.decode(new[r], skip_special_tokens=True))):
                        keep.append(j)
                if not keep or step == self.max_new_tokens - 1:
                    break
                if len(keep) < len(rows):
                    sel = torch.tensor(keep, device=mask.device)
                    cache.batch_select_indices(sel)
                    mask, last, nxt, rows = mask[sel], last[sel], nxt[sel], [rows[j] for j in keep]
                mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], dim=1)
                last = last + 1
                out = model(input_ids=nxt[:, None], attention_mask=mask, position_ids=last, cache=cache, use_cache=True)
        return [self._decode(torch.tensor(ids)) for ids in new]

    def _picker(self, prompt_ids) -> Callable:
        """``pick(logits, rows) -> next tokens`` for the live ``rows`` (indices into the batch) from
        their last-position ``logits``: the argmax when greedy; else ``generate``'s draw: its logits
        processors for this config (temperature, top-k ...) on float32 logits, softmax, and one
        ``torch.multinomial`` over the full batch, finished rows a certain pad (module docstring)."""
        import torch

        if self.temperature <= 0:
            return lambda logits, rows: logits.argmax(-1)
        model, pad = self.model, self.tokenizer.pad_token_id
        conf, kwargs = model._prepare_generation_config(
            None, do_sample=True, temperature=self.temperature, max_new_tokens=self.max_new_tokens,
            pad_token_id=pad, eos_token_id=self.tokenizer.eos_token_id)
        procs = model._get_logits_processor(generation_config=conf, input_ids_seq_length=prompt_ids.shape[1],
                                            device=prompt_ids.device, model_kwargs=kwargs)
        seqs = {i: prompt_ids[i] for i in range(prompt_ids.shape[0])}  # each live row's ids so far

        def pick(logits, rows):
            ids = torch.stack([seqs[r] for r in rows])
            scores = procs(ids, logits.to(copy=True, dtype=torch.float32))
            probs = torch.zeros(len(seqs), scores.shape[-1], dtype=scores.dtype, device=scores.device)
            probs[:, pad] = 1.0
            live = torch.tensor(rows, device=scores.device)
            probs[live] = torch.nn.functional.softmax(scores, dim=-1)
            nxt = torch.multinomial(probs, num_samples=1).squeeze(1)[live]
            for r, t in zip(rows, nxt):
                seqs[r] = torch.cat([seqs[r], t.view(1)])
            return nxt

        return pick

    def _decode(self, row) -> tuple[str, int, str]:
        """``(text, new tokens, stop reason)`` of one generated row (pads removed, cut after EOS)."""
        ids = [int(t) for t in row if int(t) != self.tokenizer.pad_token_id]
        eos = self.tokenizer.eos_token_id
        if eos in ids:
            ids = ids[:ids.index(eos) + 1]
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        reason = "eos" if eos in ids else "stop" if self.stop_at_fence and closed_fence(text) else "length"
        return text, len(ids), reason

    def close(self) -> None:
        """Free the model."""
        del self.model


def make_generator(model_path: str, adapter=None, batch_size: int = 8, max_new_tokens: int = 192,
                   temperature: float = 0.0, seed: int = 0, dtype: str = "auto", use_vllm: str = "auto"):
    """The fastest available generator: vLLM on a GPU when installed (and allowed), else HF."""
    import torch

    if use_vllm != "never" and torch.cuda.is_available() and importlib.util.find_spec("vllm"):
        from sdk.generate_vllm import VLLMGenerator  # pragma: no cover - gpu

        return VLLMGenerator(model_path, adapter, max_new_tokens, temperature, seed)
    return HFGenerator(model_path, adapter, batch_size, max_new_tokens, temperature, seed, dtype)
