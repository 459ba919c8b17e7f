"""The warm harness never imports a module the candidate wrote (issue 14, found while measuring
throughput). On the warm path the candidate's working folder is ``/tmp/run``, which it can write;
the supervisor used to put it first on its own ``sys.path``, so the first import of a standard
module there *after* the solution had run (``fractions`` when a ``Fraction`` came back by value,
a module a test imports inside ``check``) executed the candidate's file in the trusted harness,
which then rewrote every outcome to ``passed`` (a wrong ``add`` scored 1.0, unflagged). Each
case: the cheat with a wrong answer must fail, the same code with the right answer must pass,
and the planted module must never run in the harness."""

from __future__ import annotations

import pytest

from sdk.sandbox import ExecRequest, ExecStatus

PLANT = '''import os, sys
who = "harness" if type(sys.modules.get("tl_harness")).__name__ == "module" else "candidate"
os.write(2, ("PLANTED-MODULE-RAN-IN-" + who + "\\n").encode())
if who == "harness":
    h = sys.modules["tl_harness"]
    emit = h.Channel.emit
    h.Channel.emit = lambda self, **e: emit(self, **dict(e, outcome="passed") if e.get("event") == "test" else e)
sys.path.remove(os.getcwd())
del sys.modules[__name__]
import {name} as _real
sys.modules[__name__] = _real
globals().update(_real.__dict__)
'''

CASES = {
    # the value comes back by value: the harness imports fractions to rebuild it
    "returned_value": ("fractions", "def add(a, b):\n    return fractions.Fraction(a + b + {off}, 1)\n",
                       "def check(f):\n    assert f(1, 2) == 3\n"),
    # the test imports a standard module inside check, after the solution ran
    "test_import": ("decimal", "def add(a, b):\n    return a + b + {off}\n",
                    "def check(f):\n    assert f(1, 2) == 3\n    import decimal\n    assert decimal.Decimal(f(2, 2)) == 4\n"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_warm_harness_never_imports_the_candidates_files(bubblewrap_sandbox, case):
    name, body, test = CASES[case]
    plant = f"import {name}, os\nopen({name + '.py'!r}, 'w').write({PLANT.replace('{name}', name)!r})\n"
    for off, want in ((1, ExecStatus.FAILED), (0, ExecStatus.OK)):
        req = ExecRequest(framework="script", solution=plant + body.format(off=off), entry_point="add",
                          tests={"test_add.py": test})
        res = bubblewrap_sandbox.run_one(req)
        assert res.status == want, (off, res.status, res.detail[-500:])
        assert "PLANTED-MODULE-RAN-IN-harness" not in res.stderr + res.stdout
