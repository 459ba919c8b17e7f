"""Issue 15, stop 32: the eval stage loads each candidate adapter once for its validation and held-out
tasks (one batched pass, rows split after it), generates no (model, task) row twice, and the rows are
the ones separate passes give."""

from collections import Counter

from eval_rows import make_rows
from sdk.eval.records import load_rows
from sdk.tasks.records import Split
from test_select_adapter import _run


def _recording_scorer(monkeypatch, passes):
    """text_rows faked: a row passes when ``passes(label, task)``; each call's (label, adapter, task ids) kept."""
    calls = []

    def fake(ctx, tasks, label, adapter):
        calls.append((label, adapter, [t.id for t in tasks]))
        return [make_rows(label, ["1" if passes(label, t) else "0"], split=t.split)[0]
                .model_copy(update={"task_id": t.id}) for t in tasks]

    monkeypatch.setattr("sdk.run.stage_eval.text_rows", fake)
    return calls


def test_each_adapter_is_loaded_once_per_pass_and_no_row_is_generated_twice(tmp_path, monkeypatch):
    from sdk.run.stage_eval import stage_eval

    ctx, _ = _run(tmp_path)
    layout, tasks = ctx.layout, ctx.inputs.taskset()
    # rl wins validation; sft would win held-out (it must not matter); odd task numbers pass for everyone on OOD
    calls = _recording_scorer(monkeypatch, lambda label, t: (label == "rl" and t.split == Split.TRAIN)
                              or (label == "sft" and t.split == Split.HELDOUT)
                              or (t.split == Split.OOD and t.id[-1] in "13579"))
    sel = stage_eval(ctx).extra["selection"]
    assert sel["chosen"] == "rl"
    scored = Counter((label, tid) for label, _, ids in calls for tid in ids)
    assert scored and max(scored.values()) == 1, "no (model, task) row generated twice"
    loads = Counter(adapter for _, adapter, _ in calls)
    assert loads == {None: 1, layout.adapter("sft"): 1, layout.midway_adapter("rl"): 1, layout.adapter("rl"): 2}, \
        "one generator per candidate; the shipped one once more, for its OOD tasks only"
    assert calls[-1][2] == [t.id for t in sorted(tasks.split(Split.OOD), key=lambda t: t.id)]
    heldout = [t.id for t in sorted(tasks.split(Split.HELDOUT), key=lambda t: t.id)]
    for label in ("sft", "rl_midway", "rl"):
        rows = load_rows(layout.eval_rows(label))
        assert [r.task_id for r in rows] == heldout and all(r.model == label for r in rows)
        assert {r.split for r in load_rows(layout.validation_rows(label))} == {Split.TRAIN}
    assert all(r.passed[0] for r in load_rows(layout.eval_rows("sft"))), "held-out rows kept as scored"
    tuned = load_rows(layout.eval_rows("tuned"))
    assert [r.task_id for r in tuned] == heldout + calls[-1][2], "tuned: the shipped rows in task order"
    assert all(r.model == "tuned" for r in tuned)
    assert [r.passed for r in tuned[:len(heldout)]] == [r.passed for r in load_rows(layout.eval_rows("rl"))]


def test_without_checkpoints_the_choice_scores_validation_only(tmp_path, monkeypatch):
    from sdk.run.stage_eval import stage_eval

    ctx, _ = _run(tmp_path, checkpoints=False)
    calls = _recording_scorer(monkeypatch, lambda label, t: label == "sft")
    stage_eval(ctx)
    splits = {tid: t.split for t in ctx.inputs.taskset().tasks for tid in [t.id]}
    assert [c[0] for c in calls] == ["sft", "rl_midway", "rl", "base", "tuned"]
    assert all(splits[tid] == Split.TRAIN for _, _, ids in calls[:3] for tid in ids)
    assert calls[-1][1] == ctx.layout.adapter("sft")


def test_greedy_rows_of_one_joint_pass_equal_separate_passes(tiny_model_dir, tmp_path):
    """The generator level of the one-pass change: one greedy call over validation + held-out prompts
    returns, per prompt, what two separate calls return (batches mix the two, lengths differ)."""
    from sdk.generate import HFGenerator
    from test_eval_generation import _varied_model

    path = _varied_model(tiny_model_dir, tmp_path / "varied")
    val = [[{"role": "user", "content": c}] for c in ("hi", "sort a list of words", "1 2 3")]
    held = [[{"role": "user", "content": c}] for c in ("add two numbers", "x", "the quick brown fox jumps", "ok?")]
    gen = HFGenerator(path, batch_size=4, max_new_tokens=10, temperature=0.0)
    try:
        apart, joint = gen(val, 1) + gen(held, 1), gen(val + held, 1)
    finally:
        gen.close()
    assert joint == apart
    assert len({o[0][0] for o in joint}) > 1, "rows differ from prompt to prompt (the check can fail)"


def _fake_text_pass(monkeypatch, tmp_path, temperature):
    """text_rows with a fake generator (each answer names its prompt) and a fake reward (a pass when
    the answer is its own task's); returns (rows, the tasks, the prompts each generate call got)."""
    from sdk.rewards.result import RewardResult, RewardStatus
    from sdk.run.stage_eval import text_rows
    from sdk.tasks.records import Message

    from dataclasses import replace

    ctx, _ = _run(tmp_path, batch_size=2, temperature=temperature)
    ctx = replace(ctx, sandbox=object())
    tasks = [t.model_copy(update={"prompt": (Message(role="user", content=t.prompt[0].content + " ." * n),)})
             for t, n in zip(sorted(ctx.inputs.taskset().split(Split.HELDOUT), key=lambda t: t.id), (5, 0, 9, 2))]
    batches = []

    class Gen:
        def __call__(self, prompts, n, **kw):
            batches.append([p[-1]["content"] for p in prompts])
            return [[(p[-1]["content"], 3, "stop")] * n for p in prompts]

        def close(self):
            pass

    monkeypatch.setattr("sdk.generate.make_generator", lambda *a, **k: Gen())
    monkeypatch.setattr("sdk.rewards.tiered.score_batch", lambda ts, cs, *a, **k: [
        RewardResult(score=1.0 if c == t.prompt[-1].content else 0.0, status=RewardStatus.OK if c == t.prompt[-1].content
                     else RewardStatus.FAILED) for t, c in zip(ts, cs)])
    return text_rows(ctx, tasks, "sft", None), tasks, batches


def test_a_greedy_pass_generates_shortest_prompts_first_and_returns_rows_in_task_order(tmp_path, monkeypatch):
    rows, tasks, batches = _fake_text_pass(monkeypatch, tmp_path, 0.0)
    assert [r.task_id for r in rows] == [t.id for t in tasks]
    assert all(r.passed == (True,) and r.completions[0] == t.prompt[-1].content for r, t in zip(rows, tasks))
    sent = [p for b in batches for p in b]
    assert [len(p) for p in sent] == sorted(len(t.prompt[-1].content) for t in tasks), "batches by prompt length"
    assert len(batches) == 2 and sent != [t.prompt[-1].content for t in tasks], "the order did change"


def test_a_sampled_pass_keeps_the_task_order(tmp_path, monkeypatch):
    rows, tasks, batches = _fake_text_pass(monkeypatch, tmp_path, 0.7)
    assert [p for b in batches for p in b] == [t.prompt[-1].content for t in tasks]
    assert [r.task_id for r in rows] == [t.id for t in tasks] and all(r.passed == (True,) for r in rows)
