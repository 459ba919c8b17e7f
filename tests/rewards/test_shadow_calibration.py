"""Shadow comparisons calibrated on the reference (issue 14, ``_runner/tl_shadow.py``): a change task
whose reference has an honest non-structural ``==`` (a value class equal to a plain int) is flagged at
that comparison until mining records the site in ``ChangeVerifier.shadow_exempt``
(:func:`sdk.rewards.change.calibrate`, run by the git_history source); then the reference scores 1.0 unflagged, while the
same test's other comparisons stay shadowed."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from sdk.rewards.change import calibrate
from sdk.rewards.config import RewardConfig
from sdk.rewards.result import RewardResult, RewardStatus
from sdk.rewards.tiered import score_batch
from sdk.tasks.change import ChangeVerifier, exempt_site, exempt_sites
from sdk.tasks.records import Message, Source, Task
from tests.connectors.history_repo import OPS, TEST_TEXT
from tests.rewards.test_change_reward import INIT
from tests.rewards.test_redteam_round4 import _mul

RUNNER = str(Path(__file__).resolve().parents[2] / "sdk" / "sandbox" / "_runner")
# mul returns a value class whose == compares its number with a plain int (honest, not structural)
MONEY = ("", "", "class Money:", "    def __init__(self, v):", "        self.v = v", "", "    def __eq__(self, o):",
         "        return self.v == (o.v if isinstance(o, Money) else o)", "", "    __hash__ = None")
REFERENCE = _mul("    return Money(a * b)", extra=MONEY)
TEST = ("def test_mul():\n    from calc import mul\n    assert mul(2, 3) == 6\n"
        "    assert [mul(1, 1).v] == [1]\n")
# a liar at the test's other comparison (the list of .v values), not the exempt one
LIAR = _mul("    return Money(a * b)", extra=(*MONEY, "", "", "class _L(int):", "    __hash__ = int.__hash__", "",
                                            "    def __eq__(self, o):", "        return True", "", "",
                                            "Money.__init__ = lambda self, v: setattr(self, 'v', _L(v + 1))"))


def _task(exempt: tuple[str, ...] = ()) -> Task:
    verifier = ChangeVerifier(files={"calc/__init__.py": INIT, "calc/ops.py": OPS},
                              tests={"tests/test_ops.py": TEST, "tests/test_text.py": TEST_TEXT},
                              fail_to_pass=("tests/test_ops.py::test_mul",),
                              pass_to_pass=("tests/test_text.py::test_concat",), shadow_exempt=exempt)
    return Task(domain="python/calc", prompt=(Message(role="user", content="Add mul"),), verifier=verifier,
                reference=REFERENCE, source=Source(connector="git_history"))


def test_exempt_site_reads_the_flag_detail():
    assert exempt_site("always_equal: shadow tests/t.py:12:4: Money == int says yes, their ...") == "tests/t.py:12:4"
    assert exempt_site("0/1 fail-to-pass pass") is None


def test_a_calibrated_task_gets_its_new_content_hash_id():
    """A task that stays flagged after calibration is quarantined with its new verifier: its id is the
    new content's hash (git_history on toolz failed here: 'task id ... does not match its content hash')."""
    flagged = RewardResult(score=0.0, status=RewardStatus.SUSPECTED_HACKING, flags=("always_equal",),
                           detail="always_equal: shadow tests/test_ops.py:3:11: Money == int says yes, ...")
    tasks, results = calibrate([_task()], [flagged], lambda ts: [flagged for _ in ts])
    assert tasks[0].verifier.shadow_exempt == ("tests/test_ops.py:3:11",) and results == [flagged]
    assert tasks[0].id == tasks[0].content_hash() != _task().id
    assert Task.model_validate(tasks[0].model_dump()) == tasks[0]


def test_every_site_a_flag_names_is_exempted_at_once():
    """A reward's detail names several shadow sites (each run keeps up to 8; toolz's test_curried.py
    flagged a second site in its pass-to-pass run, which the first run's detail did not carry)."""
    detail = ("always_equal: shadow tests/test_ops.py:3:11: Money == int says yes, ...; shadow tests/test_ops.py:4:11:"
              " list == list says yes, ...; always_equal: shadow tests/test_text.py:9:4: curry != curry says yes")
    flagged = RewardResult(score=0.0, status=RewardStatus.SUSPECTED_HACKING, flags=("always_equal",), detail=detail)
    assert exempt_sites(detail) == ("tests/test_ops.py:3:11", "tests/test_ops.py:4:11", "tests/test_text.py:9:4")
    calls = []
    tasks, _ = calibrate([_task()], [flagged], lambda ts: calls.append(ts) or [flagged for _ in ts])
    assert tasks[0].verifier.shadow_exempt == exempt_sites(detail) and len(calls) == 1


def forwarded_flags(events: list[dict]) -> dict[str, str]:
    """``tl_repohost.forward``'s flags for trusted ``events`` (then pytest's end)."""
    sys.path.insert(0, RUNNER)
    try:
        tl_repohost = importlib.import_module("tl_repohost")
    finally:
        sys.path.remove(RUNNER)

    class Chan:
        def emit(self, **_):
            pass
    return tl_repohost.forward(Chan(), [(True, e) for e in events] + [(False, {"event": "end"})], 0)


def test_the_runner_keeps_several_shadow_sites():
    flags = forwarded_flags([{"event": "flag", "flag": "always_equal", "detail": f"shadow t.py:{n}:4: A == B says yes"}
                             for n in range(12)] + [{"event": "flag", "flag": "runner_tampering", "detail": "x"},
                                                    {"event": "flag", "flag": "runner_tampering", "detail": "y"}])
    assert exempt_sites("always_equal: " + flags["always_equal"]) == tuple(f"t.py:{n}:4" for n in range(8))
    assert flags["runner_tampering"] == "x"


def test_the_reference_calibrates_and_other_comparisons_stay_shadowed(real_sandbox):
    def rescore(tasks, diffs=None):
        return score_batch(tasks, [f"```diff\n{d or t.reference}```\n" for t, d in
                                   zip(tasks, diffs or [None] * len(tasks))], real_sandbox, RewardConfig())

    first = rescore([_task()])
    assert first[0].flags == ("always_equal",) and exempt_site(first[0].detail), first[0].detail
    tasks, results = calibrate([_task()], first, rescore)
    site = exempt_site(first[0].detail)
    assert tasks[0].verifier.shadow_exempt == (site,)
    assert results[0].score == pytest.approx(1.0) and not results[0].flags, results[0].detail
    liar = rescore(tasks, [LIAR])[0]
    assert "always_equal" in liar.flags and exempt_site(liar.detail) != site, liar.detail
