"""Issue 15: the eval stage scores a completion another candidate already gave for the same task from
memory (one sandbox run per distinct (task, completion) in a stage), with the same rows."""

from dataclasses import replace

from sdk.rewards.result import RewardResult, RewardStatus
from sdk.tasks.records import Split
from test_select_adapter import _run


def _two_candidates(tmp_path, monkeypatch):
    """text_rows for ``sft`` then ``rl`` on the held-out tasks: both answer every task with the same text
    but one; the fake scorer records each (task id, completion) it is asked to judge."""
    from sdk.run.stage_eval import text_rows

    ctx, _ = _run(tmp_path, batch_size=2)
    ctx = replace(ctx, sandbox=object())
    tasks = sorted(ctx.inputs.taskset().split(Split.HELDOUT), key=lambda t: t.id)
    judged = []

    class Gen:
        def __init__(self, label):
            self.label = label

        def __call__(self, prompts, n, **kw):
            odd = lambda q: self.label == "rl" and q == tasks[0].prompt[-1].content  # noqa: E731
            return [[(f"answer to {p[-1]['content']}" + (" (rl)" if odd(p[-1]["content"]) else ""), 3, "stop")] * n
                    for p in prompts]

        def close(self):
            pass

    def score(ts, cs, *a, **k):
        judged.extend(zip([t.id for t in ts], cs))
        return [RewardResult(score=1.0 if c.endswith("0.") else 0.0,
                             status=RewardStatus.OK if c.endswith("0.") else RewardStatus.FAILED) for c in cs]

    monkeypatch.setattr("sdk.rewards.tiered.score_batch", score)
    rows = {}
    for label in ("sft", "rl"):
        monkeypatch.setattr("sdk.generate.make_generator", lambda *a, lb=label, **k: Gen(lb))
        rows[label] = text_rows(ctx, tasks, label, None)
    return ctx, tasks, rows, judged


def test_a_completion_repeated_by_another_candidate_is_scored_once(tmp_path, monkeypatch):
    ctx, tasks, rows, judged = _two_candidates(tmp_path, monkeypatch)
    assert len(tasks) >= 2
    assert len(judged) == len(set(judged)), "no (task, completion) judged twice"
    assert len(judged) == len(tasks) + 1, "sft's rows all judged; of rl's only its one different answer"
    assert ctx.scorers[0].hits == len(tasks) - 1
    for sft_row, rl_row in zip(rows["sft"], rows["rl"]):
        assert sft_row.task_id == rl_row.task_id
        if sft_row.completions == rl_row.completions:
            assert (sft_row.passed, sft_row.rewards) == (rl_row.passed, rl_row.rewards), "same result from memory"
