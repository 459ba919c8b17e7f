"""Speed paths of evaluation that must not change a result (issue 15, demo time): scoring
overlapped with the next batch's generation, and the fence criterion not re-decoding done rows."""

import threading

import torch

from sdk.eval.run import evaluate
from sdk.generate import FENCE, FenceStop, closed_fence
from tests.eval.test_eval_run import Reward, Status, make_task


def _score_once_at_a_time(log):
    """A scorer that records each call and fails the test if two calls ever run at once."""
    busy = threading.Lock()

    def score(tasks, completions):
        assert busy.acquire(blocking=False), "score was called while another call was running"
        try:
            log.append([t.verifier.expected for t in tasks])
            return [Reward(1.0 if c == t.verifier.expected else 0.0, Status.OK if c == t.verifier.expected else Status.FAILED)
                    for t, c in zip(tasks, completions)]
        finally:
            busy.release()
    return score


def test_overlap_gives_the_same_rows_in_order():
    tasks = [make_task(i) for i in range(7)]

    def generate(prompts, n):
        return [[(p[-1]["content"][1:] if int(p[-1]["content"][1:]) % 3 else "wrong", 4, "stop")] * n for p in prompts]

    seq_log, ovl_log = [], []
    seq = evaluate(tasks, generate, _score_once_at_a_time(seq_log), "base", 2, progress=False, batch_size=2, overlap=False)
    ovl = evaluate(tasks, generate, _score_once_at_a_time(ovl_log), "base", 2, progress=False, batch_size=2)
    assert [r.model_dump() for r in ovl] == [r.model_dump() for r in seq]
    assert [r.task_id for r in ovl] == [t.id for t in tasks]
    assert ovl_log == seq_log and len(ovl_log) == 4  # one call per batch, same lists, same order
    assert [any(r.passed) for r in ovl] == [i % 3 != 0 for i in range(7)]


def test_overlap_scores_a_batch_while_the_next_is_generated():
    """Scoring batch 0 waits for generation of batch 1 to start: only an overlapped loop gets there."""
    tasks = [make_task(i) for i in range(4)]
    second_batch_started = threading.Event()
    seen = []

    def generate(prompts, n):
        if prompts[0][-1]["content"] == "q2":
            second_batch_started.set()
        return [[(p[-1]["content"][1:], 1, "stop")] * n for p in prompts]

    def score(ts, cs):
        seen.append(second_batch_started.wait(timeout=30) if ts[0].verifier.expected == "0" else True)
        return [Reward(1.0, Status.OK) for _ in ts]

    rows = evaluate(tasks, generate, score, "base", 1, progress=False, batch_size=2)
    assert seen == [True, True] and all(all(r.passed) for r in rows)


def test_overlap_keeps_a_failing_scorer_as_unjudged_rows():
    tasks = [make_task(i) for i in range(3)]

    def score(ts, cs):
        raise RuntimeError("sandbox down")

    rows = evaluate(tasks, lambda ps, n: [[("0", 1)] * n for _ in ps], score, "base", 1, progress=False, batch_size=2)
    assert [r.statuses for r in rows] == [("score_error",)] * 3


class _CountingTokenizer:
    """Decodes ids as characters (id 0 is the pad, skipped) and counts the rows it decoded."""

    pad_token_id = 0

    def __init__(self):
        self.rows_decoded = 0

    def batch_decode(self, ids, skip_special_tokens=True):
        self.rows_decoded += len(ids)
        return ["".join(chr(int(i)) for i in row if int(i) != self.pad_token_id) for row in ids]


def _stateless(text: str) -> bool:
    return closed_fence(text) and (text.endswith("\n") or text.rstrip().endswith(FENCE))


def test_fence_stop_same_verdicts_without_decoding_done_rows():
    answers = ["```python\nx = 1\n```\nmore prose after", "```python\ny = 2\n", "no fence at all here, longer"]
    width = max(map(len, answers))
    prompt = [[7, 7]] * len(answers)
    # generate appends pads to a row once it is done; rows here keep their own text (the verdict of a
    # done row is never read, so only running rows are compared below)
    full = torch.tensor([p + [ord(c) for c in a.ljust(width, "\0")] for p, a in zip(prompt, answers)])
    tok = _CountingTokenizer()
    stop, done_at = FenceStop(tok, 2), {}
    for step in range(1, width + 1):
        got = stop(full[:, :2 + step]).tolist()
        for i, a in enumerate(answers):
            if i not in done_at:
                assert got[i] == _stateless(a[:step].replace("\0", "")), (i, step)
                if got[i]:
                    done_at[i] = step
            else:
                assert got[i]  # a done row stays done
    assert done_at == {0: answers[0].index("```", 3) + 3}  # the fence at the very end closes it
    assert tok.rows_decoded == done_at[0] + 2 * width  # row 0 not decoded after it closed its block
    # a shorter input (the next generate call) or another batch size starts afresh
    assert stop(full[:, :3]).tolist() == [False, False, False]
    assert stop(full[:1, :2 + done_at[0]]).tolist() == [True]


def test_generator_reports_each_batch_with_flat_indices(tiny_model_dir):
    from sdk.generate import HFGenerator

    gen = HFGenerator(tiny_model_dir, batch_size=4, max_new_tokens=3, temperature=0.0)
    prompts = [[{"role": "user", "content": c}] for c in ("hi", "add two numbers please", "sum")]
    seen = []
    try:
        out = gen(prompts, 2, on_batch=lambda idx, outs: seen.append((idx, outs)))
    finally:
        gen.close()
    assert [len(idx) for idx, _ in seen] == [4, 2]
    flat = {i: o for idx, outs in seen for i, o in zip(idx, outs)}
    assert sorted(flat) == list(range(6))
    assert all(out[i][j] == flat[i * 2 + j] for i in range(3) for j in range(2))
