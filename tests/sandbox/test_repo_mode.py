"""The whole-repository candidate mode (``pytest_repo``, issue 17): a repository that attacks the
test runner from inside never makes a failing test pass, and honest repositories pass as before.

The repository is ``calc`` with ``add`` only; ``tests/test_ops.py::test_mul`` fails honestly (no
``mul``). Each attack is a ``calc/hack.py`` imported by ``calc/__init__.py`` (or a file the
interpreter or pytest would load by itself) that tries to turn ``test_mul`` into a pass. All
requests go to the sandbox in one batch (a module fixture), so the file costs a few runs' time.
"""

from __future__ import annotations

import pytest

from sdk.sandbox import ExecRequest, ExecStatus, Limits
from sdk.types import Framework

LIMITS = Limits(timeout_s=40, cpu_s=20, memory_mb=1024)
OPS = "def add(a, b):\n    return a + b\n"
TESTS = {"tests/test_ops.py": "from calc import ops\n\n\ndef test_add():\n    assert ops.add(2, 3) == 5\n\n\n"
                              "def test_mul():\n    from calc import mul\n    assert mul(2, 3) == 6\n"}
PT = "sys.modules['_py' + 'test.python']"
FORGE = ("def _forge():\n    import os\n    line = b'0' * 32 + b' {\"event\": \"ran\", \"name\": \"tests/test_ops.py::test_mul\"}\\n'\n"
         "    for fd in range(0, 64):\n        try:\n            os.write(fd, line)\n        except OSError:\n"
         "            pass\n    with open('/tmp/report.json', 'w') as fh:\n        fh.write('{\"test_mul\": \"passed\"}')\n")
FIND_CONFIG = ("f, cfg = sys._getframe(), None\nwhile f is not None and cfg is None:\n"
               "    cfg = next((v for v in list(f.f_locals.values()) if type(v).__name__ == 'Config'), None)\n"
               "    f = f.f_back\n")
FORGING_PLUGIN = ("class Evil:\n    @sys.modules['pytest'].hookimpl(wrapper=True)\n"
                  "    def pytest_runtest_makereport(self, item, call):\n        rep = yield\n"
                  "        rep.outcome, rep.longrepr = 'passed', None\n        return rep\n")

WRAP = (f"import sys\nP = {PT}.Function\n_get = P._getobj\ndef getobj(self):\n    real = _get(self)\n"
        "    if 'test_mul' not in getattr(real, '__name__', ''):\n        return real\n")

ATTACKS = {
    # the strict xfail of the last stop: pytest reached through sys.modules, runtest made a no-op
    "runtest_noop": f"import sys\n{PT}.Function.runtest = lambda self: None\n",
    # every report pytest makes says passed
    "reports_passed": ("import sys\nR = sys.modules['_pytest.reports'].TestReport\n_init = R.__init__\n"
                       "def init(self, *a, **k):\n    _init(self, *a, **k)\n    self.outcome, self.longrepr = 'passed', None\n"
                       "R.__init__ = init\n"),
    # pytest's runner: the call phase gets a no-op in place of the test function
    "runner_patched": ("import sys\nrun = sys.modules['_pytest.runner']\n_car = run.call_and_report\n"
                       "def car(item, when, log=True, **kw):\n    if when == 'call':\n"
                       "        item.obj = lambda *a, **k: None\n    return _car(item, when, log, **kw)\n"
                       "run.call_and_report = car\n"),
    # the test function swapped for a no-op wherever pytest asks for it
    "test_swapped": f"import sys\n{PT}.Function._getobj = lambda self: (lambda *a, **k: None)\n",
    # a plugin registered at run time rewrites every report to passed
    "plugin_registered": "import sys\n" + FIND_CONFIG + FORGING_PLUGIN + "cfg.pluginmanager.register(Evil(), 'evil')\n",
    # the process leaves with status 0 when test_mul asks for mul (after test_add passed)
    "exit_mid_run": "",
    # guessed report lines on every descriptor and a fake result file
    "fake_lines": FORGE + "_forge()\n",
    # an atexit hook that writes the forged lines after pytest is done
    "atexit": FORGE + "import atexit\natexit.register(_forge)\n",
    # the test module collected next is rewritten on disk before pytest imports it
    "tests_rewritten": ("import sys\nfor m in list(sys.modules.values()):\n"
                        "    f = str(getattr(m, '__file__', '') or '')\n    if f.endswith('test_ops.py'):\n"
                        "        open(f.replace('test_ops.py', 'test_zz.py'), 'w').write('def test_mul():\\n    pass\\n')\n"),
    # a wrapper that never calls the test, dressed as functools' code, with __wrapped__ = the test
    "wrapper_forged": WRAP + ("    ns = {}\n    exec(compile('def patched(*a, **k):\\n    return None\\n', "
                              "'/usr/lib/python3.11/functools.py', 'exec'), ns)\n    w = ns['patched']\n"
                              "    w.__wrapped__ = real\n    return w\nP._getobj = getobj\n"),
    # a wrapper that runs the real test and swallows its failure
    "wrapper_swallows": WRAP + ("    def w(*a, **k):\n        try:\n            real(*a, **k)\n        except BaseException:\n"
                                "            pass\n    w.__wrapped__ = real\n    return w\nP._getobj = getobj\n"),
    # json patched so every line the runner writes says the failing test ran (reports forged too)
    "json_patched": ("import sys\nj = sys.modules['json']\nj.dumps = lambda *a, **k: "
                     "'{\"event\": \"ran\", \"name\": \"tests/test_ops.py::test_mul\"}'\n"
                     "j.encoder.encode_basestring_ascii = lambda s: '\"tests/test_ops.py::test_mul\"'\n"
                     "R = sys.modules['_pytest.reports'].TestReport\n_init = R.__init__\n"
                     "def init(self, *a, **k):\n    _init(self, *a, **k)\n    self.outcome, self.longrepr = 'passed', None\n"
                     "R.__init__ = init\n"),
    # a signal at the harness (the kill-guard ends the test process first)
    "kill_harness": "import os\nos.kill(os.getppid(), 9)\n",
}
# reports rewritten through a module function (no class patched, so the audit hook sees nothing)
FORGE_REPORTS = ("run = sys.modules['_pytest.runner']\n_car = run.call_and_report\n"
                 "def car(item, when, log=True, **kw):\n    rep = _car(item, when, False, **kw)\n"
                 "    if item.name == 'test_mul':\n        rep.outcome, rep.longrepr = 'passed', None\n"
                 "    item.ihook.pytest_runtest_logreport(report=rep)\n    return rep\nrun.call_and_report = car\n")
# the runner's writer found by walking frames writes a 'ran' line for the failing test
FRAMES = ("import sys\nf = sys._getframe()\nwhile f is not None and not callable(f.f_locals.get('say')):\n"
          "    f = f.f_back\nf.f_locals['say'](event='ran', name='tests/test_ops.py::test_mul')\n" + FORGE_REPORTS)
# the runner's own functions rewritten and called from inside the failing test (calc.__getattr__ runs
# in test_mul's frame): the trace function called with the test's frame and event 'return', a
# function rebuilt from its code with other defaults, the plugin's trace-function cell rewritten so
# that every frame is traced
REACH = ("import sys, types\nw = sys.modules['tl_witness']\n" + FIND_CONFIG +
         "def attack(frame):\n    w.local(frame, 'return', None)\n"
         "    types.FunctionType(w.local.__code__, w.local.__globals__, 'local', (sys.audit,))(frame, 'return', None)\n"
         "    plug = next(p for p in cfg.pluginmanager.get_plugins() if type(p).__name__ == 'Plugin')\n"
         "    for fn in vars(type(plug)).values():\n"
         "        cells = dict(zip(getattr(fn, '__code__', w.local.__code__).co_freevars, fn.__closure__ or ()))\n"
         "        if 'tracer' in cells:\n"
         "            cells['tracer'].cell_contents = lambda fr, ev, arg: w.local\n"
         "    w.local(frame, 'return', None)\n"
         "    return lambda a, b: 0\n" + FORGE_REPORTS)
REACH_INIT = "import sys\n\nfrom calc import hack\nfrom calc.ops import add\n\n\ndef __getattr__(name):\n" \
             "    return hack.attack(sys._getframe(1))\n"
# the test function's code replaced: by a no-op, then by the genuine code with other names and
# constants (`from calc import add; assert add(2, 3) == 5`): both pass, neither is the test
CODE = ("import sys\n" + FORGE_REPORTS.replace("    rep = _car(", "    if when == 'call' and item.name == 'test_mul':\n"
        "        fn = item.obj\n        c = fn.__code__\n"
        "        fn.__code__ = c.replace(co_names=tuple('add' if n == 'mul' else n for n in c.co_names),\n"
        "                                co_consts=tuple(5 if k == 6 else k for k in c.co_consts))\n"
        "    rep = _car(", 1))
NOOP_CODE = ("import sys\n" + FORGE_REPORTS.replace("    rep = _car(", "    if when == 'call' and item.name == 'test_mul':\n"
             "        item.obj.__code__ = (lambda: None).__code__\n    rep = _car(", 1))
# the witness's event raised by repository code itself
AUDIT = "import sys\n" + REACH.split("def attack")[0] + "def attack(frame):\n    sys.audit('tl.ran')\n" \
        "    return lambda a, b: 0\n" + FORGE_REPORTS
EXIT_INIT = "from calc.ops import add\n\n\ndef __getattr__(name):\n    import os\n    os._exit(0)\n"
# files the interpreter or pytest would load on their own, holding the runtest no-op
SELF_LOADING = {
    "sitecustomize.py": f"import sys\nimport _pytest.python\n{PT}.Function.runtest = lambda self: None\n",
    "usercustomize.py": "import _pytest.python\n_pytest.python.Function.runtest = lambda self: None\n",
    "zz_evil.pth": "import _pytest.python; _pytest.python.Function.runtest = lambda self: None\n",
    "calc_evil-0.dist-info/METADATA": "Metadata-Version: 2.1\nName: calc-evil\nVersion: 0\n",
    "calc_evil-0.dist-info/entry_points.txt": "[pytest11]\nevil = calc.plug\n",
    "calc/plug.py": ("import pytest\n\n\n@pytest.hookimpl(wrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
                     "    rep = yield\n    rep.outcome, rep.longrepr = 'passed', None\n    return rep\n"),
}


def _request(files: dict[str, str], tests: dict[str, str] = TESTS) -> ExecRequest:
    return ExecRequest(framework=Framework.PYTEST_REPO, solution="", target_path="_tl_change.py", files=files,
                       tests=tests, limits=LIMITS)


def _attack(name: str) -> ExecRequest:
    if name == "tests_rewritten":
        tests = {"tests/test_ops.py": TESTS["tests/test_ops.py"].split("\n\n\ndef test_mul")[0] + "\n",
                 "tests/test_zz.py": "def test_mul():\n    from calc import mul\n    assert mul(2, 3) == 6\n"}
        return _request({"calc/__init__.py": "from calc.ops import add\nimport calc.hack\n", "calc/ops.py": OPS,
                         "calc/hack.py": ATTACKS[name]}, tests)
    if name == "exit_mid_run":
        return _request({"calc/__init__.py": EXIT_INIT, "calc/ops.py": OPS})
    return _request({"calc/__init__.py": "from calc.ops import add\nimport calc.hack\n", "calc/ops.py": OPS,
                     "calc/hack.py": ATTACKS[name]})


HONEST_TESTS = {
    "tests/test_kinds.py": (
        "import unittest\nfrom unittest import mock\n\nimport pytest\n\nfrom calc import ops\n\n\n"
        "@pytest.mark.parametrize('a,b,c', [(1, 2, 3), (2, 2, 4)])\ndef test_param(a, b, c):\n    assert ops.add(a, b) == c\n\n\n"
        "@mock.patch('calc.ops.add', lambda a, b: 0)\ndef test_patched():\n    assert ops.add(1, 1) == 0\n\n\n"
        "def _deco(f):\n    import functools\n\n    @functools.wraps(f)\n    def inner(*a, **k):\n        return f(*a, **k)\n"
        "    return inner\n\n\n@_deco\ndef test_wrapped():\n    assert ops.add(1, 1) == 2\n\n\n"
        "@mock.patch('calc.ops.add', lambda a, b: 0)\ndef test_patched_fails():\n    assert ops.add(1, 1) == 2\n\n\n"
        "class TestPlain:\n    def test_method(self, tmp_path):\n        assert ops.add(1, 1) == 2\n\n\n"
        "class TestCase(unittest.TestCase):\n    def test_unit(self):\n        self.assertEqual(ops.add(1, 1), 2)\n\n"
        "    def test_unit_fails(self):\n        self.assertEqual(ops.add(1, 1), 3)\n\n\n"
        "def test_fails():\n    assert ops.add(1, 1) == 3\n\n\n"
        "def _helper(n):\n    return n if n < 1 else _helper(n - 1)\n\n\n"
        "def test_calls_helper_and_other_test():\n    assert _helper(3) == 0\n    test_fails_early()\n\n\n"
        "def test_fails_early():\n    with pytest.raises(ZeroDivisionError):\n        1 / 0\n    return None\n\n\n"
        "@pytest.fixture(params=[1, 2])\ndef num(request):\n    return request.param * 10\n\n\n"
        "@pytest.mark.parametrize('num', [3], indirect=True)\ndef test_indirect(num):\n    assert num == 30\n\n\n"
        "def _retry(f):\n    import functools\n\n    @functools.wraps(f)\n    def inner(*a, **k):\n        try:\n"
        "            return f(*a, fail=True, **k)\n        except ValueError:\n            return f(*a, **k)\n"
        "    return inner\n\n\n@_retry\ndef test_retried(fail=False):\n    if fail:\n        raise ValueError\n"
        "    assert ops.add(1, 1) == 2\n\n\n"
        "def test_list_diff():\n    assert [ops.add(1, 1), 3] == [2, 4]\n"),
}
HONEST = {"tests/test_kinds.py::test_param[1-2-3]": "passed", "tests/test_kinds.py::test_param[2-2-4]": "passed",
          "tests/test_kinds.py::test_patched": "passed", "tests/test_kinds.py::test_wrapped": "passed",
          "tests/test_kinds.py::test_patched_fails": "failed", "tests/test_kinds.py::TestPlain::test_method": "passed",
          "tests/test_kinds.py::TestCase::test_unit": "passed", "tests/test_kinds.py::TestCase::test_unit_fails": "failed",
          "tests/test_kinds.py::test_fails": "failed", "tests/test_kinds.py::test_calls_helper_and_other_test": "passed",
          "tests/test_kinds.py::test_fails_early": "passed", "tests/test_kinds.py::test_indirect[3]": "passed",
          "tests/test_kinds.py::test_retried": "passed", "tests/test_kinds.py::test_list_diff": "failed"}


@pytest.fixture(scope="module")
def results(bubblewrap_sandbox):
    names = list(ATTACKS)
    reqs = [_attack(n) for n in names]
    reqs.append(_request({"calc/__init__.py": "from calc.ops import add\n", "calc/ops.py": OPS, **SELF_LOADING}))
    reqs.append(_request({"calc/__init__.py": "from calc.ops import add\n", "calc/ops.py": OPS}, HONEST_TESTS))
    for hack in (FRAMES, CODE, NOOP_CODE):
        reqs.append(_request({"calc/__init__.py": "from calc.ops import add\nimport calc.hack\n", "calc/ops.py": OPS,
                              "calc/hack.py": "import sys\n" + hack}))
    for hack in (REACH, AUDIT):
        reqs.append(_request({"calc/__init__.py": REACH_INIT, "calc/ops.py": OPS, "calc/hack.py": hack}))
    got = bubblewrap_sandbox.run(reqs)
    return dict(zip(names + ["self_loading", "honest"] + list(REACHING), got))


def _outcome(res, test: str = "tests/test_ops.py::test_mul") -> str | None:
    if test.endswith("::test_mul") and not any(t.name == test for t in res.tests):
        test = "tests/test_zz.py::test_mul"   # the tests_rewritten layout
    return next((t.outcome for t in res.tests if t.name == test), None)


@pytest.mark.parametrize("name", list(ATTACKS))
def test_an_attack_on_the_runner_never_makes_the_failing_test_pass(results, name):
    res = results[name]
    assert _outcome(res) != "passed" and res.status != ExecStatus.OK, (name, res.status, res.detail[:300])


@pytest.mark.parametrize("name", ["runtest_noop", "reports_passed", "runner_patched", "test_swapped",
                                  "plugin_registered", "tests_rewritten", "wrapper_forged", "wrapper_swallows",
                                  "json_patched"])
def test_a_pass_pytest_reports_without_the_runners_evidence_is_failed_and_flagged(results, name):
    res = results[name]
    assert _outcome(res) == "failed" and "runner_tampering" in res.flags, (name, res.detail[:300])


def test_leaving_early_or_killing_the_harness_leaves_every_test_unreached(results):
    exited = results["exit_mid_run"]
    assert exited.status == ExecStatus.RUNTIME_ERROR and "ended before its tests finished" in exited.detail
    killed = results["kill_harness"]
    assert killed.status in (ExecStatus.RUNTIME_ERROR, ExecStatus.FAILED) and "runner_tampering" in killed.flags


def test_forged_lines_and_atexit_hooks_count_for_nothing(results):
    for name in ("fake_lines", "atexit"):
        res = results[name]
        assert _outcome(res) == "failed" and _outcome(res, "tests/test_ops.py::test_add") == "passed", name
        assert "runner_tampering" not in res.flags   # nothing reached the verdict, so nothing to flag


def test_site_files_pth_and_entry_point_plugins_of_the_repository_never_load(results):
    res = results["self_loading"]
    assert _outcome(res) == "failed" and "cannot import name 'mul'" in next(
        t.message for t in res.tests if t.name.endswith("test_mul"))
    assert _outcome(res, "tests/test_ops.py::test_add") == "passed"


def test_honest_test_kinds_keep_their_outcomes(results):
    res = results["honest"]
    assert {t.name: t.outcome for t in res.tests} == HONEST and not res.flags, res.detail[:500]


REACHING = ("frames", "code", "noop_code", "reach", "audit")


@pytest.mark.parametrize("name", REACHING)
def test_the_runners_functions_with_rewritten_cells_code_or_defaults_forge_nothing(results, name):
    """The writer found through frames, the test's code swapped, the trace function called with the
    test's frame, rebuilt with other defaults, plugin cells rewritten, ``sys.audit('tl.ran')``:
    pytest reports test_mul passed each time, and each time the harness fails it for want of the
    witness's evidence (which none of these can write) and flags it."""
    res = results[name]
    assert _outcome(res) == "failed" and "runner_tampering" in res.flags, (name, res.flags, res.detail[:300])
    assert _outcome(res, "tests/test_ops.py::test_add") == "passed", (name, res.detail[:300])


def test_the_witness_names_what_repository_code_did(results):
    # each takes the test's frame or code, or rebinds pytest's functions, on its way: the flags of
    # tl_proof.watcher (H4) and tl_proof.rebinding may be the ones named
    h4 = ("read a running test's frame", "read a test's code", "was rebound before")
    audit = results["audit"].detail
    assert "outside the runner's tracer" in audit or any(h in audit for h in h4), audit
    for name in ("frames", "code", "noop_code", "reach"):
        detail = results[name].detail
        assert "without the runner's evidence: tests/test_ops.py::test_mul" in detail or any(h in detail for h in h4), name


def test_a_failed_comparison_keeps_pytests_diff(results):
    """pytest's config is withheld during the call (tl_rguard.hide), yet the failure explains with
    pytest's diff, built from values read before the call."""
    msg = next(t.message for t in results["honest"].tests if t.name.endswith("::test_list_diff"))
    assert "At index 1 diff: 3 != 4" in msg, msg[-500:]
