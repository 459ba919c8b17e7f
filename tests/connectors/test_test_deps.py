"""Issue 13, item 2: a suite's test requirements, installed once into a cached read-only
environment and seen by the traced run and the sandbox, tested offline against a wheel folder
built here (``pip install --no-index --find-links``)."""

from __future__ import annotations

import importlib.util
import stat
import zipfile
from pathlib import Path

import pytest

from connectors.suites.pytest_suite import PytestSuiteSource
from connectors.suites.testreqs import find_test_requirements
from sdk.config import SandboxConfig
from sdk.errors import SourceError
from sdk.sandbox import deps, make_sandbox
from sdk.sandbox.contract import ExecRequest
from sdk.tasks.validate import validate_tasks


def _wheel(folder: Path, name: str = "tinyhelper", version: str = "0.1") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    members = {f"{name}/__init__.py": "def help_value():\n    return 42\n",
               f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
               f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    members[f"{info}/RECORD"] = "".join(f"{m},,\n" for m in members) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as zf:
        for member, text in members.items():
            zf.writestr(member, text)
    return path


@pytest.fixture()
def offline(tmp_path, monkeypatch):
    """A private cache, no pip configuration of this machine, and a wheel folder."""
    monkeypatch.setenv("TUNELOOP_DEPS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    wheels = tmp_path / "wheels"
    _wheel(wheels)
    return ["--no-index", "--find-links", str(wheels)]


def _repo(root: Path, pyproject: str) -> Path:
    repo = root / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pyproject.toml").write_text(pyproject)
    (repo / "pkg/__init__.py").write_text("from tinyhelper import help_value\n\n\ndef answer():\n    return help_value()\n")
    (repo / "tests/test_pkg.py").write_text("import tinyhelper\nfrom pkg import answer\n\n\n"
                                            "def test_answer():\n    assert answer() == tinyhelper.help_value() == 42\n")
    return repo


PYPROJECT = '[project]\nname = "pkg"\nversion = "1.0"\n\n[project.optional-dependencies]\n' \
            'tests = ["tinyhelper", "pytest>=7", "pytest-cov", "pkg[extra]"]\nextra = ["tinyhelper>=0.1"]\n'


def test_requirements_are_found_in_the_usual_places(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "pyproject.toml").write_text(PYPROJECT)
    assert find_test_requirements(repo, "pkg") == (["tinyhelper", "tinyhelper>=0.1"], "pyproject.toml/setup.cfg test extras")
    (repo / "pyproject.toml").write_text('[dependency-groups]\ntest = ["freezegun", {include-group = "more"}]\n'
                                         'more = ["hypothesis>=6"]\n')
    assert find_test_requirements(repo)[0] == ["freezegun", "hypothesis>=6"]
    (repo / "pyproject.toml").unlink()
    (repo / "requirements-test.txt").write_text("# helpers\n-r base.txt\nfreezegun==1.5  # pinned\n-e .\n")
    (repo / "base.txt").write_text("attrs\n")
    assert find_test_requirements(repo)[0] == ["attrs", "freezegun==1.5"]
    (repo / "requirements-test.txt").unlink()
    (repo / "tox.ini").write_text("[testenv]\ndeps =\n    pytest\n    py311: mock\n    responses\n")
    assert find_test_requirements(repo)[0] == ["mock", "responses"]
    (repo / "tox.ini").unlink()
    (repo / "noxfile.py").write_text("import nox\n\n@nox.session\ndef tests(session):\n"
                                     "    session.install('-e', '.', 'pytest', 'freezegun')\n")
    assert find_test_requirements(repo) == (["freezegun"], "noxfile.py session.install")


def test_a_suite_that_needs_a_helper_builds_and_validates(tmp_path, offline):
    assert importlib.util.find_spec("tinyhelper") is None  # not in tuneloop's own environment
    repo = _repo(tmp_path, PYPROJECT)
    res = PytestSuiteSource({"path": str(repo), "package": "pkg", "pip_args": offline}, tmp_path, "d").read()
    assert [t.verifier.entry_point for t in res.tasks] == ["answer"]
    assert res.tasks[0].verifier.requirements == ("tinyhelper", "tinyhelper>=0.1")
    env = deps.find_env(("tinyhelper", "tinyhelper>=0.1"))
    assert env is not None and (env / "tinyhelper/__init__.py").is_file()
    assert not (env / "tinyhelper/__init__.py").stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    box = make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=1, cache=False))
    try:
        valid, bad = validate_tasks(res.tasks, box)
        leak, unbuilt = box.run([ExecRequest(solution="", target_path="x.py", requirements=reqs, tests={
            "test_leak.py": "import tinyhelper\n\ndef test_no_site_packages():\n    import pydantic\n"})
            for reqs in (("tinyhelper", "tinyhelper>=0.1"), ("tinyhelper==0.1",))])
    finally:
        box.close()
    assert [q.reason for q in bad] == [] and len(valid) == 1
    assert not leak.all_passed and "pydantic" in (leak.detail + "".join(t.message for t in leak.tests))
    assert unbuilt.status.value == "toolchain_unavailable"  # an environment pip cannot build is never a 0


def test_the_environment_is_built_once(tmp_path, offline):
    first = deps.ensure_env(["tinyhelper"], pip_args=offline)
    (tmp_path / "wheels").rename(tmp_path / "gone")  # a second build would fail now
    assert deps.ensure_env([" tinyhelper "], pip_args=offline) == first


def test_an_unresolvable_requirement_is_one_clear_error(tmp_path, offline):
    repo = _repo(tmp_path, PYPROJECT)
    with pytest.raises(SourceError) as err:
        PytestSuiteSource({"path": str(repo), "package": "pkg", "pip_args": offline,
                           "test_requirements": ["no-such-helper-xyz"]}, tmp_path, "d").read()
    assert "no-such-helper-xyz" in err.value.what and "test_requirements" in err.value.what
    assert "pip_args" in err.value.fix and "test_requirements" in err.value.fix
    assert not list((tmp_path / "cache").glob("*/.complete"))  # nothing half-built is kept


NOXFILE = '''import nox


@nox.session(tags=["tests"])
def coverage_run(session):
    session.install(".", "-r", "reqs/test.txt", "-c", "constraints.txt", "freezegun")


@nox.session(tags=["docs"])
def docs(session):
    session.install(".", "-r", "docs/requirements.txt", "bandit")


def helper(session):
    session.install("never")
'''


def test_nox_reads_only_test_sessions_and_follows_r(tmp_path):
    """webcolors 25.10.0: ``session.install(".", "-r", "docs/requirements.txt")`` of a docs session
    was taken as a requirement named ``docs/requirements.txt`` (pip refused the whole list)."""
    repo = tmp_path / "r"
    (repo / "reqs").mkdir(parents=True)
    (repo / "reqs/test.txt").write_text("responses\n")
    (repo / "noxfile.py").write_text(NOXFILE)
    assert find_test_requirements(repo) == (["responses", "freezegun"], "noxfile.py session.install")
    (repo / "pyproject.toml").write_text('[dependency-groups]\ntests = ["pytest", "coverage[toml]"]\n')
    assert find_test_requirements(repo) == ([], "pyproject.toml [dependency-groups]")   # declared: tools only
