"""Where a JUnit case's test file is, and which source file it tests, from names and repository layout.

Many reports give no ``file`` attribute: pytest's default ``junit_family=xunit2``, JUnit 5's
console launcher, go-junit-report, jest-junit without ``addFileAttribute`` (field case J11).
The file is then found from the case's class name and the conventions of each language:

* Python: ``classname="tests.test_strutils"`` (or ``tests.test_strutils.TestSplit``) → the
  longest dotted prefix that is a ``.py`` file (also under ``src/``), else the one file of that
  name in the repository;
* Java (and Kotlin): ``com.acme.CalcTest`` / ``CalcTest$Nested`` → ``com/acme/CalcTest.java`` under
  ``src/test/java`` (Maven/Gradle) or anywhere, else the one ``CalcTest.java``;
* Go: the classname is the package's import path → the ``*_test.go`` file that declares
  ``func TestName(`` (a subtest ``TestName/case`` uses its parent), in the directory whose
  path the import path ends with when several do;
* JavaScript/TypeScript: a suite or class name that is itself a path, else the one
  ``*.test.*``/``*.spec.*``/``__tests__`` file that contains the test's title.

Each ``*_target`` maps a test file to the source file it tests: ``tests/test_x.py`` → ``x.py``,
``CalcTest.java`` → ``Calc.java`` (``src/main`` first), ``calc_test.go`` → ``calc.go``,
``calc.test.js`` → ``calc.js``. Every lookup returns None rather than guess between candidates.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from connectors.suites.junit import TestCaseRecord
from connectors.suites.junit_repair import python_target
from sdk.tasks.records import Language

_SKIP = {"__pycache__", "node_modules", "site-packages", "venv", ".venv", "target", "build", "dist", ".git"}
_JS_TEST = re.compile(r"(\.(test|spec)\.[cm]?[jt]sx?$)|(/__tests__/.+\.[cm]?[jt]sx?$)")


def _files(repo: Path, pattern: str) -> list[str]:
    """Repository-relative paths matching ``pattern`` outside caches, virtualenvs and build output."""
    return _files_cached(repo.resolve(), pattern)


@lru_cache(maxsize=64)
def _files_cached(repo: Path, pattern: str) -> list[str]:
    out = []
    for path in sorted(repo.rglob(pattern)):
        parts = path.relative_to(repo).parts
        if path.is_file() and not (set(parts) & _SKIP) and not any(p.startswith(".") for p in parts[:-1]):
            out.append(path.relative_to(repo).as_posix())
    return out


def _one(found: list[str]) -> str | None:
    return found[0] if len(found) == 1 else None


def _python_file(repo: Path, case: TestCaseRecord) -> str | None:
    parts = [p for p in case.classname.split(".") if p]
    for k in range(len(parts), 0, -1):
        rel = "/".join(parts[:k]) + ".py"
        for root in ("", "src/"):
            if (repo / root / rel).is_file():
                return root + rel
    for k in range(len(parts), 0, -1):  # the rootdir differed: match the module's own name
        found = _one(_files(repo, parts[k - 1] + ".py"))
        if found:
            return found
    return None


def _java_file(repo: Path, case: TestCaseRecord) -> str | None:
    name = case.classname.split("$", 1)[0]
    parts = [p for p in name.split(".") if p]
    for k in range(len(parts), 0, -1):
        for ext in (".java", ".kt"):
            rel = "/".join(parts[:k]) + ext
            for root in ("src/test/java/", "src/test/kotlin/", "src/test/", "test/", "src/", ""):
                if (repo / root / rel).is_file():
                    return root + rel
    for k in range(len(parts), 0, -1):
        found = _one(_files(repo, parts[k - 1] + ".java") + _files(repo, parts[k - 1] + ".kt"))
        if found:
            return found
    return None


def _go_file(repo: Path, case: TestCaseRecord) -> str | None:
    top = case.name.split("/", 1)[0]
    decl = re.compile(rf"^func\s+{re.escape(top)}\s*\(", re.MULTILINE)
    found = [p for p in _files(repo, "*_test.go") if decl.search((repo / p).read_text(encoding="utf-8", errors="replace"))]
    if len(found) > 1:
        pkg = case.classname.strip("/")
        found = [p for p in found if pkg.endswith(str(Path(p).parent.as_posix())) and Path(p).parent.as_posix() != "."]
    return _one(found)


def _js_file(repo: Path, case: TestCaseRecord) -> str | None:
    for name in (case.suite.rsplit("/", 1)[-1], case.suite, case.classname):
        if name and re.search(r"\.[cm]?[jt]sx?$", name) and (repo / name).is_file():
            return name
    tests = [p for ext in ("js", "ts", "jsx", "tsx", "mjs", "cjs") for p in _files(repo, f"*.{ext}") if _JS_TEST.search("/" + p)]
    texts = {p: (repo / p).read_text(encoding="utf-8", errors="replace") for p in tests}
    words = case.name.split()
    for i in range(len(words)):  # jest-junit prefixes the describe blocks: try the title's longest tail first
        title = " ".join(words[i:])
        found = [p for p, text in texts.items() if any(f"{q}{title}{q}" in text for q in ("'", '"', "`"))]
        if found:
            return _one(found)
    return None


_FINDERS: dict[Language, Callable[[Path, TestCaseRecord], str | None]] = {
    Language.PYTHON: _python_file, Language.JAVA: _java_file, Language.GO: _go_file, Language.JAVASCRIPT: _js_file}


def locate_test_file(repo: Path, case: TestCaseRecord, language: Language) -> str | None:
    """The repository-relative test file of ``case``: its ``file`` attribute when that exists, else
    found from its class name and the layout (see the module docstring); None when unknown."""
    if case.file and (repo / case.file).is_file():
        return case.file
    finder = _FINDERS.get(language)
    return finder(repo, case) if finder else None


def java_target(repo: Path, test_file: str) -> str | None:
    """``.../CalcTest.java`` → the ``Calc.java`` under ``src/main`` (same package path first), else the one elsewhere."""
    path = Path(test_file)
    stem = re.sub(r"(Tests?|IT|Spec)$", "", path.stem)
    if not stem or stem == path.stem:
        stem = path.stem[4:] if path.stem.startswith("Test") else ""
    if not stem:
        return None
    mirrored = test_file.replace("/test/", "/main/", 1).replace(path.name, stem + path.suffix)
    if mirrored != test_file and (repo / mirrored).is_file():
        return mirrored
    found = [p for p in _files(repo, stem + path.suffix) if "/test/" not in "/" + p]
    return _one(found)


def go_target(repo: Path, test_file: str) -> str | None:
    """``pkg/calc_test.go`` → ``pkg/calc.go`` when it exists."""
    if not test_file.endswith("_test.go"):
        return None
    target = test_file[: -len("_test.go")] + ".go"
    return target if (repo / target).is_file() else None


def js_target(repo: Path, test_file: str) -> str | None:
    """``calc.test.js`` / ``__tests__/calc.js`` → the one non-test ``calc.js`` (same folder first)."""
    path = Path(test_file)
    base = re.sub(r"\.(test|spec)$", "", path.stem)
    name = base + path.suffix
    for folder in (path.parent, path.parent.parent):
        if (repo / folder / name).is_file() and (folder / name).as_posix() != test_file:
            return (folder / name).as_posix()
    found = [p for p in _files(repo, name) if not _JS_TEST.search("/" + p) and p != test_file]
    return _one(found)


TARGETS: dict[Language, Callable[[Path, str], str | None]] = {
    Language.PYTHON: python_target, Language.JAVA: java_target, Language.GO: go_target, Language.JAVASCRIPT: js_target}


__all__ = ["TARGETS", "go_target", "java_target", "js_target", "locate_test_file"]
