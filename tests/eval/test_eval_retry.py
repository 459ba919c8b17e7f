"""One retry with execution feedback (eval.retry_with_feedback): pass@1 after one retry."""

from sdk.config import RewardConfig, SandboxConfig
from sdk.eval.checkpoints import retry_section
from sdk.eval.retry import retry_prompt, retry_with_feedback
from sdk.eval.run import evaluate
from sdk.tasks.records import Message, Source, Split, Task, UnitTestVerifier

TESTS = {"test_add.py": "from solution import add\n\n\ndef test_small():\n    assert add(2, 3) == 5\n"}
HIDDEN = {"test_add_hidden.py": "from solution import add\n\n\ndef test_big():\n    assert add(10, 20) == 30\n"}
WRONG = "```python\ndef add(a, b):\n    return a - b\n```"
RIGHT = "```python\ndef add(a, b):\n    return a + b\n```"


def add_task(i):
    return Task(domain="d", prompt=(Message(role="user", content=f"Write add ({i})."),), split=Split.HELDOUT,
                verifier=UnitTestVerifier(tests=TESTS, hidden_tests=HIDDEN, entry_point="add", timeout_s=5.0),
                source=Source(connector="t"))


def test_retry_sees_visible_test_output_and_counts_second_passes():
    from sdk.rewards.tiered import score_batch
    from sdk.run.stage_eval import visible_test_feedback
    from sdk.sandbox import make_sandbox

    cfg_like = type("C", (), {"sandbox": SandboxConfig()})()
    sandbox = make_sandbox(SandboxConfig())
    score = lambda ts, cs: score_batch(ts, cs, sandbox, RewardConfig())  # noqa: E731
    tasks = [add_task(0), add_task(1), add_task(2)]
    first = {0: RIGHT, 1: WRONG, 2: WRONG}
    rows = evaluate(tasks, lambda ps, n: [[(first[i], 5, "stop")] for i in range(len(ps))] if len(ps) == 3 else None,
                    score, "tuned", 1, progress=False)
    seen = []

    def second(convs, n):
        seen.extend(convs)
        fixed = ["(1)" in c[0]["content"] for c in convs]  # only task 1 gets fixed on the retry
        return [[(RIGHT if f else WRONG, 6, "stop")] for f in fixed]

    out = retry_with_feedback(tasks, rows, second, score, visible_test_feedback(sandbox, cfg_like))
    assert [r.retry for r in out] == [(True,), (True,), (False,)] and [r.passed for r in out] == [r.passed for r in rows]
    assert len(seen) == 2 and seen[0][1] == {"role": "assistant", "content": WRONG}
    note = seen[0][2]["content"]
    assert "test_small" in note and "test_big" not in note, "feedback from visible tests only"
    sec = retry_section({"tuned": out}, n_resamples=100)["tuned"]["heldout"]
    assert round(sec["first"]["value"], 3) == 0.333 and round(sec["after_retry"]["value"], 3) == 0.667


def test_retry_prompt_shape():
    conv = retry_prompt(add_task(0), WRONG, "")
    assert [m["role"] for m in conv] == ["user", "assistant", "user"] and "(no output)" in conv[2]["content"]
