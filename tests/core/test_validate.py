"""Reference validation in the real sandbox: good tasks pass, bad ones are quarantined with reasons."""

import pytest

from sdk.config import SandboxConfig
from sdk.sandbox import make_sandbox
from sdk.sandbox.contract import ExecResult, ExecStatus, Sandbox, TestOutcome
from sdk.tasks import Language, Message, Source, Task, UnitTestVerifier
from sdk.tasks.validate import request_for, stub_for, validate_tasks

TESTS = {"test_add.py": "from solution import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"}
HIDDEN = {"test_add_hidden.py": "from solution import add\n\ndef test_neg():\n    assert add(-1, 1) == 0\n"}


def task(reference, tests=TESTS, hidden=HIDDEN, language=Language.PYTHON):
    return Task(domain="t", prompt=(Message(role="user", content="write add"),),
                verifier=UnitTestVerifier(tests=tests, hidden_tests=hidden, entry_point="add", language=language),
                reference=reference, source=Source(connector="test"))


@pytest.fixture(scope="module")
def sandbox():
    box = make_sandbox(SandboxConfig())
    yield box
    box.close()


def test_good_wrong_weak_and_missing_references(sandbox):
    good = task("def add(a, b):\n    return a + b\n")
    wrong_hidden = task("def add(a, b):\n    return 5 if (a, b) == (2, 3) else a * b\n")
    weak = task("def add(a, b):\n    return a + b\n", tests={"test_weak.py": "def test_nothing():\n    assert True\n"},
                hidden={})
    missing = task(None)
    valid, bad = validate_tasks([good, wrong_hidden, weak, missing], sandbox)
    assert [t.id for t in valid] == [good.id]
    reasons = {q.task.id: q.reason.split(":")[0] for q in bad}
    assert reasons == {wrong_hidden.id: "reference_fails", weak.id: "tests_miss_broken_body",
                       missing.id: "no_reference"}


def test_missing_toolchain_is_excluded_not_failed():
    """Field case S3: a task the machine cannot run is quarantined as such before training."""

    class NoGo(Sandbox):
        def run_one(self, request):
            return ExecResult(status=ExecStatus.TOOLCHAIN_UNAVAILABLE, detail="go: not installed")

    go = task("func Add(a, b int) int { return a + b }", tests={"add_test.go": "package main"}, hidden={},
              language=Language.GO)
    valid, bad = validate_tasks([go], NoGo())
    assert not valid and bad[0].reason.startswith("toolchain_unavailable")


def test_stub_keeps_signature_and_request_merges_tests():
    t = task("def add(a: int, b: int) -> int:\n    '''Sum.'''\n    return a + b\n")
    assert stub_for(t) == "def add(a: int, b: int) -> int:\n    raise NotImplementedError"
    both = request_for(t, "x", hidden=None)
    assert set(both.tests) == {"test_add.py", "test_add_hidden.py"}
    assert set(request_for(t, "x", hidden=True).tests) == {"test_add_hidden.py"}


class _SlowHarness(Sandbox):
    """The reference passes only with a limit of at least ``need`` seconds (a call-dense suite
    under the harness); stubs fail at once."""

    def __init__(self, need):
        self.need, self.limits = need, []

    def run(self, requests):
        out = []
        for r in requests:
            self.limits.append(r.limits.timeout_s)
            if "NotImplementedError" in r.solution:
                out.append(ExecResult(status=ExecStatus.FAILED))
            else:
                ok = r.limits.timeout_s >= self.need
                out.append(ExecResult(status=ExecStatus.OK if ok else ExecStatus.TIMEOUT,
                                      tests=(TestOutcome(name="t", outcome="passed" if ok else "failed"),)))
        return out

    def close(self):
        pass


def test_a_reference_that_only_timed_out_gets_one_longer_try_and_keeps_its_limit():
    slow = task("def add(a, b):\n    return a + b\n")
    valid, bad = validate_tasks([slow], _SlowHarness(need=30))
    assert not bad and valid[0].verifier.timeout_s == 4 * slow.verifier.timeout_s
    valid, bad = validate_tasks([slow], _SlowHarness(need=10_000))
    assert not valid and bad[0].reason.startswith("reference_fails: visible and hidden tests gave timeout")


def test_a_test_module_calling_the_solution_at_import_validates(sandbox):
    # issue 13: the tests' sources are served from memory, so the solution loads before collection
    at_import = {"test_add.py": "from solution import add\n\nSUM = add(1, 1)\n\ndef test_add():\n    assert SUM == 2\n"}
    valid, bad = validate_tasks([task("def add(a, b):\n    return a + b\n", tests=at_import)], sandbox)
    assert valid and not bad
    valid, bad = validate_tasks([task("def add(a, b):\n    return a - b\n", tests=at_import)], sandbox)
    assert not valid and bad[0].reason.startswith("reference_fails")
