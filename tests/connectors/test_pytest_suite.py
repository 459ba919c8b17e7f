"""PytestSuiteSource on the fixture repository tests/fixtures/pyrepo (package ``minimath``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from connectors.suites.pytest_suite import PytestSuiteSource
from sdk.errors import ConfigError, SourceError
from sdk.sources import resolve_source

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "pyrepo"


def _copy(dst: Path) -> Path:
    shutil.copytree(FIXTURE, dst, ignore=shutil.ignore_patterns("__pycache__", ".flaky_state"))
    return dst


def _read(repo: Path, **options):
    return PytestSuiteSource({"path": str(repo), "package": "minimath", **options}, repo, "fix").read()


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return _copy(tmp_path_factory.mktemp("pyrepo") / "repo")


@pytest.fixture(scope="module")
def result(repo):
    # isolate off: the fixture's flaky test keeps its state in a file of the repository between runs, which the
    # isolated run (read-only repository, fresh /tmp each run) forbids; it then fails every run (not flaky)
    return _read(repo, flaky_reruns=1, methods=True, isolate="off")


def _task(result, entry_point):
    found = [t for t in result.tasks if t.verifier.entry_point == entry_point]
    assert len(found) == 1, [t.verifier.entry_point for t in result.tasks]
    return found[0]


def test_entry_point_resolves_to_the_class():
    assert resolve_source("pytest") is PytestSuiteSource


def test_counts_and_quarantine_reasons(result):
    reasons = {q.raw["locator"]: q.reason.split(":")[0] for q in result.quarantined}
    assert reasons == {
        "minimath/arith.py::uncovered": "no covering tests",
        "minimath/arith.py::shaky": "flaky tests",
        "minimath/util.py::broken_double": "failing tests",
    }
    assert result.counts["functions_found"] == 12
    assert result.counts["tasks"] == len(result.tasks) == 9
    assert result.counts["test_functions_flaky"] == 1
    assert result.counts["test_functions_failing"] == 1
    assert result.counts["quarantined"] == 3


def test_function_task_shape(result, repo):
    task = _task(result, "add")
    v = task.verifier
    assert v.framework == "pytest" and v.target_path == "minimath/arith.py"
    assert task.reference == 'def add(a: int, b: int) -> int:\n    """Return a + b."""\n    return a + b\n'
    meta = {f"minimath-0.0.0.dist-info/{n}" for n in ("METADATA", "top_level.txt", "INSTALLER")}  # "installed"
    assert set(v.files) == {"minimath/__init__.py", "minimath/arith.py", "minimath/util.py", "tests/conftest.py"} | meta
    assert v.files["minimath/arith.py"] == (repo / "minimath/arith.py").read_text()
    assert task.domain == "fix/arith"
    assert task.source.locator == "minimath/arith.py::add" and task.source.connector == "pytest"
    prompt = task.prompt[0].content
    assert "def add(a: int, b: int) -> int:" in prompt and '"""Return a + b."""' in prompt
    assert "return a + b" not in prompt and "__future__" not in prompt
    assert "import" not in prompt  # add uses no imported name
    hypot = _task(result, "hypot").prompt[0].content
    assert "import math\nfrom minimath.util import clamp\n" in hypot and "functools" not in hypot


def test_hidden_tests_are_a_disjoint_share(result):
    task = _task(result, "add")
    visible, hidden = task.verifier.tests, task.verifier.hidden_tests
    assert list(visible) == ["tests/test_arith.py"] and list(hidden) == ["tests/test_arith_hidden.py"]
    names = lambda text: {line.split("(")[0][4:] for line in text.splitlines() if line.startswith("def test")}
    assert names(visible["tests/test_arith.py"]) | names(hidden["tests/test_arith_hidden.py"]) == \
        {"test_add_small", "test_add_negative", "test_add_table"}
    assert not names(visible["tests/test_arith.py"]) & names(hidden["tests/test_arith_hidden.py"])
    assert len(task.metadata["hidden_tests"]) == 1  # floor(3 * 0.34) = 1 test function
    for text in [*visible.values(), *hidden.values()]:
        assert "TOLERANCE = 1e-9" in text and "test_mul" not in text and "TestCounter" not in text


def test_methods_and_indirect_coverage(result):
    inc = _task(result, "Counter.increment")
    assert inc.reference.startswith("def increment(self, by: int = 1) -> int:")
    assert "class Counter:" in inc.prompt[0].content
    assert "TestCounter" in inc.verifier.tests["tests/test_arith.py"]
    helper = _task(result, "_times")  # private, but covered through mul
    assert helper.metadata["direct_tests"] == 0
    clamp = _task(result, "clamp")  # direct tests ranked before test_hypot, which reaches it via hypot
    assert set(clamp.metadata["tests"] + clamp.metadata["hidden_tests"]) >= {
        "tests/test_util.py::test_clamp_inside", "tests/test_util.py::test_clamp_edges"}


def test_decorated_function_keeps_its_decorator(result):
    fib = _task(result, "fib")
    assert fib.reference.startswith("@functools.lru_cache(maxsize=None)\ndef fib(n: int) -> int:")


def test_same_source_gives_same_ids(result, repo):
    again = _read(repo, methods=True)  # no re-runs: the flaky test may pass this time, the rest is unchanged
    stable = [t.id for t in again.tasks if t.verifier.entry_point != "shaky"]
    assert stable == [t.id for t in result.tasks]


def test_options_exclude_methods_and_module_context(repo):
    res = _read(repo, exclude=["minimath/util.py", "*::fib"], methods=False, context="module",
                hidden_fraction=0.0, min_tests=2)
    eps = {t.verifier.entry_point for t in res.tasks}
    assert eps == {"add", "safe_div"}  # min_tests=2 leaves the functions with two or more test functions
    assert res.counts["excluded"] == 3 and res.counts["methods_skipped"] == 2
    add = next(t for t in res.tasks if t.verifier.entry_point == "add")
    assert not add.verifier.hidden_tests
    prompt = add.prompt[0].content
    assert "def safe_div(a: float, b: float) -> float:" in prompt and "return a + b" not in prompt
    assert "raise ZeroDivisionError" in prompt  # the rest of the module is shown whole


def test_src_layout(tmp_path):
    repo = tmp_path / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "src/pkg/__init__.py").write_text("def twice(x):\n    return 2 * x\n")
    (repo / "tests/test_pkg.py").write_text("from pkg import twice\n\ndef test_twice():\n    assert twice(2) == 4\n")
    res = PytestSuiteSource({"path": str(repo), "package": "pkg"}, tmp_path, "d").read()
    assert [t.verifier.target_path for t in res.tasks] == ["src/pkg/__init__.py"]
    assert res.tasks[0].domain == "d/pkg"
    assert "'src'" in res.tasks[0].verifier.files["conftest.py"]  # makes src/ importable in the sandbox
    # `exclude:` as the user writes it (the import path) works in a src layout, as the repository path does
    for glob in ("pkg/__init__.py::twice", "src/pkg/__init__.py::twice", "pkg/*"):
        res = PytestSuiteSource({"path": str(repo), "package": "pkg", "exclude": [glob]}, tmp_path, "d").read()
        assert not res.tasks and res.counts["excluded"] == 1, glob


def test_empty_suite_is_one_clear_error(tmp_path):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pkg/__init__.py").write_text("def f():\n    return 1\n")
    with pytest.raises(SourceError) as err:
        PytestSuiteSource({"path": str(repo), "package": "pkg"}, tmp_path, "d").read()
    assert "collected no tests" in err.value.what and "tests:" in err.value.fix
    assert "errors shown" not in err.value.fix  # none were shown


def test_missing_package_and_bad_options(tmp_path):
    with pytest.raises(SourceError, match="package 'nope'"):
        PytestSuiteSource({"path": str(FIXTURE), "package": "nope"}, tmp_path, "d").read()
    with pytest.raises(SourceError, match="does not exist"):
        PytestSuiteSource({"path": str(tmp_path / "missing"), "package": "x"}, tmp_path, "d").read()
    with pytest.raises(ConfigError):
        PytestSuiteSource({"path": ".", "package": "x", "hidden_fraction": 1.5}, tmp_path, "d")


def test_wrong_package_or_tests_folder_names_what_is_there(tmp_path):
    """A misspelt `package:` lists the packages found; tests at the root (inflection's sdist) suggest `.`."""
    repo = tmp_path / "repo"
    (repo / "src/mylib").mkdir(parents=True)
    (repo / "src/mylib/__init__.py").write_text("def f():\n    return 1\n")
    (repo / "test_mylib.py").write_text("def test_f():\n    pass\n")
    with pytest.raises(SourceError) as err:
        PytestSuiteSource({"path": str(repo), "package": "mylb"}, tmp_path, "d").read()
    assert err.value.fix.endswith("packages found there: mylib")
    with pytest.raises(SourceError) as err:
        PytestSuiteSource({"path": str(repo), "package": "mylib"}, tmp_path, "d").read()
    assert "tests folder" in err.value.what and err.value.fix.endswith("folders holding test files: .")
    (repo / "src/solo.py").write_text("def g():\n    return 2\n")
    with pytest.raises(SourceError, match="tests folder") as err:  # the single module is found: tests/ is not
        PytestSuiteSource({"path": str(repo), "package": "solo"}, tmp_path, "d").read()
    assert err.value.fix.endswith("folders holding test files: .")


def test_slow_tests_get_a_longer_verifier_timeout(tmp_path):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pkg/__init__.py").write_text("import time\n\ndef slow(s):\n    time.sleep(s)\n    return s\n\n"
                                          "def fast():\n    return 1\n")
    (repo / "tests/test_pkg.py").write_text("from pkg import fast, slow\n\ndef test_slow():\n    assert slow(2.5) == 2.5\n\n"
                                            "def test_fast():\n    assert fast() == 1\n")
    res = PytestSuiteSource({"path": str(repo), "package": "pkg", "test_timeout_s": 5}, tmp_path, "d").read()
    timeouts = {t.verifier.entry_point: t.verifier.timeout_s for t in res.tasks}
    assert timeouts["fast"] == 5.0
    assert timeouts["slow"] >= 10.0 and timeouts["slow"] in (10.0, 20.0, 40.0, 80.0)  # doubled: 3 x 2.5 s + 2 > 5


def test_tests_inside_the_package_are_not_targets(tmp_path):
    repo = tmp_path / "repo"
    (repo / "pkg" / "tests").mkdir(parents=True)
    (repo / "pkg/__init__.py").write_text("def one():\n    return 1\n")
    (repo / "pkg/tests/__init__.py").write_text("")
    (repo / "pkg/tests/test_one.py").write_text("from pkg import one\n\ndef helper():\n    return 1\n\n"
                                                "def test_one():\n    assert one() == helper()\n")
    res = PytestSuiteSource({"path": str(repo), "package": "pkg", "tests": "pkg/tests"}, tmp_path, "d").read()
    assert [t.verifier.entry_point for t in res.tasks] == ["one"] and not res.quarantined
    assert res.counts["functions_found"] == 1
    assert list(res.tasks[0].verifier.tests) == ["pkg/tests/test_one.py"]
    assert "pkg/tests/test_one.py" not in res.tasks[0].verifier.files


def test_a_function_whose_test_fails_is_quarantined_not_taught(tmp_path):
    """New-user trial: `mean` with one failing test became a task whose reference was the bug."""
    pkg, tests = tmp_path / "lib", tmp_path / "tests"
    pkg.mkdir(), tests.mkdir()
    (pkg / "__init__.py").write_text('def mean(xs):\n    """Mean."""\n    return sum(xs) // len(xs)\n\n\n'
                                     'def add(a, b):\n    """Sum."""\n    return a + b\n')
    (tests / "test_lib.py").write_text(
        "from lib import add, mean\n\n\ndef test_mean_int():\n    assert mean([2, 2]) == 2\n\n\n"
        "def test_mean_frac():\n    assert mean([1, 2]) == 1.5\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
        "def test_add_neg():\n    assert add(-1, 1) == 0\n")
    result = PytestSuiteSource({"path": str(tmp_path), "package": "lib", "min_tests": 1}, tmp_path, "lib").read()
    assert [t.verifier.entry_point for t in result.tasks] == ["add"]
    (q,) = result.quarantined
    assert q.raw["locator"] == "lib/__init__.py::mean" and "tests/test_lib.py::test_mean_frac" in q.reason


@pytest.mark.parametrize("inside", ["src", "src/invkit"])
def test_a_path_inside_the_repository_is_told_the_root(tmp_path, inside):
    """A new user's `path: src` or `path: src/invkit` (the package folder itself): the fix names the
    repository root holding both the package and `tests`, not the packages under the wrong folder."""
    repo = tmp_path / "proj"
    (repo / "src/invkit").mkdir(parents=True)
    (repo / "src/invkit/__init__.py").write_text("def f():\n    return 1\n")
    (repo / "tests").mkdir()
    (repo / "tests/test_f.py").write_text("from invkit import f\n\n\ndef test_f():\n    assert f() == 1\n")
    with pytest.raises(SourceError) as err:
        PytestSuiteSource({"path": str(repo / inside), "package": "invkit"}, tmp_path, "d").read()
    assert err.value.fix.startswith(f"set `path:` to {repo.resolve()} (the repository root")
