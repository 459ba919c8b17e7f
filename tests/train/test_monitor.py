"""Held-out monitoring: the regression decision, and rollback + early stop in a real SFT run."""

from __future__ import annotations

import pytest

from sdk.config import LoraConfig, SftConfig
from sdk.train.monitor import HeldoutMonitor, regressions


def test_regressions_compare_each_domain_with_its_best():
    hist = [{"a": 0.5, "b": 0.2}, {"a": 0.7, "b": 0.1}, {"a": 0.55, "b": 0.15}]
    assert regressions(hist, threshold=0.1) == {"a": pytest.approx(0.15)}
    assert regressions(hist, threshold=0.2) == {}
    assert regressions(hist[:1], 0.0) == {}
    assert regressions([{"a": 0.5}, {"b": 0.0}], 0.1) == {}, "a domain seen once cannot regress"


def test_monitor_rolls_back_to_the_last_good_weights_and_stops(tiny_model_dir, tmp_path):
    from safetensors.torch import load_file

    from sdk.train.sft import run_sft

    seen: list[dict] = []
    scores = iter([0.5, 0.6, 0.6, 0.2, 0.9, 0.9, 0.9])

    def eval_fn(model, tokenizer):
        seen.append({n.replace(".default", ""): p.detach().clone()
                     for n, p in model.named_parameters() if p.requires_grad})
        return {"acme": next(scores)}

    monitor = HeldoutMonitor(eval_fn, every=1, threshold=0.1)
    rows = [{"prompt": [{"role": "user", "content": f"echo {i}"}],
             "completion": [{"role": "assistant", "content": f"{i} {i}"}]} for i in range(12)]
    stats = run_sft(tiny_model_dir, rows, SftConfig(max_steps=6, batch_size=2, learning_rate=5e-3, lora=LoraConfig(r=2)),
                    tmp_path, seed=0, progress=False, callbacks=[monitor])
    assert [h["step"] for h in monitor.history] == [0, 1, 2, 3]
    assert monitor.rolled_back_to == 2 and monitor.regressed == {"acme": pytest.approx(0.4)}
    assert stats.steps == 3, "training stopped at the regression"
    saved = load_file(str(tmp_path / "adapter" / "adapter_model.safetensors"))
    good, bad = seen[2], seen[3]
    assert set(saved) == set(good)
    assert all((saved[k] == good[k]).all() for k in good), "the saved adapter holds step 2's weights"
    assert any(not (good[k] == bad[k]).all() for k in good), "step 3 had moved the weights"
    assert monitor.summary()["rolled_back_to"] == 2


def test_monitor_rejects_a_zero_interval():
    with pytest.raises(ValueError, match="every"):
        HeldoutMonitor(lambda m, t: {}, every=0, threshold=0.1)


def test_heldout_eval_fn_scores_greedy_completions_per_domain(tiny_model_dir):
    from types import SimpleNamespace

    from sdk.models import load_model
    from sdk.tasks.records import AnswerVerifier, Message, Source, Task
    from sdk.train.monitor import heldout_eval_fn, pick_heldout

    def task(domain, i, expected):
        return Task(domain=domain, prompt=(Message(role="user", content=f"q{i}"),), source=Source(connector="t"),
                    verifier=AnswerVerifier(expected=expected))

    tasks = [task("easy", i, "x") for i in range(3)] + [task("hard", i, "y") for i in range(3)]
    probe = pick_heldout(tasks, per_domain=2)
    assert len(probe) == 4 and {t.domain for t in probe} == {"easy", "hard"}
    assert pick_heldout(tasks, 2) == probe, "the probe set is fixed"

    seen = []

    def score(ts, completions):
        seen.extend(completions)
        return [SimpleNamespace(score=1.0 if t.domain == "easy" else None if i == 3 else 0.0)
                for i, t in enumerate(ts)]

    model, tok = load_model(tiny_model_dir, dtype="float32")
    model.train()
    scores = heldout_eval_fn(probe, score, max_new_tokens=4, batch_size=3)(model, tok)
    assert scores == {"easy": 1.0, "hard": 0.0}, "per-domain means; an unjudged sample is left out"
    assert len(seen) == 4 and all(isinstance(c, str) for c in seen)
    assert model.training, "the model is back in train mode"
