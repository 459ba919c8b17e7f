"""Expert iteration's and self-distillation's E-step scores each generated batch while the next is
generated (generators that stream batches), with the same rows, counts and reward log as scoring
all samples after generation (issue 15, demo time)."""

import json
import threading

from sdk.train.expert_iteration import sample_round
from tests.train.test_expert_iteration import BAD, GOOD, ok, task


def answer(i: int, j: int) -> tuple:
    return (GOOD if (i + j) % 3 == 0 else BAD + f"\n# {i}.{j}", 5 + j, "stop")


class PlainGen:
    """Returns everything at once (no ``on_batch``): sample_round scores after generation."""

    def __call__(self, prompts, n):
        return [[answer(i, j) for j in range(n)] for i in range(len(prompts))]

    def close(self):
        self.closed = True


class StreamingGen(PlainGen):
    """Generates in batches of 3 flat samples in a shuffled order, reporting each through ``on_batch``;
    the second batch waits until the first has been scored, which only an overlapped caller allows."""

    streams_batches = True

    def __init__(self, scored_first: threading.Event):
        self.scored_first, self.waited = scored_first, []

    def __call__(self, prompts, n, on_batch=None):
        flat = [(i, j) for i in range(len(prompts)) for j in range(n)]
        order = list(range(len(flat)))[::-1]
        for b, start in enumerate(range(0, len(order), 3)):
            if b == 1:
                self.waited.append(self.scored_first.wait(timeout=30))
            idx = order[start:start + 3]
            on_batch(idx, [answer(*flat[k]) for k in idx])
        return super().__call__(prompts, n)


def test_streamed_scoring_matches_scoring_after_generation(tmp_path):
    part = [task(i) for i in range(4)]
    scored_first, calls = threading.Event(), []

    def score(tasks, completions):
        calls.append(len(completions))
        scored_first.set()
        return [ok(c) for c in completions]

    plain = sample_round(part, PlainGen(), score, 3, 2, tmp_path / "plain.jsonl", 1)
    calls.clear()
    streaming_gen = StreamingGen(scored_first)
    streamed = sample_round(part, streaming_gen, score, 3, 2, tmp_path / "streamed.jsonl", 1)
    assert streamed == plain and plain[1]["verified"] > 0
    assert calls == [3, 3, 3, 3], "one score call per generated batch"
    assert streaming_gen.waited == [True] and streaming_gen.closed
    read = lambda p: [json.loads(line) for line in p.read_text().splitlines()]  # noqa: E731
    assert read(tmp_path / "streamed.jsonl") == read(tmp_path / "plain.jsonl")
