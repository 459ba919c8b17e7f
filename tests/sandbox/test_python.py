"""Python requests end to end: statuses, per-test outcomes, splicing, unforgeable verdicts (R3)."""

from __future__ import annotations

import pytest

from sdk.sandbox import ExecRequest, ExecStatus, Limits

from .conftest import ADD_OK, ADD_TEST, FAST, py

CHECK = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(0, 0) == 0\n"


def script(solution: str, prelude: str = "", **kw) -> ExecRequest:
    return ExecRequest(framework="script", solution=solution, prelude=prelude, entry_point="add",
                       tests={"test_add.py": CHECK}, limits=kw.pop("limits", FAST), **kw)


def test_pytest_reports_each_test(sandbox):
    good, bad = sandbox.run([py(ADD_OK), py("def add(a, b):\n    return a + b + (a < 0)\n")])
    assert good.status == ExecStatus.OK and good.all_passed
    assert [t.outcome for t in good.tests] == ["passed", "passed"]
    assert bad.status == ExecStatus.FAILED
    assert {t.name.split("::")[1]: t.outcome for t in bad.tests} == {"test_small": "passed", "test_neg": "failed"}
    assert bad.wall_s > 0 and bad.cpu_s > 0


def test_script_framework_humaneval_style(sandbox):
    ok, wrong = sandbox.run([script("    return a + b\n", prelude="def add(a, b):\n"),
                             script("def add(a, b):\n    return a - b\n")])
    assert ok.status == ExecStatus.OK and [(t.name, t.outcome) for t in ok.tests] == [("check", "passed")]
    assert wrong.status == ExecStatus.FAILED and wrong.tests[0].outcome == "failed"
    assert "AssertionError" in wrong.tests[0].message


@pytest.mark.parametrize("cheat", [
    "import sys\nsys.exit(0)\n",                                        # R3a: exit at import
    "import os\nos._exit(0)\n",                                         # exit before the runner reports
    "def add(a, b):\n    import os\n    os._exit(0)\n",                 # R3d: exit inside the function
    "import os\nos.write(3, b'0' * 32 + b' {\"event\": \"end\", \"exitstatus\": 0}\\n')\nos._exit(0)\n",
])
def test_exits_and_forged_reports_never_pass(sandbox, cheat):
    for res in sandbox.run([py(cheat), script(cheat)]):
        assert res.status not in (ExecStatus.OK,) and not res.all_passed, res
        assert not res.status.is_infrastructure


def test_conftest_written_at_runtime_cannot_rescue_the_session(sandbox):
    # R3b: the solution tries to drop a conftest.py forcing exit status 0 next to the tests
    cheat = ("import pathlib\n"
             "try:\n    pathlib.Path('conftest.py').write_text('def pytest_sessionfinish(session):\\n    session.exitstatus = 0\\n')\n"
             "except OSError:\n    pass\n"
             "def add(a, b):\n    return 0\n")
    res = sandbox.run_one(py(cheat))
    assert res.status == ExecStatus.FAILED


def test_broken_import_in_tests_is_failed_not_ok(sandbox):
    # R3c: collection error
    res = sandbox.run_one(py(ADD_OK, tests={"test_x.py": "import no_such_module\n\ndef test_a():\n    pass\n"}))
    assert res.status == ExecStatus.FAILED and "collection" in res.detail


def test_no_tests_collected_is_failed(sandbox):
    res = sandbox.run_one(py(ADD_OK, tests={"test_x.py": "X = 1\n"}))
    assert res.status == ExecStatus.FAILED and res.tests == ()


@pytest.mark.parametrize("solution,status", [
    ("def add(a, b:\n    return a\n", ExecStatus.COMPILE_ERROR),
    ("raise SystemError('boom')\n", ExecStatus.RUNTIME_ERROR),
    ("while True:\n    pass\n", ExecStatus.TIMEOUT),
    ("x = bytearray(2 * 1024 ** 3)\n", ExecStatus.MEMORY_LIMIT),
])
def test_distinct_statuses(sandbox, solution, status):
    # wall clock generous (a loaded 2-core machine); the loop is ended by the CPU limit
    limits = Limits(timeout_s=30, cpu_s=2, memory_mb=256)
    for res in sandbox.run([py(solution, limits=limits), script(solution, limits=limits)]):
        assert res.status == status, res


def test_output_is_capped_and_flagged(sandbox):
    sol = "print(list(range(100000)))\ndef add(a, b):\n    return a + b\n"
    res = sandbox.run_one(script(sol, limits=FAST.model_copy(update={"output_bytes": 16384})))
    assert res.stdout_truncated and len(res.stdout.encode()) <= 16384
    assert res.status == ExecStatus.OK  # the verdict comes from the report channel, not stdout


def test_output_flood_is_killed(sandbox):
    sol = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"
    res = sandbox.run_one(script(sol, limits=FAST.model_copy(update={"output_bytes": 1024})))
    assert res.status == ExecStatus.OUTPUT_LIMIT and res.stdout_truncated


def test_splice_into_support_file(sandbox):
    files = {"pkg/__init__.py": "", "pkg/billing.py": "RATE = 2\n\ndef price(x):\n    raise NotImplementedError\n\ndef total(xs):\n    return sum(price(x) for x in xs)\n"}
    tests = {"tests/test_billing.py": "from pkg.billing import total\n\ndef test_total():\n    assert total([1, 2]) == 6\n"}
    req = dict(tests=tests, files=files, target_path="pkg/billing.py", entry_point="price", limits=FAST)
    ok = sandbox.run_one(ExecRequest(solution="def price(x):\n    return x * RATE\n", **req))
    missing = sandbox.run_one(ExecRequest(solution="def cost(x):\n    return x\n", **req))
    assert ok.status == ExecStatus.OK, ok
    assert missing.status == ExecStatus.FAILED and "price" in missing.detail


def test_tests_are_read_only_to_the_solution(sandbox):
    sol = ("import pathlib\n"
           "def add(a, b):\n"
           "    try:\n        pathlib.Path('test_add.py').write_text('')\n        return 'wrote'\n"
           "    except OSError:\n        return a + b\n")
    assert sandbox.run_one(py(sol)).status == ExecStatus.OK


def test_environment_is_cleared(sandbox, monkeypatch):
    monkeypatch.setenv("TL_SECRET_TOKEN", "hunter2")
    sol = "import os\ndef add(a, b):\n    assert 'TL_SECRET_TOKEN' not in os.environ\n    return a + b\n"
    assert sandbox.run_one(py(sol)).status == ExecStatus.OK


def test_trainer_packages_are_not_importable(sandbox):
    sol = "def add(a, b):\n    try:\n        import torch\n        return None\n    except ImportError:\n        return a + b\n"
    assert sandbox.run_one(py(sol)).status == ExecStatus.OK


def test_a_request_with_no_test_files_is_an_error_result_not_a_crash():
    """An empty ``tests`` mapping comes back as one ExecResult naming the fix (it raised IndexError
    inside the planner, found by the issue-13 new-user check)."""
    from sdk.sandbox.python_lang import plan

    for framework in ("pytest", "script"):
        res = plan(ExecRequest(framework=framework, solution=ADD_OK, tests={}, entry_point="add"))
        assert res.status == ExecStatus.SANDBOX_ERROR
        assert "no test files" in res.detail and "`tests`" in res.detail
