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


def test_retry_rows_reuses_first_attempts_and_closes_its_generator(tmp_path, monkeypatch):
    """stage_eval.retry_rows (bench/arms.py --retry): only failed first attempts are generated again,
    with the eval config's generator settings, and the generator is closed."""
    from rich.console import Console

    import sdk.generate
    from sdk.config import parse_config
    from sdk.rewards.tiered import score_batch
    from sdk.run.context import RunInputs, StageContext
    from sdk.run.layout import RunLayout
    from sdk.run.stage_eval import retry_rows
    from sdk.sandbox import make_sandbox

    cfg = parse_config({"sources": [{"type": "pytest", "domain": "x"}], "run_dir": str(tmp_path),
                        "eval": {"max_new_tokens": 77, "batch_size": 3}})
    sandbox = make_sandbox(SandboxConfig())
    ctx = StageContext(cfg=cfg, layout=RunLayout(tmp_path), inputs=RunInputs(RunLayout(tmp_path)), console=Console(),
                       progress=False, model_path="model", sandbox=sandbox)
    tasks = [add_task(0), add_task(1)]
    first = evaluate(tasks, lambda ps, n: [[(RIGHT, 5, "stop")], [(WRONG, 5, "stop")]],
                     lambda ts, cs: score_batch(ts, cs, sandbox, RewardConfig()), "tuned", 1, progress=False)
    made = []

    class Gen:
        def __init__(self, *args):
            made.append(args)
            self.asked, self.closed = [], False

        def __call__(self, convs, n):
            self.asked.extend(convs)
            return [[(RIGHT, 6, "stop")] for _ in convs]

        def close(self):
            self.closed = True

    gens = []
    monkeypatch.setattr(sdk.generate, "make_generator", lambda *a: gens.append(Gen(*a)) or gens[-1])
    out = retry_rows(ctx, tasks, first, "adapter-dir")
    assert [r.retry for r in out] == [(True,), (True,)] and [r.passed for r in out] == [(True,), (False,)]
    assert made[0][:4] == ("model", "adapter-dir", 3, 77), "the eval config's generator settings"
    assert len(gens[0].asked) == 1 and gens[0].asked[0][-2]["content"] == WRONG and gens[0].closed
