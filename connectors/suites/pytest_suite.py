"""pytest repositories → tasks: one task per package function that the suite exercises.

Pipeline (issue 4, part 1):

1. Read the package's modules with ``ast`` (:mod:`connectors.suites.pysource`): top-level functions
   and methods of top-level classes are the candidate targets.
2. Run the repository's own suite once in a subprocess with a tracing plugin
   (:mod:`connectors.suites.pytest_collect`): per test, the package functions it called. Re-run it
   ``flaky_reruns`` times to find flaky tests. Tests that fail, error, skip or flip on the
   original code are never used as verifiers.
3. For each target, the covering test functions (direct callers first, then tests that reach
   it through other package code; at most ``max_tests``) become a generated test file holding
   only those tests plus everything else their module needs (imports, fixtures, helpers). A
   deterministic ``hidden_fraction`` of them goes to ``hidden_tests``.
4. The task: the prompt shows a short instruction and the context (``signature``: the module's
   imports of the names the target uses, and the target's header and docstring; ``module``: the whole module with the body
   removed); the model answers with the complete definition; the verifier splices it into
   ``target_path`` by ``entry_point`` (``func`` or ``Class.method``; for a method the answer is
   the ``def`` at column 0, re-indented into the class by the splicer).

Parametrised items of one test function form one unit: the unit is kept or dropped whole.
Nothing is dropped silently: targets without usable tests are quarantined with the reason,
and :attr:`SourceResult.counts` says how many of each there were.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Literal

from pydantic import Field

from connectors.suites.pysource import ModuleInfo, PyFunction, TestModule, module_context, scan_module
from connectors.suites.pytest_collect import SuiteRun, TestItem, run_suite
from sdk.errors import SourceError
from sdk.sources import SourceOptions, SourceResult, TaskSource
from sdk.tasks.records import Message, Quarantined, Source, Task, UnitTestVerifier

log = logging.getLogger("tuneloop.connectors.pytest")
Unit = tuple[str, str | None, str]  # (test file, class or None, test function)
_USABLE = {"passed"}
_DATA_LIMIT = 64 * 1024
_SRC_CONFTEST = ("import os as _tl_os, sys as _tl_sys  # added by tuneloop: the package lives under {parent}/\n"
                 "_tl_sys.path.insert(0, _tl_os.path.join(_tl_os.path.dirname(_tl_os.path.abspath(__file__)), {parent!r}))\n")


class PytestSuiteOptions(SourceOptions):
    """Options of the ``pytest`` source.

    Attributes:
        path: repository folder (relative to the config file).
        package: import name of the package; its folder is ``path/<package>`` or ``path/src/<package>``.
        tests: tests folder relative to ``path``.
        hidden_fraction: share of each target's covering test functions held back as hidden tests
            (rounded down, at least one test always stays visible); deterministic.
        min_tests: a target needs at least this many usable covering test functions.
        max_tests: at most this many test functions per task (direct callers first).
        context: ``signature`` (imports of the names the target uses + header + docstring) or
            ``module`` (the whole module with the target's body removed).
        flaky_reruns: extra runs of the suite to find flaky tests (0: none).
        exclude: globs over module paths (``pkg/_vendor/*``) or locators (``pkg/mod.py::func``).
        methods: also make tasks of methods (``entry_point = "Class.method"``). Off by default:
            the sandbox's splicer replaces top-level definitions only, so method tasks need a
            splicer that re-indents a ``def`` into its class before they can validate.
        timeout_s: wall-clock limit of one run of the whole suite, seconds.
        test_timeout_s: the verifier's limit for one run of a task's tests, seconds; doubled for
            tasks whose tests took long in the traced run (see ``_Builder._timeout``).
        python: interpreter that runs the suite (default: tuneloop's own).
    """

    path: str
    package: str
    tests: str = "tests"
    hidden_fraction: float = Field(0.34, ge=0.0, lt=1.0)
    min_tests: int = Field(1, ge=1)
    max_tests: int = Field(12, ge=1)
    context: Literal["signature", "module"] = "signature"
    flaky_reruns: int = Field(0, ge=0)
    exclude: list[str] = Field(default_factory=list)
    methods: bool = False
    timeout_s: float = Field(900.0, gt=0)
    test_timeout_s: float = Field(10.0, gt=0)
    python: str | None = None


class PytestSuiteSource(TaskSource):
    """A Python repository and its pytest suite → one task per covered function.

    Raises (from :meth:`read`):
        SourceError: missing folder or package, pytest cannot start, or no test is collected.
    """

    Options = PytestSuiteOptions
    name = "pytest"

    def _load(self) -> SourceResult:
        opts: PytestSuiteOptions = self.options  # type: ignore[assignment]
        repo, package_dir = self._locate(opts)
        modules, files = _read_package(repo, package_dir)
        files.update(_support_files(repo, opts.tests, package_dir))
        run = run_suite(repo, opts.tests, package_dir, reruns=opts.flaky_reruns,
                        timeout_s=opts.timeout_s, python=opts.python)
        items = [i for i in run.items if i.kind == "Function"]
        if not items:
            errors = "\n".join(run.errors[:5])
            raise SourceError(f"pytest collected no tests in {repo / opts.tests}" + (f":\n{errors}" if errors else ""),
                              "point `tests:` at the folder holding test_*.py files, or fix the collection errors shown")
        for test_file in {i.path for i in items}:
            files.pop(test_file, None)  # a test module inside the package travels as a (pruned) test, never whole
        builder = _Builder(self, opts, repo, package_dir, files, run, items, _git_head(repo))
        tests_rel = (repo / opts.tests).resolve().relative_to(repo.resolve()).as_posix() + "/"
        modules = [m for m in modules if not m.path.startswith(tests_rel)]  # tests inside the package are not targets
        for n, info in enumerate(modules, 1):
            builder.add_module(info)
            log.info("pytest source: module %d/%d %s: %d tasks so far", n, len(modules), info.path, len(builder.result_.tasks))
        return builder.result()

    def _locate(self, opts: PytestSuiteOptions) -> tuple[Path, Path]:
        repo = self.resolve(opts.path)
        if not repo.is_dir():
            raise SourceError(f"repository folder {repo} does not exist", "set `path:` to the folder that holds the package and its tests")
        rel = opts.package.replace(".", "/")
        for candidate in (repo / rel, repo / "src" / rel):
            if candidate.is_dir():
                break
        else:
            raise SourceError(f"package {opts.package!r} is neither {repo / rel} nor {repo / 'src' / rel}",
                              "set `package:` to the import name of a folder under `path` (or under path/src)")
        if not (repo / opts.tests).is_dir():
            raise SourceError(f"tests folder {repo / opts.tests} does not exist",
                              "set `tests:` to the folder (relative to `path`) that holds the test files")
        return repo, candidate


class _Builder:
    """Turns traced units and scanned modules into tasks, quarantine and counts."""

    def __init__(self, source: PytestSuiteSource, opts: PytestSuiteOptions, repo: Path, package_dir: Path,
                 files: dict[str, str], run: SuiteRun, items: list[TestItem], commit: str) -> None:
        self.source, self.opts, self.repo, self.files, self.commit = source, opts, repo, files, commit
        self.result_ = SourceResult()
        self.counts: dict[str, int] = defaultdict(int)
        self.pkg_rel = pkg_rel = package_dir.resolve().relative_to(repo.resolve()).as_posix()
        self.units: dict[Unit, list[TestItem]] = defaultdict(list)
        self.cover: dict[tuple[str, str], dict[Unit, int]] = defaultdict(dict)
        for item in items:
            self.units[item.unit].append(item)
            for path, qual, direct in item.calls:
                key = (f"{pkg_rel}/{path}", qual)
                self.cover[key][item.unit] = max(direct, self.cover[key].get(item.unit, 0))
        self.flaky = {u for u, its in self.units.items() if any(i.nodeid in run.flaky for i in its)}
        self.failing = {u for u, its in self.units.items()
                        if u not in self.flaky and any(i.outcome not in _USABLE for i in its)}
        self.collected: dict[str, set[tuple[str | None, str]]] = defaultdict(set)
        self.test_modules: dict[str, TestModule] = {}
        for path, cls, name in self.units:
            self.collected[path].add((cls, name))
        self.counts.update(tests_collected=len(items), test_functions=len(self.units),
                           test_functions_flaky=len(self.flaky), test_functions_failing=len(self.failing),
                           collection_errors=len(run.errors))

    def add_module(self, info: ModuleInfo) -> None:
        """Turn each function of ``info`` into a task, a quarantine entry or a count."""
        for fn in info.functions:
            self.counts["functions_found"] += 1
            locator = f"{fn.path}::{fn.qualname}"
            if any(fnmatch.fnmatch(fn.path, g) or fnmatch.fnmatch(locator, g) for g in self.opts.exclude):
                self.counts["excluded"] += 1
                continue
            if "." in fn.qualname and not self.opts.methods:
                self.counts["methods_skipped"] += 1
                continue
            covering = self.cover.get((fn.path, fn.qualname), {})
            if covering:
                self.counts["functions_with_tests"] += 1
            elif fn.private:
                self.counts["private_skipped"] += 1
                continue
            reason = self._reject(fn, covering)
            if reason:
                self._quarantine(fn, reason, covering)
                continue
            self.result_.tasks.append(self._task(info, fn, covering))

    def _reject(self, fn: PyFunction, covering: dict[Unit, int]) -> str:
        if not covering:
            return "no covering tests: no test of the suite calls it"
        if fn.ambiguous:
            return "ambiguous definition: the name is defined more than once in its scope"
        usable = [u for u in covering if u not in self.flaky and u not in self.failing]
        if len(usable) >= self.opts.min_tests:
            return ""
        if any(u in self.flaky for u in covering):
            return f"flaky tests: {len(usable)} stable covering test(s), need {self.opts.min_tests}"
        if any(u in self.failing for u in covering):
            return f"failing tests: covering tests fail or skip on the original code; {len(usable)} usable, need {self.opts.min_tests}"
        return f"too few tests: {len(usable)} covering test(s), need {self.opts.min_tests}"

    def _quarantine(self, fn: PyFunction, reason: str, covering: dict[Unit, int]) -> None:
        self.counts["quarantined_" + reason.split(":")[0].replace(" ", "_")] += 1
        raw = {"locator": f"{fn.path}::{fn.qualname}", "tests": sorted("::".join(filter(None, u)) for u in covering)}
        self.result_.quarantined.append(Quarantined(reason=reason, raw=raw, source=self._source(fn)))

    def _source(self, fn: PyFunction) -> Source:
        return Source(connector="pytest", uri=str(self.repo), locator=f"{fn.path}::{fn.qualname}", commit=self.commit)

    def _task(self, info: ModuleInfo, fn: PyFunction, covering: dict[Unit, int]) -> Task:
        usable = [u for u in covering if u not in self.flaky and u not in self.failing]
        ranked = sorted(usable, key=lambda u: (-covering[u], _hash(fn.qualname, *map(str, u))))[: self.opts.max_tests]
        n_hidden = min(int(len(ranked) * self.opts.hidden_fraction + 1e-9), len(ranked) - 1)
        by_hash = sorted(ranked, key=lambda u: _hash("hidden", fn.path, fn.qualname, *map(str, u)))
        hidden = set(by_hash[:n_hidden])
        visible = [u for u in ranked if u not in hidden]
        verifier = UnitTestVerifier(
            framework="pytest", files=self.files, target_path=fn.path, entry_point=fn.qualname,
            tests=self._test_files(visible, hidden=False), hidden_tests=self._test_files(sorted(hidden), hidden=True),
            timeout_s=self._timeout(visible, sorted(hidden)))
        module = _module_name(info.path, self.pkg_rel)
        return Task(
            domain=f"{self.source.domain}/{module}", prompt=(Message(role="user", content=self._prompt(info, fn)),),
            verifier=verifier, reference=fn.reference, source=self._source(fn),
            metadata={"tests": [i.nodeid for u in visible for i in self.units[u]],
                      "hidden_tests": [i.nodeid for u in sorted(hidden) for i in self.units[u]],
                      "direct_tests": sum(covering[u] for u in ranked)})

    def _timeout(self, *groups: list[Unit]) -> float:
        """``test_timeout_s``, doubled until it exceeds 3x the slowest group's traced seconds + 2 s.

        Doubling (not the measured value itself) keeps task ids stable across runs whose
        timings differ a little: only a test suite that got much slower changes its tasks' ids.
        """
        need = 3 * max(sum(i.duration for u in g for i in self.units[u]) for g in groups) + 2
        timeout = self.opts.test_timeout_s
        while timeout < need and timeout < 600:
            timeout *= 2
        return timeout

    def _test_files(self, units: list[Unit], hidden: bool) -> dict[str, str]:
        by_file: dict[str, set[tuple[str | None, str]]] = defaultdict(set)
        for path, cls, name in units:
            by_file[path].add((cls, name))
        out = {}
        for path, keep in sorted(by_file.items()):
            if path not in self.test_modules:
                self.test_modules[path] = TestModule((self.repo / path).read_text(encoding="utf-8"), self.collected[path])
            out[_hidden_name(path) if hidden else path] = self.test_modules[path].keep(keep)
        return out

    def _prompt(self, info: ModuleInfo, fn: PyFunction) -> str:
        what = "method" if "." in fn.qualname else "function"
        head = (f"Write the {what} `{fn.qualname}` of `{fn.path}`. Reply with the complete `def {fn.name}` "
                f"definition in one ```python block.")
        if self.opts.context == "module":
            body = module_context(self.files[fn.path], fn)
        else:
            stub = fn.stub if not fn.class_header else fn.class_header + "\n" + _indent(fn.stub)
            imports = info.imports_for(fn)
            body = (imports + "\n\n" if imports else "") + stub
        return f"{head}\n\n```python\n{body.rstrip()}\n```"

    def result(self) -> SourceResult:
        """The tasks, quarantine and counts built so far."""
        self.counts["tasks"] = len(self.result_.tasks)
        self.counts["quarantined"] = len(self.result_.quarantined)
        self.result_.counts = dict(self.counts)
        return self.result_


def _read_package(repo: Path, package_dir: Path) -> tuple[list[ModuleInfo], dict[str, str]]:
    """Every ``.py`` file of the package (``relpath -> text``) and the modules that parse."""
    files: dict[str, str] = {}
    modules: list[ModuleInfo] = []
    for path in sorted(package_dir.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(repo).as_posix()
        text = path.read_text(encoding="utf-8")
        files[rel] = text
        try:
            modules.append(scan_module(text, rel))
        except SyntaxError as exc:
            raise SourceError(f"{rel} does not parse: {exc}", "fix the syntax error or list the module under `exclude:`") from exc
    return modules, files


def _support_files(repo: Path, tests: str, package_dir: Path) -> dict[str, str]:
    """conftest.py files, ``__init__.py`` and helper modules of the tests folder, the root
    conftest.py, and small text data files the tests may read (each under 64 KiB).

    For a ``src/`` layout the root conftest.py (the repository's own, if any, after our two
    lines) puts the package's parent folder on ``sys.path``: the sandbox runs pytest with the
    task folder as rootdir and only that folder importable.
    """
    out: dict[str, str] = {}
    root = (repo / "conftest.py").read_text(encoding="utf-8") if (repo / "conftest.py").is_file() else ""
    parent = package_dir.resolve().parent.relative_to(repo.resolve()).as_posix()
    if parent != ".":
        root = _SRC_CONFTEST.format(parent=parent) + root
    if root:
        out["conftest.py"] = root
    for path in sorted((repo / tests).rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if not path.is_file() or "__pycache__" in path.parts or any(p.startswith(".") for p in path.relative_to(repo).parts):
            continue
        is_test = path.suffix == ".py" and (path.name.startswith("test_") or path.stem.endswith("_test"))
        if is_test or path.stat().st_size > _DATA_LIMIT:
            continue
        try:
            out[rel] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
    return out


def _module_name(path: str, pkg_rel: str) -> str:
    """``pkg/sub/mod.py`` → ``sub.mod``; a package's ``__init__.py`` → the package's own name."""
    parts = path[len(pkg_rel) + 1: -3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) or pkg_rel.rsplit("/", 1)[-1]


def _hidden_name(path: str) -> str:
    folder, _, name = path.rpartition("/")
    name = name[:-3] + "_hidden.py" if name.startswith("test") else "hidden_" + name
    return f"{folder}/{name}" if folder else name


def _indent(text: str) -> str:
    return "".join("    " + line if line.strip() else line for line in text.splitlines(keepends=True))


def _hash(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def _git_head(repo: Path) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""
