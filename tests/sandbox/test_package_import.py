"""A solution inside a package whose ``__init__`` uses it at import (issue 13 regression of issue 14).

Real packages call their own modules while they import (``toolz/__init__.py`` ends with
``functoolz._sigs.create_signature_registry()``; ``toolz/curried`` curries every function), so
the harness loads the solution before collection: the test files on disk are placeholders and
their sources are served from memory (``sdk/sandbox/_runner/tl_memtests.py``). Honest code must
pass; no thread or process of the solution may ever read a test's source, even while the tests
are collected.
"""

from __future__ import annotations

from sdk.sandbox import ExecRequest, ExecStatus
from tests.sandbox.conftest import FAST

INIT = '''from .registry import *
from . import curried

registry.create_registry()
'''

CURRIED = '''import pkg

double = pkg.registry.curry(pkg.registry.scale, 2)
'''

REGISTRY = '''import functools

_REG = {}


def create_registry():
    """Fill the registry (called by the package at import)."""
    _REG["ready"] = True


def curry(fn, *args):
    return functools.partial(fn, *args)


def scale(k, x):
    return k * x


def ready():
    return _REG.get("ready", False)
'''

TESTS = '''import pkg
from pkg.curried import double
from pkg.registry import ready, scale


def test_ready():
    assert ready() is True


def test_scale():
    assert scale(3, 4) == 12


def test_curried():
    assert double(5) == 10
'''

# A thread started at load keeps reading every file it finds: no test's source may be among them.
LOOK = '''

def _look_once(found):
    for root, _dirs, files in os.walk(os.environ.get("TMPDIR") or "/tmp"):
        for f in files:
            try:
                with open(os.path.join(root, f), errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            if "def test_" in text or "double(5)" in text:
                found.append(os.path.join(root, f))
'''

SPY = REGISTRY + '''

import os
import threading

SEEN = []
''' + LOOK + '''

def _look():
    while True:
        _look_once(SEEN)


threading.Thread(target=_look, daemon=True).start()


def seen():
    return list(SEEN)
'''

SPY_TESTS = TESTS.replace("from pkg.registry import ready, scale", "from pkg.registry import ready, scale, seen") + '''

def test_nothing_seen():
    assert seen() == []
'''

# A process the solution leaves running from load on reads every file too, and says what it found.
FORKS = REGISTRY + '''

import os
import time
''' + LOOK + '''

LEAK = os.path.join(os.environ.get("TMPDIR") or "/tmp", "leak.txt")
if os.fork() == 0:
    found = []
    end = time.monotonic() + 20
    while time.monotonic() < end:
        _look_once(found)
        with open(LEAK, "w") as fh:
            fh.write("\\n".join(found) + "\\nscanned\\n")
    os._exit(0)


def leaked():
    for _ in range(200):
        if os.path.exists(LEAK):
            with open(LEAK) as fh:
                text = fh.read()
            if text.endswith("scanned\\n"):
                return text.replace("scanned\\n", "").strip()
        time.sleep(0.01)
    return "the spy never reported"
'''

FORK_TESTS = TESTS.replace("from pkg.registry import ready, scale", "from pkg.registry import ready, scale, leaked") + '''

def test_nothing_leaked():
    assert leaked() == ""
'''


def _req(solution: str, tests: str = TESTS) -> ExecRequest:
    return ExecRequest(solution=solution, tests={"tests/test_registry.py": tests}, limits=FAST,
                       files={"pkg/__init__.py": INIT, "pkg/curried.py": CURRIED}, target_path="pkg/registry.py")


def test_package_that_uses_the_solution_at_import_passes(sandbox):
    res = sandbox.run_one(_req(REGISTRY))
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-400:]) for t in res.tests])
    assert [t.outcome for t in res.tests] == ["passed"] * 3 and not res.flags


def test_wrong_solution_still_fails(sandbox):
    res = sandbox.run_one(_req(REGISTRY.replace("return k * x", "return k + x")))
    outcomes = {t.name.rsplit("::", 1)[1]: t.outcome for t in res.tests}
    assert outcomes == {"test_ready": "passed", "test_scale": "failed", "test_curried": "failed"}


def test_a_thread_started_at_load_never_reads_a_test(sandbox):
    res = sandbox.run_one(_req(SPY, SPY_TESTS))
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-1500:]) for t in res.tests])
    assert len(res.tests) == 4


def test_a_process_left_running_at_load_never_reads_a_test(sandbox):
    res = sandbox.run_one(_req(FORKS, FORK_TESTS))
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-1500:]) for t in res.tests])
    assert len(res.tests) == 4


def test_a_test_module_may_call_the_solution_at_import(sandbox):
    tests = TESTS + "\nFIFTEEN = scale(3, 5)\n\n\ndef test_import_time_value():\n    assert FIFTEEN == 15\n"
    res = sandbox.run_one(_req(REGISTRY, tests))
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-1500:]) for t in res.tests])
    wrong = sandbox.run_one(_req(REGISTRY.replace("return k * x", "return k + x"), tests))
    assert {t.name.rsplit("::", 1)[1]: t.outcome for t in wrong.tests}["test_import_time_value"] == "failed"


def test_a_solution_that_does_not_load_runs_no_test(sandbox):
    res = sandbox.run_one(_req(REGISTRY + "\nraise RuntimeError('broken at import')\n"))
    assert res.status != ExecStatus.OK and not any(t.outcome == "passed" for t in res.tests)


def test_a_test_folder_that_is_a_package_of_the_working_folder_keeps_its_package(sandbox):
    # attrs: tests/__init__.py and tests/strategies.py travel with the task, the test module with the tests
    tests = "from .helpers import three\nfrom pkg.registry import scale\n\n\ndef test_relative():\n    assert scale(three(), 2) == 6\n"
    req = _req(REGISTRY, tests).model_copy(update={"files": {**_req(REGISTRY).files, "tests/__init__.py": "",
                                                               "tests/helpers.py": "def three():\n    return 3\n"}})
    res = sandbox.run_one(req)
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-1500:]) for t in res.tests])
