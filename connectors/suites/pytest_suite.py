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
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import Field

from connectors.suites.pyrepo import (dist_info, imported_roots, package_data, project_name, read_package,
                                      sibling_packages, support_files)
from connectors.suites.callsites import doc_lines
from connectors.suites.context import RepoContext, RepoContextOptions
from connectors.suites.pylayout import (doctest_note, exclude_globs, locate_package, target_modules, top_name,
                                        traced_path)
from connectors.suites.pysource import ModuleInfo, PyFunction, TestModule, module_context
from connectors.suites.pytest_collect import SuiteRun, TestItem, run_suite
from connectors.suites.testreqs import (collection_warning, declare_fix, failure_advice, find_test_requirements,
                                       import_advice, import_failures, may_cover)
from sdk.errors import SourceError
from sdk.sandbox.deps import DependencyError, ensure_env, missing_modules
from sdk.sources import SourceOptions, SourceResult, TaskSource
from sdk.tasks.records import Message, Quarantined, Source, Task, UnitTestVerifier

log = logging.getLogger("tuneloop.connectors.pytest")
Unit = tuple[str, str | None, str]  # (test file, class or None, test function)
_USABLE = {"passed"}


class PytestSuiteOptions(SourceOptions):
    """Options of the ``pytest`` source.

    Attributes:
        path: repository folder (relative to the config file).
        package: import name of the package; its folder is ``path/<package>`` or ``path/src/<package>``,
            or a single-module library's file ``path/<package>.py`` (or under ``path/src``).
        tests: tests folder relative to ``path``.
        hidden_fraction: share of each target's covering test functions held back as hidden tests
            (rounded down, at least one test always stays visible); deterministic.
        min_tests: a target needs at least this many usable covering test functions.
        max_tests: at most this many test functions per task (direct callers first).
        repo_context: what of the repository the reference uses is shown under the prompt
            (:class:`connectors.suites.context.RepoContextOptions`: token budget, examples, retriever).
        context: ``signature`` (imports of the names the target uses + header + docstring) or
            ``module`` (the whole module with the target's body removed).
        flaky_reruns: extra runs of the suite to find flaky tests (0: none).
        exclude: globs over module paths (``pkg/_vendor/*``) or locators (``pkg/mod.py::func``).
        underspecified: ``keep`` or ``quarantine`` the private helpers (``_x``) with no docstring or a
            one-line one that no test calls directly: only their callers (shown in the prompt,
            ``repo_context.callers``) say what they must do. Counted as ``underspecified`` either way.
        methods: also make tasks of methods (``entry_point = "Class.method"``; the answer is a ``def`` at
            column 0 that the splicer re-indents into its class). Off by default. Measured on
            tabulate 0.10.0 (2026-12-02): 5 of its 7 tested methods validated; the other 2
            (``JupyterHTMLStr``) are ``reference_fails``, as is every function those HTML tests cover.
            A test that subclasses a solution class fails (a known harness limit).
        timeout_s: wall-clock limit of one run of the whole suite, seconds.
        test_timeout_s: the verifier's limit for one run of a task's tests, seconds; doubled for
            tasks whose tests took long in the traced run (see ``_Builder._timeout``).
        python: interpreter that runs the suite (default: tuneloop's own).
        test_requirements: pip requirements the tests import (``[freezegun]``); None: found in
            the repository (:mod:`connectors.suites.testreqs`); ``[]``: none. Installed once
            into a cached environment used by the traced run and, read-only, by the sandbox.
        pip_args: extra ``pip install`` options for them, e.g. ``[--no-index, --find-links, DIR]``.
    """

    path: str
    package: str
    tests: str = "tests"
    hidden_fraction: float = Field(0.34, ge=0.0, lt=1.0)
    min_tests: int = Field(1, ge=1)
    max_tests: int = Field(12, ge=1)
    context: Literal["signature", "module"] = "signature"
    repo_context: RepoContextOptions = Field(default_factory=RepoContextOptions)  # issue 13 item 4
    flaky_reruns: int = Field(0, ge=0)
    exclude: list[str] = Field(default_factory=list)
    methods: bool = False
    underspecified: Literal["keep", "quarantine"] = "keep"
    timeout_s: float = Field(900.0, gt=0)
    test_timeout_s: float = Field(10.0, gt=0)
    python: str | None = None
    isolate: Literal["auto", "on", "off"] = "auto"  # the suite run in bubblewrap (connectors.suites.isolate)
    test_requirements: list[str] | None = None
    pip_args: list[str] = Field(default_factory=list)


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
        modules, files = read_package(repo, package_dir, exclude_globs(opts.exclude, repo, package_dir))
        files.update(package_data(repo, package_dir))
        files.update(support_files(repo, opts.tests, package_dir))
        test_texts = [p.read_text(encoding="utf-8", errors="replace") for p in sorted((repo / opts.tests).rglob("*.py"))]
        siblings = sibling_packages(repo, package_dir, opts.tests, imported_roots(test_texts + list(files.values())))
        files.update(siblings)
        tops = {top_name(package_dir)} | {p.split("/")[len(package_dir.relative_to(repo).parts) - 1].removesuffix(".py")
                                     for p in siblings}
        meta = dist_info(repo, package_dir, sorted(tops))
        files.update(meta)
        requirements, env = self._requirements(opts, repo)
        run = run_suite(repo, opts.tests, package_dir, reruns=opts.flaky_reruns, timeout_s=opts.timeout_s,
                        python=opts.python, extra_files=meta, isolate=opts.isolate,
                        pythonpath=(str(env),) if env else ())
        items = [i for i in run.items if i.kind == "Function"]
        if not items:
            errors, missing = "\n".join(run.errors[:5]), [m for ms in import_failures(run.errors).values() for m in ms]
            raise SourceError(f"pytest collected no tests in {repo / opts.tests}" + (f":\n{errors}" if errors else "")
                              + doctest_note(package_dir),
                              declare_fix(list(dict.fromkeys(missing))) if missing else
                              "fix the collection errors shown" if errors else
                              "point `tests:` at the folder holding test_*.py files with test functions (none "
                              "was found in these: empty files, or no `test_*` function or `Test*` class)")
        if run.errors:  # those files' tests never ran: said even where other tests keep every function a task
            log.warning("pytest source: %s", collection_warning(run.errors))
        for test_file in {i.path for i in items}:
            files.pop(test_file, None)  # a test module inside the package travels as a (pruned) test, never whole
        builder = _Builder(self, opts, repo, package_dir, files, run, items, _git_head(repo))
        builder.requirements = tuple(requirements)
        modules = target_modules(modules, repo, opts.tests, package_dir, {i.path for i in items})
        for n, info in enumerate(modules, 1):
            builder.add_module(info)
            log.info("pytest source: module %d/%d %s: %d tasks so far", n, len(modules), info.path, len(builder.result_.tasks))
        return builder.result()

    def _requirements(self, opts: PytestSuiteOptions, repo: Path) -> tuple[list[str], Path | None]:
        """The test requirements and their built environment (None without requirements).

        Raises:
            SourceError: pip cannot install them (before any task is built), naming where they came from.
        """
        if opts.test_requirements is not None:
            reqs, where = list(opts.test_requirements), "the source's `test_requirements` option"
        else:
            reqs, where = find_test_requirements(repo, project_name(repo))
            where = f"{repo}: {where}"
        if not reqs:
            return [], None
        log.info("pytest source: test requirements %s (from %s)", reqs, where)
        try:
            return reqs, ensure_env(reqs, pip_args=opts.pip_args)
        except DependencyError as exc:
            raise SourceError(f"the test requirements from {where} cannot be installed: {exc.what}",
                              "set `test_requirements:` to names pip can install (or [] for none), or give "
                              "`pip_args: [--no-index, --find-links, DIR]` for a local wheel folder") from exc

    def _locate(self, opts: PytestSuiteOptions) -> tuple[Path, Path]:
        repo = self.resolve(opts.path)
        return repo, locate_package(repo, opts.package, opts.tests)


class _Builder:
    """Turns traced units and scanned modules into tasks, quarantine and counts."""

    def __init__(self, source: PytestSuiteSource, opts: PytestSuiteOptions, repo: Path, package_dir: Path,
                 files: dict[str, str], run: SuiteRun, items: list[TestItem], commit: str) -> None:
        self.source, self.opts, self.repo, self.files, self.commit = source, opts, repo, files, commit
        self.result_ = SourceResult()
        self.requirements: tuple[str, ...] = ()
        self.counts: dict[str, int] = defaultdict(int)
        self.pkg_rel = pkg_rel = package_dir.resolve().relative_to(repo.resolve()).as_posix()
        self.exclude = exclude_globs(opts.exclude, repo, package_dir)
        self.units: dict[Unit, list[TestItem]] = defaultdict(list)
        self.cover: dict[tuple[str, str], dict[Unit, int]] = defaultdict(dict)
        for item in items:
            self.units[item.unit].append(item)
            for path, qual, direct in item.calls:
                key = (traced_path(pkg_rel, path), qual)
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
        self.run_errors = run.errors

    def add_module(self, info: ModuleInfo) -> None:
        """Turn each function of ``info`` into a task, a quarantine entry or a count."""
        for fn in info.functions:
            self.counts["functions_found"] += 1
            locator = f"{fn.path}::{fn.qualname}"
            if any(fnmatch.fnmatch(fn.path, g) or fnmatch.fnmatch(locator, g) for g in self.exclude):
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
            try:
                self.result_.tasks.append(self._task(info, fn, covering))
            except (SyntaxError, ValueError, OSError) as exc:  # one odd test file costs its tasks, not the source
                tests = ", ".join(sorted({u[0] for u in covering}))
                self._quarantine(fn, f"task build failed: {type(exc).__name__}: {exc} (test files {tests}); "
                                     f"fix that file, or add '{fn.path}::{fn.qualname}' to `exclude:`", covering)

    def _reject(self, fn: PyFunction, covering: dict[Unit, int]) -> str:
        if not covering:
            return "no covering tests: no test of the suite calls it" + import_advice(
                self.run_errors, may_cover(self.repo, fn.path, fn.qualname))
        if fn.ambiguous:
            return "ambiguous definition: the name is defined more than once in its scope"
        broken = sorted("::".join(filter(None, u)) for u, direct in covering.items() if direct and u in self.failing)
        missing = missing_modules(" ".join(i.detail for u in covering if u in self.failing for i in self.units[u]))
        if broken:  # the code disagrees with a test that calls it: the reference would teach the bug
            if missing:  # ... or the test cannot import its helpers here
                return (f"failing tests: {', '.join(broken[:5])}{' …' if len(broken) > 5 else ''} fail or skip on "
                        f"the original code: No module named {', '.join(map(repr, missing))}\nfix: "
                        + declare_fix(missing))
            return (f"failing tests: {', '.join(broken[:5])}{' …' if len(broken) > 5 else ''} fail or skip on the "
                    "original code; fix the code or the test (or add it to `exclude:`)" + self._first_failure(covering))
        usable = [u for u in covering if u not in self.flaky and u not in self.failing]
        if len(usable) >= self.opts.min_tests:
            return self._underspecified(fn, covering, usable)
        if any(u in self.flaky for u in covering):
            return f"flaky tests: {len(usable)} stable covering test(s), need {self.opts.min_tests}"
        if any(u in self.failing for u in covering):
            return (f"failing tests: covering tests fail or skip on the original code; {len(usable)} usable, need "
                    f"{self.opts.min_tests}" + (f"\nfix: {declare_fix(missing)}" if missing else
                                                self._first_failure(covering)))
        return f"too few tests: {len(usable)} covering test(s), need {self.opts.min_tests}"

    def _first_failure(self, covering: dict[Unit, int]) -> str:
        """The first failing covering test with its cause (:func:`failure_advice`); ``""`` when none says why."""
        items = [i for u in sorted(covering, key=_unit_key) if u in self.failing for i in self.units[u] if i.detail]
        return failure_advice(items[0].nodeid, items[0].detail) if items else ""

    def _underspecified(self, fn: PyFunction, covering: dict[Unit, int], usable: list[Unit]) -> str:
        """A private helper with no docstring or a one-line one that no test calls directly: only its
        callers say what it must do. Counted always; quarantined when ``underspecified: quarantine``."""
        if not fn.private or any(covering[u] for u in usable) or (doc_lines(fn.reference, fn.qualname) or 0) > 1:
            return ""
        self.counts["underspecified"] += 1
        if self.opts.underspecified == "keep":
            return ""
        return ("underspecified: a private helper with no docstring or a one-line one, tested only through its "
                "callers\nfix: give it a docstring or a direct test, or set the source option `underspecified: keep`")

    def _quarantine(self, fn: PyFunction, reason: str, covering: dict[Unit, int]) -> None:
        self.counts["quarantined_" + reason.split(":")[0].replace(" ", "_")] += 1
        raw = {"locator": f"{fn.path}::{fn.qualname}", "tests": sorted("::".join(filter(None, u)) for u in covering)}
        self.result_.quarantined.append(Quarantined(reason=reason, raw=raw, source=self._source(fn)))

    def _source(self, fn: PyFunction) -> Source:
        return Source(connector="pytest", uri=str(self.repo), locator=f"{fn.path}::{fn.qualname}", commit=self.commit)

    def _task(self, info: ModuleInfo, fn: PyFunction, covering: dict[Unit, int]) -> Task:
        usable = [u for u in covering if u not in self.flaky and u not in self.failing]
        ranked = sorted(usable, key=lambda u: (-covering[u], _hash(fn.qualname, *map(str, u))))[: self.opts.max_tests]
        # units mix classes and module-level tests: (file, None, f) next to (file, "TestX", f)
        n_hidden = min(int(len(ranked) * self.opts.hidden_fraction + 1e-9), len(ranked) - 1)
        by_hash = sorted(ranked, key=lambda u: _hash("hidden", fn.path, fn.qualname, *map(str, u)))
        hidden_units = sorted(by_hash[:n_hidden], key=_unit_key)
        visible = [u for u in ranked if u not in hidden_units]
        verifier = UnitTestVerifier(
            framework="pytest", files=self.files, target_path=fn.path, entry_point=fn.qualname,
            tests=self._test_files(visible, hidden=False), hidden_tests=self._test_files(hidden_units, hidden=True),
            timeout_s=self._timeout(visible, hidden_units), requirements=self.requirements)
        module = _module_name(info.path, self.pkg_rel)
        return self._repo_context.add(Task(  # repository context: connectors.suites.context (issue 13 item 4)
            domain=f"{self.source.domain}/{module}", prompt=(Message(role="user", content=self._prompt(info, fn)),),
            verifier=verifier, reference=fn.reference, source=self._source(fn),
            metadata={"tests": [i.nodeid for u in visible for i in self.units[u]],
                      "hidden_tests": [i.nodeid for u in hidden_units for i in self.units[u]],
                      "direct_tests": sum(covering[u] for u in ranked)}),
            [i for u in ranked for i in self.units[u]], self.counts)

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

    @cached_property
    def _repo_context(self) -> RepoContext:
        """Adds what the reference uses from the repository to each prompt (issue 13 item 4)."""
        return RepoContext(self.opts.repo_context, self.files, self.pkg_rel)

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


def _module_name(path: str, pkg_rel: str) -> str:
    """``pkg/sub/mod.py`` → ``sub.mod``; a package's ``__init__.py`` → the package's own name; a
    single-module library's module (``pkg_rel`` ``six.py``) → ``six``."""
    parts = path[len(pkg_rel) + 1: -3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(filter(None, parts)) or pkg_rel.rsplit("/", 1)[-1].removesuffix(".py")


def _unit_key(unit: Unit) -> tuple[str, str, str]:
    """Sort key of a unit: module-level tests (class None) before class-based ones, no None compared."""
    return (unit[0], unit[1] or "", unit[2])


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
