"""Verifier strength (issue 13, item 3): mutants of the reference against the task's tests, in the sandbox."""

import pytest

from sdk.config import SandboxConfig
from sdk.sandbox import make_sandbox
from sdk.sandbox.contract import ExecResult, ExecStatus, Sandbox
from sdk.tasks import Language, Message, Source, Task, UnitTestVerifier
from sdk.tasks.strength import check_strength, count_mutants, mutants_of, skip_reason

CLAMP = ("def clamp(xs: list, lo: int) -> list:\n    out = []\n    for x in xs:\n        if x < lo:\n"
         "            out.append(lo)\n        else:\n            out.append(x)\n    return out\n")
STRONG = {"test_clamp.py": "from solution import clamp\n\ndef test_clamp():\n    assert clamp([1, 5, 3], 3) == [3, 5, 3]\n"}
HIDDEN = {"test_clamp_hidden.py": "from solution import clamp\n\ndef test_edge():\n    assert clamp([2, 9], 2) == [2, 9]\n"}
# passes for the reference, and for `return xs` (the first argument): the tests cannot tell them apart
WEAK = {"test_clamp.py": "from solution import clamp\n\ndef test_noop():\n    assert clamp([5, 6], 1) == [5, 6]\n"}


def task(reference=CLAMP, tests=STRONG, hidden=HIDDEN, language=Language.PYTHON, entry="clamp"):
    return Task(domain="t", prompt=(Message(role="user", content="write clamp"),),
                verifier=UnitTestVerifier(tests=tests, hidden_tests=hidden, entry_point=entry, language=language),
                reference=reference, source=Source(connector="test"))


@pytest.fixture(scope="module")
def sandbox():
    box = make_sandbox(SandboxConfig())
    yield box
    box.close()


def test_trivial_mutants_cover_each_kind_and_keep_the_signature():
    kinds = {(fam, kind): code for fam, kind, code in mutants_of(task(), max_reference_mutants=0)}
    assert set(kinds) == {("trivial", k) for k in ("return_none", "return_first_argument", "return_empty",
                                                   "return_constant", "raise")}
    assert kinds[("trivial", "return_first_argument")] == "def clamp(xs: list, lo: int) -> list:\n    return xs"
    assert kinds[("trivial", "return_empty")] == "def clamp(xs: list, lo: int) -> list:\n    return []"
    # the empty value also comes from what the reference returns when there is no annotation
    bare = task("def name(u):\n    return f'{u}!'\n", entry="name")
    assert "def name(u):\n    return ''" in [m[2] for m in mutants_of(bare, 0)]


def test_reference_mutants_are_budgeted_deterministic_and_never_the_reference():
    t = task()
    refs = [m for m in mutants_of(t, max_reference_mutants=2) if m[0] == "reference"]
    assert len(refs) == 2 and refs == [m for m in mutants_of(t, 2) if m[0] == "reference"]
    every = {m[1]: m[2] for m in mutants_of(t, max_reference_mutants=64) if m[0] == "reference"}
    assert set(every) == {"flip_comparison", "drop_branch"}  # no int constant in CLAMP's body
    assert "x >= lo" in every["flip_comparison"] and "pass" in every["drop_branch"]
    assert all(code != CLAMP.strip() for code in every.values())
    off = [m[2] for m in mutants_of(task("def inc(n):\n    return n + 1\n", entry="inc"), 64) if m[1] == "off_by_one"]
    assert off == ["def inc(n):\n    return n + 2"]


def test_other_languages_and_missing_definitions_are_skipped_with_a_reason():
    js = task("function clamp(xs) { return xs }", language=Language.JAVASCRIPT)
    assert mutants_of(js) == [] and "javascript" in skip_reason(js)
    other = task("def helper():\n    return 1\n")
    assert mutants_of(other) == [] and "clamp" in skip_reason(other)


def test_strong_tests_score_and_weak_tests_are_quarantined(sandbox):
    strong, weak = task(), task(tests=WEAK, hidden={})
    js = task("function clamp(xs) { return xs }", language=Language.JAVASCRIPT)
    kept, bad = check_strength([strong, weak, js], sandbox, max_reference_mutants=2)
    assert [t.id for t in kept] == [strong.id, js.id] and [q.task.id for q in bad] == [weak.id]
    scored = kept[0]
    assert scored.mutation_score == 1.0 and scored.metadata["mutants"]["total"] == count_mutants([strong], 2)
    assert kept[1].mutation_score is None and "javascript" in kept[1].metadata["mutants"]["skipped"]
    assert bad[0].reason.startswith("weak_tests") and "return_first_argument" in bad[0].reason
    assert 0 < bad[0].task.mutation_score < 1 and "trivial/return_first_argument" in bad[0].task.metadata["mutants"]["survivors"]
    # the lenient rule keeps a task that kills at least one trivial mutant
    kept, bad = check_strength([weak], sandbox, max_reference_mutants=0, weak_if="no_trivial_killed")
    assert len(kept) == 1 and not bad


def test_infrastructure_results_count_neither_way():
    class Broken(Sandbox):
        def run_one(self, request):
            return ExecResult(status=ExecStatus.SANDBOX_ERROR, detail="down")

    kept, bad = check_strength([task()], Broken())
    assert not bad and kept[0].mutation_score is None and "sandbox" in kept[0].metadata["mutants"]["skipped"]


def test_strength_summary_per_source(sandbox):
    from sdk.run.stage_tasks import strength_summary

    strong, weak = task(), task(tests=WEAK, hidden={})
    js = task("function clamp(xs) { return xs }", language=Language.JAVASCRIPT)
    kept, bad = check_strength([strong, weak, js], sandbox, max_reference_mutants=0)
    labels = {strong.id: "0:pytest:a", weak.id: "0:pytest:a", js.id: "1:jsonl:b"}
    summary = strength_summary(kept, bad, labels)
    a = summary["0:pytest:a"]
    assert (a["scored"], a["weak_tests"], a["skipped"]) == (2, 1, 0)
    assert a["total"] == 2 * 6 and a["killed"] == a["total"] - 1 and a["score"] == pytest.approx(11 / 12, abs=1e-4)
    assert summary["1:jsonl:b"] == {"scored": 0, "killed": 0, "total": 0, "weak_tests": 0, "skipped": 1, "score": None}


def test_the_stub_validation_saw_fail_is_not_run_again_and_scores_are_unchanged(sandbox):
    """validate_tasks(stubs_failed=...) -> check_strength(known_killed=...): the `raise NotImplementedError`
    mutant is the stub validation already ran (on the visible tests, a subset), so it is counted killed
    without a sandbox run; every score and verdict equals the full run's."""
    from sdk.tasks.validate import validate_tasks

    class Counting(Sandbox):
        def __init__(self):
            self.codes = []

        def run_one(self, request):
            self.codes.append(request.solution)
            return sandbox.run_one(request)

    strong, weak = task(), task(tests=WEAK, hidden={})
    failed: dict[str, str] = {}
    valid, quarantined = validate_tasks([strong, weak], sandbox, stubs_failed=failed)
    assert not quarantined and set(failed) == {strong.id, weak.id} and "raise NotImplementedError" in failed[strong.id]
    full_box, short_box = Counting(), Counting()
    full = check_strength(valid, full_box, max_reference_mutants=2)
    short = check_strength(valid, short_box, max_reference_mutants=2, known_killed=failed)
    assert [t.model_dump() for t in short[0]] == [t.model_dump() for t in full[0]]
    assert [q.reason for q in short[1]] == [q.reason for q in full[1]] and short[1][0].task.id == weak.id
    assert len(short_box.codes) == len(full_box.codes) - 2 == count_mutants(valid, 2, failed)
    assert not any("raise NotImplementedError" in c for c in short_box.codes)
