"""Run a repository's pytest suite in a subprocess and read back per-test outcomes and calls.

The suite is the company's own code, trusted enough to run, but it never runs in the tuneloop
process, it runs in bubblewrap where that works (:mod:`connectors.suites.isolate`), and it sees none of the caller's environment beyond :data:`_PASSED_ENV` (no credential;
HOME is a temporary folder): each run is ``python -m pytest`` in the repository folder with the tracing plugin
:mod:`connectors.suites._pytest_trace` (copied into a temporary folder, loaded with ``-p``). The
repository's ``addopts`` are cleared (they often name plugins such as pytest-cov that need not
be installed), ``pytest-randomly`` and the cache provider are switched off, and bytecode is not
written into the repository.

Flaky tests are found the simple way (after pytest-rerunfailures and Google's flaky-test
studies): the suite is run again ``reruns`` times without tracing, and a test whose outcome
differs between runs is flaky.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from connectors.suites.isolate import isolate_command
from sdk.errors import SourceError

_PLUGIN = Path(__file__).with_name("_pytest_trace.py")
_PASSED_ENV = ("PATH", "LANG", "TZ", "TMPDIR", "SYSTEMROOT", "TUNELOOP_TEST_TIMEOUT")
"""The only variables of the caller's environment the traced suite run sees (plus ``LC_*``)."""
log = logging.getLogger("tuneloop.connectors.pytest")


class TestItem(BaseModel):
    """One collected pytest item.

    Attributes:
        nodeid: pytest's node id (``tests/test_m.py::TestX::test_y[1]``).
        path: test file relative to the repository root.
        cls: test class name or None; name: the test function's name without parameters.
        kind: pytest item type (``Function``, ``DoctestItem``...); only ``Function`` is used.
        outcome: passed, failed, error, skipped, xfailed or xpassed on the original code.
        duration: setup + call + teardown seconds in the traced run (an over-estimate).
        calls: ``(module path relative to the package folder, qualname, direct)``; direct is
            1 when the test's own code made the call.
        detail: why it failed or skipped (crash message or skip reason, one line); empty otherwise.
    """

    __test__ = False
    model_config = ConfigDict(frozen=True)

    nodeid: str
    path: str
    cls: str | None = None
    name: str
    kind: str = "Function"
    outcome: str = "passed"
    duration: float = 0.0
    calls: tuple[tuple[str, str, int], ...] = ()
    detail: str = ""

    @property
    def unit(self) -> tuple[str, str | None, str]:
        """``(file, class, function)``: parametrised items of one function form one unit."""
        return (self.path, self.cls, self.name)


class SuiteRun(BaseModel):
    """The result of tracing a suite: items in run order, collection errors, flaky node ids."""

    model_config = ConfigDict(frozen=True)

    items: tuple[TestItem, ...]
    errors: tuple[str, ...] = ()
    flaky: frozenset[str] = frozenset()
    exitstatus: int = 0


def run_suite(repo: Path, tests: str, package_dir: Path, *, reruns: int = 0, timeout_s: float = 900.0,
              python: str | None = None, extra_files: dict[str, str] | None = None,
              pythonpath: tuple[str, ...] = (), isolate: str = "auto") -> SuiteRun:
    """Trace ``repo``'s tests once, then re-run them ``reruns`` times to find flaky ones.

    Args:
        repo: repository root (the pytest working folder).
        tests: tests folder relative to ``repo``.
        package_dir: the package folder; only calls into it are recorded.
        reruns: extra untraced runs for flaky detection.
        timeout_s: wall-clock limit per run, seconds.
        python: interpreter to run pytest with (default: this one).
        extra_files: ``relpath -> text`` written into a folder at the front of ``sys.path`` (the
            package's generated ``.dist-info``, so its metadata is readable as if installed).
        pythonpath: folders appended to the end of ``sys.path`` (the test-dependency environment).
        isolate: ``auto``, ``on`` or ``off``: run each suite run in bubblewrap (:mod:`connectors.suites.isolate`).
    Raises:
        SourceError: pytest could not be started, timed out, or wrote no report; ``isolate`` is ``on`` and
            bubblewrap cannot run here.
    """
    log.info("pytest source: tracing the suite in %s (this runs every test once)", repo / tests)
    started = time.perf_counter()
    extra = (extra_files or {}, pythonpath, isolate)
    ignore: list[str] = []
    for _ in range(3):  # a module that hangs at import costs its own tests, not the suite's (at most 3 such)
        try:
            first = _run_once(repo, tests, package_dir, trace=True, timeout_s=timeout_s, python=python, extra=extra,
                              ignore=tuple(ignore))
            break
        except CollectionHang as hang:
            log.warning("pytest source: %s; running the suite again without it", hang.what)
            ignore.append(hang.path)
    else:
        raise SourceError(f"collecting the tests in {repo} hung in {', '.join(ignore)} and more",
                          "fix the test modules that block or loop at import")
    items = tuple(_item(repo, raw) for raw in first["items"])
    log.info("pytest source: traced %d tests in %.1f s", len(items), time.perf_counter() - started)
    seen = {i.nodeid: i.outcome for i in items}
    flaky: set[str] = set()
    for n in range(reruns):
        log.info("pytest source: re-run %d of %d to find flaky tests", n + 1, reruns)
        again = _run_once(repo, tests, package_dir, trace=False, timeout_s=timeout_s, python=python, extra=extra,
                          ignore=tuple(ignore))
        outcomes = {raw["nodeid"]: raw["outcome"] for raw in again["items"]}
        flaky |= {n for n, o in seen.items() if outcomes.get(n) != o}
    hung = tuple(f"{p}: collection did not finish in {timeout_s:.0f} s (a module that blocks or loops at import): "
                 "its tests are left out" for p in ignore)
    return SuiteRun(items=items, errors=tuple(first["errors"]) + hung, flaky=frozenset(flaky),
                    exitstatus=first["exitstatus"])


class CollectionHang(SourceError):
    """Collecting one test module (``path``, relative to the repository) did not finish in time."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(what, "fix that test module (it blocks or loops at import)")
        self.path = path


def _item(repo: Path, raw: dict) -> TestItem:
    path = raw.get("path") or raw["nodeid"].split("::")[0]
    try:
        path = Path(path).resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        pass
    return TestItem(nodeid=raw["nodeid"], path=path, cls=raw.get("cls"), name=raw["name"], kind=raw["kind"],
                    outcome=raw["outcome"], duration=float(raw.get("duration", 0.0)), calls=tuple(tuple(c) for c in raw.get("calls", ())),
                    detail=str(raw.get("detail", "")))


def _run_once(repo: Path, tests: str, package_dir: Path, *, trace: bool, timeout_s: float,
              python: str | None, extra: tuple[dict[str, str], tuple[str, ...], str] = ({}, (), "auto"),
              ignore: tuple[str, ...] = ()) -> dict:
    files, appended, isolate = extra
    with tempfile.TemporaryDirectory(prefix="tuneloop-trace-") as tmp:
        shutil.copy(_PLUGIN, Path(tmp) / "_tuneloop_trace.py")
        for rel, text in files.items():
            (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / rel).write_text(text, encoding="utf-8")
        out = Path(tmp) / "report.json"
        # the suite gets no credential of the caller (no token, key or DSN in the environment; HOME is the
        # temporary folder, so no ~/.netrc etc.); where bubblewrap works it also runs isolated (read-only
        # filesystem, no network, the home folder hidden: connectors.suites.isolate)
        env = {k: v for k, v in os.environ.items() if k in _PASSED_ENV or k.startswith("LC_")}
        env["HOME"] = tmp
        extra = [tmp] + ([str(package_dir.parent)] if package_dir.parent != repo else [])
        env["PYTHONPATH"] = os.pathsep.join(extra + [p for p in [env.get("PYTHONPATH", "")] if p])
        env.update(PYTHONDONTWRITEBYTECODE="1", TUNELOOP_TRACE_ROOT=str(package_dir.resolve()),
                   TUNELOOP_TRACE_OUT=str(out), TUNELOOP_TRACE_CALLS="1" if trace else "0",
                   TUNELOOP_TRACE_PATH=os.pathsep.join(appended))
        cmd = [python or sys.executable, "-m", "pytest", tests, "-p", "_tuneloop_trace", "-q", "-o", "addopts=",
               "-p", "no:cacheprovider", "-p", "no:randomly", "--no-header", "-rN",
               "--continue-on-collection-errors"]  # one test file that cannot import costs its tests, not the suite
        cmd += [f"--ignore={p}" for p in ignore]
        cmd += _own_config(repo, Path(tmp))
        cmd, env = isolate_command(cmd, env, mode=isolate, cwd=str(repo), tmp=tmp,
                                   keep=(str(package_dir.parent), *appended))
        try:
            proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            progress = Path(str(out) + ".progress")
            doing = progress.read_text(encoding="utf-8") if progress.is_file() else ""
            if doing.startswith("collecting ") and (repo / doing[11:]).is_file():
                raise CollectionHang(doing[11:], f"collecting {doing[11:]} did not finish in {timeout_s:.0f} s") from exc
            raise SourceError(f"the test suite in {repo} ran longer than {timeout_s:.0f} s"
                              + (f" (it was {doing})" if doing else ""),
                              "raise the source's `timeout_s` option, or point `tests` at a smaller folder") from exc
        except OSError as exc:
            raise SourceError(f"could not start pytest for {repo}: {exc}",
                              "install pytest in the interpreter given by the `python` option") from exc
        if not out.exists():
            tail = (proc.stdout + proc.stderr)[-1500:]
            raise SourceError(f"pytest wrote no report for {repo} (exit {proc.returncode}):\n{tail}",
                              "run `python -m pytest` in that folder by hand and fix what stops it from starting")
        return json.loads(out.read_text(encoding="utf-8"))


_CONFIGS = {"pytest.ini": "", ".pytest.ini": "", "pyproject.toml": "[tool.pytest", "tox.ini": "[pytest]",
            "setup.cfg": "[tool:pytest]"}


def _own_config(repo: Path, tmp: Path) -> list[str]:
    """pytest options that keep a repository without a pytest configuration of its own from taking an
    enclosing project's (a library checked out inside a monorepo or another project: pytest walks up to
    the first ``pytest.ini``/``pyproject.toml``, whose ``pythonpath``, ``python_files``, ``filterwarnings``
    and conftests then apply): an empty ini, ``repo`` as rootdir and conftest cut-off. ``[]`` when
    ``repo`` has its own configuration."""
    for name, marker in _CONFIGS.items():
        path = repo / name
        if path.is_file() and marker in path.read_text(encoding="utf-8", errors="replace"):
            return []
    (tmp / "tuneloop-pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return ["-c", str(tmp / "tuneloop-pytest.ini"), "--rootdir", str(repo), "--confcutdir", str(repo)]
