"""Reward semantics of issue 14 item 3, one test per field case (R6, P3, W1, W2 in shared/cases)."""

from __future__ import annotations

import threading
import time

import pytest

from sdk.errors import RewardError
from sdk.rewards.answers import AnswerOptions, find_answer, score_answer
from sdk.rewards.config import RewardConfig
from sdk.rewards.result import RewardStatus
from sdk.rewards.tiered import score_batch
from sdk.rewards.trl import SandboxReward
from sdk.rewards.verifier_pool import VerifierPool
from sdk.tasks.records import AnswerVerifier, Message, ReferenceOnly, Source, Task

from .helpers import (
    FakeSandbox,
    fake_factory,
    flaky_factory,
    judge_hangs,
    judge_with_alarm,
)

SYSTEM = "Answer the question. Put the final answer in tags, for example: <answer>Paris</answer>"
W = RewardConfig()


def qa(verifier: AnswerVerifier, system: str = SYSTEM) -> Task:
    return Task(domain="qa/capitals", source=Source(connector="t"), verifier=verifier,
                prompt=(Message(role="system", content=system),
                        Message(role="user", content="What is the capital of France?")))


# one verifier per answer mode, each matching "Paris" (numeric/json: an expected value of their kind)
MODES = [AnswerVerifier(mode="exact", expected="Paris"), AnswerVerifier(mode="normalized", expected="paris"),
         AnswerVerifier(mode="regex", expected=r"[Pp]aris|.*know.*"), AnswerVerifier(mode="numeric", expected="0"),
         AnswerVerifier(mode="json", expected='{"type": "string"}', json_schema=True)]


# ----- R6 tagged answers --------------------------------------------------------------------
@pytest.mark.parametrize("verifier", MODES, ids=lambda v: v.mode)
@pytest.mark.parametrize("format_weight", [0.0, 0.3])
def test_R6_untagged_i_dont_know_scores_zero_in_every_mode_and_format(verifier, format_weight):
    weights = W.model_copy(update={"format": format_weight})
    [res] = score_batch([qa(verifier)], ["I don't know"], FakeSandbox(), weights)
    assert res.score == 0.0 and res.components["format"] == 0.0 and res.components["answer_found"] == 0.0
    assert res.status == RewardStatus.NO_CODE


def test_R6_tagged_answer_gets_full_credit_in_exact_mode_and_the_format_metric_is_logged():
    [plain, weighted] = [score_batch([qa(MODES[0])], ["<answer>Paris</answer>"], FakeSandbox(),
                                     W.model_copy(update={"format": w}))[0] for w in (0.0, 0.5)]
    assert plain.score == 1.0 and plain.status == RewardStatus.OK and plain.components["format"] == 1.0
    assert weighted.score == 1.0
    # right answer, wrong format: full credit at weight 0 (metric only), less with a weight
    v = MODES[0]
    opts = AnswerOptions(format_weight=0.5)
    assert score_answer(v, "Answer: Paris", AnswerOptions(), SYSTEM).score == 1.0
    off = score_answer(v, "Answer: Paris", opts, SYSTEM)
    assert off.components == {"match": 1.0, "answer_found": 1.0, "format": 0.0} and off.score == pytest.approx(1 / 1.5)


def test_R6_markers_tags_boxed_and_answer_lines_are_understood_and_configurable():
    assert find_answer("<think><answer>Rome</answer></think> so <answer> Paris </answer>") == ("Paris", "tag")
    assert find_answer(r"hence $\boxed{\frac{1}{2}}$") == (r"\frac{1}{2}", "boxed")
    assert find_answer("work...\nFinal answer: 42") == ("42", "line")
    assert find_answer("no marker here\nParis") == ("Paris", None)  # the prompt shows no marker: last line
    assert find_answer("Paris", prompt_text=SYSTEM) == ("", None)  # it does: an untagged line is no answer
    assert find_answer("Paris", AnswerOptions(fallback="last_line"), SYSTEM) == ("Paris", None)
    assert find_answer("<sol>Paris</sol>", AnswerOptions(tags=("sol",))) == ("Paris", "tag")
    assert find_answer(r"\boxed{7}", AnswerOptions(markers=("tag",), fallback="none")) == ("", None)
    cfg = RewardConfig(answer_tags=("sol",), answer_markers=("tag",), answer_fallback="none", format=0.2)
    assert AnswerOptions.of(cfg) == AnswerOptions(markers=("tag",), tags=("sol",), fallback="none", format_weight=0.2)
    [res] = score_batch([qa(MODES[0], "Reply as <sol>X</sol>")], ["<sol>Paris</sol>"], FakeSandbox(), cfg)
    assert res.score == 1.0


# ----- W1 a timeout that needs the main thread ------------------------------------------------
def _judge_task() -> Task:
    return Task(domain="chat", prompt=(Message(role="user", content="capital of France?"),), verifier=ReferenceOnly(),
                source=Source(connector="t"))


def test_W1_a_verifier_using_signal_alarm_works_from_a_worker_thread():
    out: list = []
    thread = threading.Thread(target=lambda: out.extend(score_batch(
        [_judge_task()] * 2, ["Paris", "Lyon"], FakeSandbox(), W, judge=judge_with_alarm)))
    thread.start()
    thread.join(60)
    assert [r.score for r in out] == [1.0, 0.0]
    assert all(r.status == RewardStatus.JUDGED_UNVERIFIED for r in out)


def test_W1_a_verifier_error_is_masked_not_zero():
    # an unpicklable judge cannot reach a worker process: verifier_error with the fix, reward None
    [res] = score_batch([_judge_task()], ["Paris"], FakeSandbox(), W, judge=lambda t, c: 1.0)
    assert res.score is None and res.status == RewardStatus.VERIFIER_ERROR and "module-level" in res.detail
    assert not res.status.judged


def test_W1_self_test_goes_through_the_worker_path_and_stops_a_broken_one():
    reward = SandboxReward(sandbox_factory=fake_factory)
    reward.self_test()  # answer (verifier workers) and unit_tests (sandbox) samples score 1.0
    assert reward._tested == {"answer", "unit_tests"}
    with pytest.raises(RewardError, match="self-test failed: a known-correct unit_tests sample") as err:
        SandboxReward(sandbox_factory=flaky_factory)(["p"], ["x"], task_json=[_unit_task_json()])
    assert "sandbox" in err.value.fix
    broken = SandboxReward(weights=RewardConfig(answer_tags=("sol",), answer_markers=("tag",)))
    with pytest.raises(RewardError, match="known-correct answer sample scored 0.0"):
        broken(["p"], ["<sol>4</sol>"], task_json=[qa(MODES[0]).model_dump_json()])


def _unit_task_json() -> str:
    from .helpers import add_task

    return add_task().model_dump_json()


# ----- W2 a verifier that never returns ---------------------------------------------------------
def test_W2_a_hung_check_is_killed_at_its_deadline_and_the_others_finish():
    pool = VerifierPool(workers=8)
    weights = W.model_copy(update={"verifier_timeout_s": 3.0})
    completions = ["Paris"] * 3 + ["hang"] + ["Paris"] * 4
    score_batch([_judge_task()], ["warm"], FakeSandbox(), weights, judge=judge_hangs, verifiers=pool)  # start one
    t0 = time.monotonic()
    res = score_batch([_judge_task()] * 8, completions, FakeSandbox(), weights, judge=judge_hangs, verifiers=pool)
    took = time.monotonic() - t0
    hung = res[3]
    assert hung.score is None and hung.status == RewardStatus.VERIFIER_TIMEOUT and "killed" in hung.detail
    assert [r.score for i, r in enumerate(res) if i != 3] == [1.0] * 7
    assert pool.killed == 1 and took < 3.0 + 20  # the deadline, plus starting 7 workers on a busy machine
    # the same input is not retried (no second hang), and the replaced worker serves on
    t0 = time.monotonic()
    again = score_batch([_judge_task()] * 2, ["hang", "Paris"], FakeSandbox(), weights, judge=judge_hangs, verifiers=pool)
    assert again[0].status == RewardStatus.VERIFIER_TIMEOUT and "not run again" in again[0].detail
    assert again[1].score == 1.0 and time.monotonic() - t0 < 2.5 and pool.killed == 1
    pool.close()


def test_W2_a_catastrophic_answer_regex_is_killed_not_waited_for():
    pool = VerifierPool(workers=2)
    evil = qa(AnswerVerifier(mode="regex", expected=r"(a+)+$"), system="Reply as Answer: <text>")
    ok = qa(MODES[0], system="Reply as Answer: <text>")
    t0 = time.monotonic()
    res = score_batch([evil, ok], ["Answer: " + "a" * 40 + "b", "Answer: Paris"], FakeSandbox(),
                      W.model_copy(update={"verifier_timeout_s": 2.0}), verifiers=pool)
    assert res[0].status == RewardStatus.VERIFIER_TIMEOUT and res[0].score is None
    assert res[1].score == 1.0 and time.monotonic() - t0 < 2.0 + 20
    pool.close()


# ----- P3 the same name twice ---------------------------------------------------------------
P3_TESTS = {"test_primes.py": "from solution import is_prime, primes_upto\n\n\ndef test_is_prime():\n"
                              "    assert [is_prime(k) for k in (2, 4, 9, 11)] == [True, False, False, True]\n\n\n"
                              "def test_primes_upto():\n    assert primes_upto(10) == [2, 3, 5, 7]\n"}
GOOD_IS_PRIME = "def is_prime(n):\n    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))\n"
HELPERS = ("def _sort_inplace(xs):\n    xs.sort()\n\n\ndef primes_upto(n):\n"
           "    out = [k for k in range(n, 1, -1) if is_prime(k)]\n    _sort_inplace(out)\n    return out\n")


def _p3_task(**changes) -> Task:
    from sdk.tasks.records import UnitTestVerifier

    fields = {"tests": P3_TESTS, "entry_point": "primes_upto", "timeout_s": 20.0, **changes}
    return Task(domain="python/p3", source=Source(connector="t"), prompt=(Message(role="user", content="primes"),),
                verifier=UnitTestVerifier(**fields))


def test_P3_last_definition_wins_with_a_warning_helpers_kept_demo_code_ignored(real_sandbox):
    twice = GOOD_IS_PRIME + "\n\n" + HELPERS + "\n\ndef is_prime(n):\n    return True\n"
    only_last = HELPERS + "\n\ndef is_prime(n):\n    return True\n"
    fixed = GOOD_IS_PRIME + "\n\n" + HELPERS
    demo = "\n\nprint(primes_upto(10))\nprint(primes_upto('x'))\n"  # the second would crash an import
    fence = "```python\n{}```".format
    res = score_batch([_p3_task()] * 4, [fence(twice + demo), fence(only_last), fence(fixed + demo), fence(fixed)],
                      real_sandbox, W)
    dup, last, fixed_demo, fixed_plain = res
    # Python's policy: the last `is_prime` (return True) is the one judged, exactly as if it were alone
    assert dup.score == last.score < 1.0 and dup.components["tests"] == last.components["tests"]
    assert "duplicate_definition" in dup.flags and dup.components["duplicate_definitions"] == 1.0
    assert dup.status != RewardStatus.SUSPECTED_HACKING  # a warning, not a penalty
    # helpers kept, and the trailing demo prints change nothing
    assert fixed_demo.score == fixed_plain.score == 1.0 and fixed_demo.components["demo_code_removed"] == 1.0
    assert fixed_plain.flags == ()


def test_P3_a_spliced_task_uses_the_models_definitions_not_the_modules(real_sandbox):
    module = ('"""Primes."""\n\n\ndef _sort_inplace(xs):\n    pass  # the module\'s own, broken\n\n\n'
              "def is_prime(n):\n    raise NotImplementedError\n\n\n" + HELPERS.split("\n\n\n", 1)[1])
    tests = {"test_primes.py": P3_TESTS["test_primes.py"].replace("from solution", "from primes")}
    task = _p3_task(files={"primes.py": module}, target_path="primes.py", tests=tests, entry_point="is_prime")
    completion = ("```python\ndef is_prime(n):\n    return False\n\n\ndef _sort_inplace(xs):\n    xs.sort()\n\n\n"
                  + GOOD_IS_PRIME + "\n\nprint(is_prime(7))\n```")
    [res] = score_batch([task], [completion], real_sandbox, W)
    assert res.score == 1.0 and "duplicate_definition" in res.flags, res


@pytest.mark.parametrize(("language", "framework", "code", "kept", "gone"), [
    ("cpp", "tltest", ("#include <string>\nint add(int a, int b) { return 0; }\nint add(double a) { return 1; }\n"
                      "const char* s = \"}{\";\nint add(int x, int y) {\n  if (x) { return x + y; }\n  return y;\n}\n"),
     ["#include <string>", "int add(double a)", "return x + y"], ["return 0;"]),
    ("c", "tltest", ("#include <stdio.h>\nint add(int a, int b)\n{ return 0; }\nstatic char c = '{';\n"
                    "int add(int a, int b) { return a + b; }\n"), ["#include <stdio.h>", "'{'", "a + b"], ["return 0"]),
    ("java", "junit", ("import java.util.*;\nclass Solution {\n  @Deprecated\n  static int add(int a, int b) { return 0; }\n"
                      "  static int add(int a, int b) { return a + b; }\n}\n"), ["class Solution {", "a + b"],
     ["return 0", "@Deprecated"]),
    ("go", "go", ("package add\nimport \"fmt\"\nfunc Add(a, b int) int { return 0 }\nfunc (s *T) Add(a int) int { return 1 }\n"
                 "func Add(a, b int) int { return a + b }\n"), ["package add", "(s *T) Add", "a + b"], ["return 0"]),
    ("javascript", "node", ("function add(a, b) { return 0; }\nconst s = `}{`;\nfunction add(a, b) { return a + b; }\n"
                           "module.exports = { add };\n"), ["`}{`", "a + b", "module.exports"], ["return 0"]),
])
def test_P3_every_language_keeps_the_last_definition_and_warns(language, framework, code, kept, gone):
    from sdk.tasks.records import UnitTestVerifier

    fake = FakeSandbox()
    task = Task(domain=f"{language}/p3", source=Source(connector="t"), prompt=(Message(role="user", content="add"),),
                verifier=UnitTestVerifier(language=language, framework=framework, tests={"t.txt": "x"},
                                          entry_point="Add" if language == "go" else "add"))
    [res] = score_batch([task], [f"```{language}\n{code}```"], fake, W, static_checks=False)
    sent = fake.batches[0][0].solution
    assert all(k in sent for k in kept) and not any(g in sent for g in gone), sent
    assert "duplicate_definition" in res.flags and res.components["duplicate_definitions"] == 1.0
