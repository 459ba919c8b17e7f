"""Held-out monitoring during training: per-domain scores every N steps, early stop and rollback.

A :class:`HeldoutMonitor` is a trainer callback. Every ``every`` optimizer steps it calls an
evaluation function ``eval_fn(model, tokenizer) -> {domain: score}`` (:func:`heldout_eval_fn`: mean
greedy reward on a few held-out tasks per domain), keeps the history, and snapshots the trainable weights (for LoRA a few MB, kept
in memory) whenever no domain is below its best by more than ``threshold``. When a domain falls
further than that, it restores the last good snapshot and stops training, so the adapter the
trainer saves next is the last good one. :func:`regressions` is the pure decision.

Deviation from "roll back to the last good checkpoint on disk": the on-disk checkpoints follow
``save_steps`` and may not line up with evaluations; an in-memory snapshot of the LoRA weights at
each good evaluation is exact and costs no I/O. The optimizer state is not rolled back (training
stops right after).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from transformers import TrainerCallback

log = logging.getLogger(__name__)

EvalFn = Callable[[object, object], Mapping[str, float]]


def regressions(history: Sequence[Mapping[str, float]], threshold: float) -> dict[str, float]:
    """Domains whose latest score is below their best earlier score by more than ``threshold``.

    Args:
        history: per-evaluation ``{domain: score}``, oldest first.
        threshold: allowed drop, in score units (e.g. 0.1 = ten points of pass rate).
    Returns:
        ``{domain: drop}`` for each regressed domain (empty when none, or fewer than 2 evaluations).
    """
    if len(history) < 2:
        return {}
    latest, earlier = history[-1], history[:-1]
    out = {}
    for domain, score in latest.items():
        best = max((h[domain] for h in earlier if domain in h), default=None)
        if best is not None and best - score > threshold:
            out[domain] = round(best - score, 6)
    return out


class HeldoutMonitor(TrainerCallback):
    """Evaluate every ``every`` steps; on a regression beyond ``threshold``, roll back and stop.

    Args:
        eval_fn: ``(model, tokenizer) -> {domain: score}``; called with the training model
            (switch it to eval mode and back inside if it generates).
        every: steps between evaluations (also evaluated before the first step).
        threshold: allowed drop per domain from its best score (``math.inf``: observe only).
        final: also evaluate at the end of training when the last step is not a multiple of
            ``every`` (and no rollback stopped it), so a curve always ends at the last step.
    Attributes:
        history: ``[{"step": n, "scores": {...}}]``.
        rolled_back_to: step whose weights were restored, or None.
        regressed: ``{domain: drop}`` that triggered the rollback.
    """

    def __init__(self, eval_fn: EvalFn, every: int, threshold: float, final: bool = False) -> None:
        if every <= 0:
            raise ValueError(f"every must be > 0, got {every}")
        self.eval_fn, self.every, self.threshold, self.final = eval_fn, every, threshold, final
        self.history: list[dict] = []
        self.rolled_back_to: int | None = None
        self.regressed: dict[str, float] = {}
        self._good: tuple[int, dict] | None = None

    def on_train_begin(self, args, state, control, model=None, processing_class=None, **kwargs):
        """Trainer hook: set up before the first step."""
        if model is not None and not self.history:
            self._evaluate(state.global_step, model, processing_class)

    def on_step_end(self, args, state, control, model=None, processing_class=None, **kwargs):
        """Trainer hook: check after each optimizer step."""
        if model is None or state.global_step % self.every:
            return control
        return self._check(state, control, model, processing_class)

    def on_train_end(self, args, state, control, model=None, processing_class=None, **kwargs):
        """Trainer hook: with ``final``, evaluate the last step if it was not evaluated yet."""
        done = self.history and self.history[-1]["step"] == state.global_step
        if self.final and model is not None and self.rolled_back_to is None and not done:
            self._check(state, control, model, processing_class)
        return control

    def _check(self, state, control, model, tokenizer):
        self._evaluate(state.global_step, model, tokenizer)
        bad = regressions([h["scores"] for h in self.history], self.threshold)
        if bad and self._good is not None:
            step, snapshot = self._good
            _restore(model, snapshot)
            self.rolled_back_to, self.regressed = step, bad
            log.warning("held-out regression %s at step %d: restored step %d and stopped", bad, state.global_step, step)
            control.should_training_stop = True
        return control

    def _evaluate(self, step: int, model, tokenizer) -> None:
        scores = dict(self.eval_fn(model, tokenizer))
        self.history.append({"step": step, "scores": scores})
        if not regressions([h["scores"] for h in self.history], self.threshold):
            self._good = (step, _snapshot(model))

    def summary(self) -> dict:
        """For the stage stats: evaluations, the rollback step and the regressed domains."""
        return {"evaluations": self.history, "rolled_back_to": self.rolled_back_to, "regressed": self.regressed}


def _snapshot(model) -> dict:
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def _restore(model, snapshot: dict) -> None:
    import torch

    with torch.no_grad():
        for n, p in model.named_parameters():
            if n in snapshot:
                p.copy_(snapshot[n])


def heldout_eval_fn(tasks: Sequence, score: Callable[[list, list[str]], list], max_new_tokens: int = 128,
                    batch_size: int = 8) -> EvalFn:
    """An ``eval_fn``: greedy completions of ``tasks`` from the training model, scored by ``score``
    (``(tasks, completions) -> results with .score``), averaged per domain (unjudged samples left out).

    The model is put in eval mode for generation and back in train mode after.
    """
    import torch

    from sdk.generate import chat_texts, encode_chat

    def run(model, tokenizer) -> dict[str, float]:
        was_training = model.training
        model.eval()
        side, tokenizer.padding_side = tokenizer.padding_side, "left"
        texts = []
        try:
            for start in range(0, len(tasks), batch_size):
                part = tasks[start:start + batch_size]
                prompts = chat_texts(tokenizer, [[m.model_dump() for m in t.prompt] for t in part])
                enc = encode_chat(tokenizer, prompts, model.device)
                with torch.no_grad():
                    out = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False,
                                         pad_token_id=tokenizer.pad_token_id)
                texts += tokenizer.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
        finally:
            tokenizer.padding_side = side
            model.train(was_training)
        sums: dict[str, list[float]] = {}
        for task, res in zip(tasks, score(list(tasks), texts)):
            if res.score is not None:
                sums.setdefault(task.domain, []).append(res.score)
        return {d: sum(v) / len(v) for d, v in sums.items()}

    return run


def pick_heldout(tasks: Sequence, per_domain: int) -> list:
    """The first ``per_domain`` tasks of each domain by id (a fixed, reproducible probe set)."""
    out, count = [], {}
    for t in sorted(tasks, key=lambda t: t.id):
        if count.get(t.domain, 0) < per_domain:
            out.append(t)
            count[t.domain] = count.get(t.domain, 0) + 1
    return out
