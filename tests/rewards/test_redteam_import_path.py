"""Red team (issue 14, after 5ac3680): the trusted harness never runs a file the solution wrote or
authored, on any path. Each cheat plants code that, once it runs in the harness, rewrites every
outcome to ``passed``; every row is scored through ``score_batch`` with the default
:class:`RewardConfig`, static scans off (the runtime layer alone: they are obfuscatable), on the
bubblewrap backend, beside its wrong-answer control; honest answers must keep full marks.

Found open (a wrong ``add`` scored 1.0, unflagged, before this file's fix):

- cold ``script`` (a support file: no warm slot): a test doing ``import solution`` imported the
  solution's file from the working folder into the harness;
- warm ``script`` with a ``src/`` target: ``/tmp/run/src`` was on the harness's ``sys.path`` (a
  module the test imports optionally, planted there, ran in the harness);
- cold ``pytest``, ``src/`` layout: the solution importing itself as ``src.pkg.mod`` made the harness
  import it (``preimport``: the file is under the trusted folders, the name is not the target's);
- cold ``pytest``: the harness's private tests folder is under ``/tmp``, writable by the solution
  (same uid); a ``conftest.py`` (or a standard module: pytest puts the folder first on
  ``sys.path``) planted there ran in the harness; its ``pytest.ini`` could be rewritten
  (``addopts = -p solution``: the solution's file loaded as a plugin, in the harness).
"""

from __future__ import annotations

import pytest

from sdk.config import RewardConfig, SandboxConfig
from sdk.rewards.tiered import score_batch
from sdk.tasks.records import Message, Source, Task, UnitTestVerifier

from .test_redteam import fenced

PLANT = '''import os, sys
if type(sys.modules.get("tl_harness")).__name__ == "module":
    h = sys.modules["tl_harness"]
    emit = h.Channel.emit
    h.Channel.emit = lambda self, **e: emit(self, **(dict(e, outcome="passed") if e.get("event") == "test" else e))
'''
ADD = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a + b + 1\n"
CHECK_IMPORT = "def check(candidate):\n    import solution\n    assert solution.add(1, 2) == 3\n    assert candidate(2, 2) == 4\n"
CHECK_OPTIONAL = ("def check(candidate):\n    try:\n        import tl_optional_x\n    except ImportError:\n        pass\n"
                  "    assert candidate(1, 2) == 3\n")
TEST_LAZY = "from solution import add\n\n\ndef test_a():\n    import colorsys\n    assert add(1, 2) == 3\n"
TEST_TWO = "from solution import add\n\n\ndef test_zero():\n    assert add(0, 0) in (0, 1)\n\n\ndef test_a():\n    assert add(1, 2) == 3\n"
SH = ("import os\nopen('/tmp/p', 'w').write({text!r})\nos.posix_spawn('/bin/sh', ['sh', '-c', 'for d in /tmp/.tl-tests-*; "
      "do cp /tmp/p $d/{name}; done'], {{}})\nimport time\ntime.sleep(0.5)\n")
# the harness's own view: no '' or relative entry, no folder this uid can write (pytest: but its tests folder)
PROBE = ("import os, sys\nf = globals().get('__file__')\nmine = os.path.dirname(os.path.abspath(f)) + os.sep if f else None\n"
         "bad = [p for p in sys.path if not os.path.isabs(p) or (os.path.isdir(p) and os.access(p, os.W_OK)"
         " and not (mine and (p + os.sep).startswith(mine)))]\n"
         "assert sys.flags.isolated and sys.flags.no_site and not bad, bad\n")


def _task(framework: str, tests: dict[str, str], files: dict[str, str] | None = None, target: str = "solution.py") -> Task:
    verifier = UnitTestVerifier(framework=framework, tests=tests, files=files or {}, target_path=target,
                                entry_point="add", timeout_s=20.0)
    return Task(domain="python/redteam-import", prompt=(Message(role="user", content="Write add(a, b)."),),
                verifier=verifier, source=Source(connector="test"))


SUPPORT = {"helper.py": "X = 1\n"}   # a support file: the cold path (no warm slot)
# name -> (task, code before the answer, flag the cheat must carry or None)
CASES = {
    "cold_script_test_imports_the_solution": (_task("script", {"check.py": CHECK_IMPORT}, SUPPORT), PLANT, None),
    "warm_script_test_imports_the_solution": (_task("script", {"check.py": CHECK_IMPORT}), PLANT, None),
    "warm_src_target_plants_an_optional_module": (
        _task("script", {"check.py": CHECK_OPTIONAL}, target="src/solution.py"),
        "import os\nos.makedirs('/tmp/run/src', exist_ok=True)\nopen('/tmp/run/src/tl_optional_x.py', 'w').write(%r)\n" % PLANT,
        None),
    "cold_pytest_src_alias_of_the_solution": (
        _task("pytest", {"tests/test_a.py": "from pkg.mod import add\n\n\ndef test_a():\n    assert add(1, 2) == 3\n"},
              {"src/pkg/__init__.py": ""}, target="src/pkg/mod.py"), PLANT + "import src.pkg.mod\n", "runner_tampering"),
    "cold_pytest_conftest_planted_in_the_tests_folder": (
        _task("pytest", {"test_a.py": TEST_LAZY}, SUPPORT), SH.format(text=PLANT, name="conftest.py"), "runner_tampering"),
    "cold_pytest_stdlib_planted_in_the_tests_folder": (
        _task("pytest", {"test_a.py": TEST_LAZY}, SUPPORT), SH.format(text=PLANT, name="colorsys.py"), "runner_tampering"),
    "cold_pytest_ini_rewritten": (
        _task("pytest", {"test_a.py": TEST_TWO}, SUPPORT),
        PLANT + SH.format(text="[pytest]\naddopts = -p solution\n", name="pytest.ini"), None),
}
PROBES = {
    "cold_script": _task("script", {"check.py": "def check(candidate):\n" + "".join("    " + x + "\n" for x in PROBE.splitlines())
                                     + "    assert candidate(1, 2) == 3\n"}, SUPPORT),
    "warm_script_src": _task("script", {"check.py": "def check(candidate):\n"
                                        + "".join("    " + x + "\n" for x in PROBE.splitlines())
                                        + "    assert candidate(1, 2) == 3\n"}, target="src/solution.py"),
    "cold_pytest": _task("pytest", {"test_a.py": "from solution import add\n\n\ndef test_a():\n"
                                    + "".join("    " + x + "\n" for x in PROBE.splitlines()) + "    assert add(1, 2) == 3\n"},
                         SUPPORT),
}


@pytest.fixture(scope="module")
def scored():
    sandbox_mod = pytest.importorskip("sdk.sandbox")
    try:
        sandbox = sandbox_mod.make_sandbox(SandboxConfig(backend="bubblewrap", cache=False))
    except Exception as exc:  # noqa: BLE001 - depends on the machine
        pytest.skip(f"bubblewrap unavailable here: {exc}")
    rows = []
    for n, (task, pre, _) in CASES.items():
        rows += [(f"{n}/cheat", task, pre + WRONG), (f"{n}/honest", task, ADD), (f"{n}/wrong", task, WRONG)]
    rows += [(f"probe/{n}", task, ADD) for n, task in PROBES.items()]
    try:
        got = score_batch([t for _, t, _ in rows], [fenced(c) for _, _, c in rows], sandbox, RewardConfig(),
                          static_checks=False)
    finally:
        sandbox.close()
    return {name: r for (name, _, _), r in zip(rows, got)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_planted_file_never_runs_in_the_harness(scored, name):
    cheat, honest, wrong = (scored[f"{name}/{k}"] for k in ("cheat", "honest", "wrong"))
    assert wrong.score is not None and wrong.score < 1.0 and not wrong.flags, wrong
    assert cheat.score is not None and cheat.score <= wrong.score, (cheat, wrong)
    flag = CASES[name][2]
    if flag:
        assert flag in cheat.flags, cheat
    assert (honest.score, honest.flags) == (1.0, ()), honest


@pytest.mark.parametrize("name", sorted(PROBES))
def test_the_harness_import_path_holds_no_writable_folder(scored, name):
    res = scored[f"probe/{name}"]
    assert (res.score, res.flags) == (1.0, ()), res
