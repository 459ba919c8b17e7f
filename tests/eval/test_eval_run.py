"""evaluate() with fake generate/score callables, and compare() of two models."""

import logging
from dataclasses import dataclass, field
from enum import Enum

import pytest

from sdk.eval.records import EvalError, EvalRow, load_rows, save_rows
from sdk.eval.run import RewardLike, compare, evaluate, is_pass
from sdk.tasks.records import AnswerVerifier, Message, Source, Split, Task


class Status(str, Enum):
    OK = "ok"
    FAILED = "failed"
    SANDBOX_ERROR = "sandbox_error"


@dataclass(frozen=True)
class Reward:
    score: float | None
    status: object
    flags: tuple = field(default_factory=tuple)


def make_task(i: int, split=Split.HELDOUT, domain="python/billing") -> Task:
    return Task(domain=domain, prompt=(Message(role="user", content=f"q{i}"),),
                verifier=AnswerVerifier(expected=str(i)), source=Source(connector="test"), split=split)


def echo_generate(answer_of):
    """A fake model: answers per prompt text; the i-th sample appends its index."""
    calls = []

    def generate(prompts, n):
        calls.append((len(prompts), n))
        assert all(isinstance(m, dict) and {"role", "content"} <= m.keys() for p in prompts for m in p)
        return [[(answer_of(p[-1]["content"], j), 3) for j in range(n)] for p in prompts]
    generate.calls = calls
    return generate


def exact_score(tasks, completions):
    out = []
    for t, c in zip(tasks, completions):
        if c == "INFRA":
            out.append(Reward(None, Status.SANDBOX_ERROR))
        elif c == t.verifier.expected:
            out.append(Reward(1.0, Status.OK))
        else:
            out.append(Reward(0.0, Status.FAILED, ("exit_zero",) if c == "HACK" else ()))
    return out


def test_is_pass_needs_ok_full_marks_and_a_score():
    assert isinstance(Reward(1.0, "ok"), RewardLike)
    assert is_pass(Reward(1.0, Status.OK)) and is_pass(Reward(1.0, "ok"))
    assert not is_pass(Reward(0.95, "ok"))
    assert not is_pass(Reward(1.0, "failed"))
    assert not is_pass(Reward(None, "ok"))


def test_evaluate_rows_batches_and_unjudged_samples():
    tasks = [make_task(i) for i in range(5)]
    answers = {"q0": ["0", "0"], "q1": ["1", "x"], "q2": ["INFRA", "2"], "q3": ["HACK", "x"], "q4": ["INFRA", "INFRA"]}
    gen = echo_generate(lambda q, j: answers[q][j])
    rows = evaluate(tasks, gen, exact_score, "base", n_samples=2, progress=False, batch_size=2)
    assert gen.calls == [(2, 2), (2, 2), (1, 2)]
    assert [r.task_id for r in rows] == [t.id for t in tasks]
    assert [(r.n, r.c) for r in rows] == [(2, 2), (2, 1), (1, 1), (2, 0), (0, 0)]
    assert rows[2].rewards == (None, 1.0) and rows[2].statuses == ("sandbox_error", "ok")
    assert rows[3].flags == (("exit_zero",), ())
    assert rows[0].components == ({}, {})  # the fake scorer has no components
    assert rows[4].pass_rate is None and rows[4].n_unjudged == 2
    assert all(r.model == "base" and r.gen_tokens == 6 and r.split == Split.HELDOUT for r in rows)


def test_evaluate_records_a_crashing_scorer_as_not_judged(caplog):
    def boom(tasks, completions):
        raise RuntimeError("sandbox pool died")
    with caplog.at_level(logging.WARNING):
        rows = evaluate([make_task(0)], echo_generate(lambda q, j: "0"), boom, "base", 1, progress=False)
    assert rows[0].statuses == ("score_error",) and rows[0].rewards == (None,) and rows[0].n == 0
    assert "sandbox pool died" in caplog.text


def test_evaluate_rejects_wrong_counts_from_callables():
    tasks = [make_task(0), make_task(1)]
    with pytest.raises(EvalError, match="generate returned"):
        evaluate(tasks, lambda p, n: [[("a", 1)]], exact_score, "base", 1, progress=False)
    with pytest.raises(EvalError, match="score returned 1 results for 2"):
        evaluate(tasks, echo_generate(lambda q, j: "a"), lambda t, c: [Reward(0.0, "failed")], "b", 1,
                 progress=False)
    with pytest.raises(EvalError, match="n_samples"):
        evaluate(tasks, echo_generate(lambda q, j: "a"), exact_score, "b", 0, progress=False)


def test_rows_roundtrip_through_jsonl(tmp_path):
    rows = evaluate([make_task(0), make_task(1)], echo_generate(lambda q, j: "0"), exact_score, "tuned", 1,
                    progress=False)
    path = save_rows(tmp_path / "rows" / "tuned.jsonl", rows)
    assert load_rows(path) == rows
    path.write_text(path.read_text() + '{"task_id": 1}\n')
    with pytest.raises(EvalError, match=r"tuned.jsonl:3"):
        load_rows(path)


def test_eval_row_rejects_misaligned_samples():
    with pytest.raises(ValueError, match="one entry per completion"):
        EvalRow(task_id="t", domain="d", split=Split.OOD, model="m", completions=("a", "b"), rewards=(1.0,),
                passed=(True,), statuses=("ok",), flags=((),))


def _rows(model, outcomes, split=Split.HELDOUT, domain="python/billing", start=0):
    """outcomes: per task a string of samples, 1 pass / 0 fail / - unjudged."""
    rows = []
    for i, s in enumerate(outcomes, start):
        rows.append(EvalRow(
            task_id=f"t{i}", domain=domain, split=split, model=model, completions=tuple("c" * len(s)),
            rewards=tuple(None if ch == "-" else float(ch) for ch in s), passed=tuple(ch == "1" for ch in s),
            statuses=tuple({"1": "ok", "0": "failed", "-": "sandbox_error"}[ch] for ch in s),
            flags=tuple(() for _ in s)))
    return rows


def test_compare_diff_counts_and_pass_at_k():
    base = _rows("base", ["11", "10", "00", "00", "--"]) + _rows("base", ["11", "00"], Split.OOD, "js/ui", 5)
    tuned = _rows("tuned", ["00", "11", "11", "00", "11"]) + _rows("tuned", ["11", "01"], Split.OOD, "js/ui", 5)
    cmp = compare(base, tuned, seed=0)
    assert cmp.n_samples == 2 and cmp.ks == (1, 2)
    outcome = {d.task_id: d.outcome for d in cmp.diffs}
    assert outcome == {"t0": "regression", "t1": "both", "t2": "gain", "t3": "neither", "t4": "unjudged",
                       "t5": "both", "t6": "gain"}
    assert cmp.outcome_counts(["heldout"]) == {"regression": 1, "gain": 1, "both": 1, "neither": 1, "unjudged": 1}
    assert [d.task_id for d in cmp.regressions()] == ["t0"]
    held = cmp.by_split["heldout"]
    assert held.n_tasks == 5 and held.base[1].n == 4           # t4 has no judged base sample
    assert held.base[1].value == pytest.approx((1 + 0.5 + 0 + 0) / 4)
    assert held.tuned[1].value == pytest.approx((0 + 1 + 1 + 0) / 4)
    assert held.base[2].value == pytest.approx((1 + 1 + 0 + 0) / 4)
    assert held.delta[1].value == pytest.approx(0.5 - 0.375)
    assert set(cmp.by_domain) == {"python/billing", "js/ui"}
    assert cmp.by_split["ood"].tuned[2].value == pytest.approx(1.0)
    assert cmp.overall.n_tasks == 7


def test_compare_unpaired_duplicates_and_empty():
    base = _rows("base", ["1", "0", "1"])
    tuned = _rows("tuned", ["1", "1"])
    cmp = compare(base, tuned)
    assert cmp.unpaired == ("t2",) and cmp.ks == (1,)
    with pytest.raises(EvalError, match="appears twice"):
        compare(base + base[:1], tuned)
    with pytest.raises(EvalError, match="no task was evaluated for both"):
        compare(base, _rows("tuned", ["1"], start=10))


def test_compare_mean_reward_gives_partial_credit():
    base = _rows("base", ["0", "0"])
    tuned = [r.model_copy(update={"rewards": (0.5,)}) for r in _rows("tuned", ["0", "0"])]
    sl = compare(base, tuned).by_split["heldout"]
    assert sl.delta[1].value == 0.0                        # pass@1 sees nothing
    assert sl.mean_reward["delta"].value == pytest.approx(0.5)
    assert sl.mean_reward["tuned"].n == 2


def test_reward_result_from_sdk_rewards_fits_the_protocol():
    result = pytest.importorskip("sdk.rewards.result")
    ok = result.RewardResult(score=1.0, status=result.RewardStatus.OK)
    hack = result.RewardResult(score=0.0, status=result.RewardStatus.SUSPECTED_HACKING, flags=("exit_zero",))
    infra = result.RewardResult.not_judged(result.RewardStatus.INFRASTRUCTURE, "bwrap died")
    assert isinstance(ok, RewardLike) and is_pass(ok)
    assert not is_pass(hack) and not is_pass(infra)
    rows = evaluate([make_task(0)], echo_generate(lambda q, j: "x"), lambda t, c: [hack, infra, ok][: len(c)],
                    "tuned", 3, progress=False)
    assert rows[0].statuses == ("suspected_hacking", "infrastructure", "ok")
    assert (rows[0].n, rows[0].c, rows[0].flags[0]) == (2, 1, ("exit_zero",))
    assert len(rows[0].components) == 3 and rows[0].components[1] == {}
