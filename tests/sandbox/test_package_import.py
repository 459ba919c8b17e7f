"""A solution inside a package whose ``__init__`` uses it at import (issue 13 regression of issue 14).

Real packages call their own modules while they import (``toolz/__init__.py`` ends with
``functoolz._sigs.create_signature_registry()``; ``toolz/curried`` curries every function), so
the harness loads such a solution before it writes the tests, then stops it while they exist
(``sdk/sandbox/_runner/tl_early.py``). Honest code must pass; the solution must still never run
while a test file is on disk, and a process it leaves running must stop the run.
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

# A thread started at load keeps looking for test files; while it runs, none may exist.
SPY = REGISTRY + '''

import os
import threading

SEEN = []


def _look():
    while True:
        for root, _dirs, files in os.walk(os.environ.get("TMPDIR") or "/tmp"):
            SEEN.extend(os.path.join(root, f) for f in files if f.startswith("test_"))


threading.Thread(target=_look, daemon=True).start()


def seen():
    return list(SEEN)
'''

SPY_TESTS = TESTS.replace("from pkg.registry import ready, scale", "from pkg.registry import ready, scale, seen") + '''

def test_nothing_seen():
    assert seen() == []
'''

# A process the solution leaves running while loading could read the tests: the run stops.
FORKS = REGISTRY + '''

import os
import time

if os.fork() == 0:
    time.sleep(30)
    os._exit(0)
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


def test_a_thread_started_at_load_never_sees_a_test_file(sandbox):
    res = sandbox.run_one(_req(SPY, SPY_TESTS))
    assert res.status == ExecStatus.OK, (res.detail, [(t.name, t.message[-600:]) for t in res.tests])
    assert len(res.tests) == 4


def test_a_process_left_running_at_load_stops_the_run(sandbox):
    res = sandbox.run_one(_req(FORKS))
    assert res.status != ExecStatus.OK and not any(t.outcome == "passed" for t in res.tests)
    assert "other process" in (res.detail or "")


def test_a_solution_that_does_not_load_runs_no_test(sandbox):
    res = sandbox.run_one(_req(REGISTRY + "\nraise RuntimeError('broken at import')\n"))
    assert res.status != ExecStatus.OK and not any(t.outcome == "passed" for t in res.tests)
