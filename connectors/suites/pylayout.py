"""Where a pytest repository's package and tests are: the package folder (flat or ``src/`` layout),
the tests folder, ``exclude:`` globs written as import paths, and errors that say what was found
instead (the packages present, the folders holding test files). A single-module library
(``six.py``) is its own package: the file is the one target module."""

from __future__ import annotations

from pathlib import Path

from connectors.suites.pysource import ModuleInfo
from sdk.errors import SourceError


def locate_package(repo: Path, package: str, tests: str) -> Path:
    """The folder of ``package`` under ``repo`` or ``repo/src``, or its module file there (a
    single-module library, ``repo/six.py``: the file is returned, and is the only target module).

    Raises:
        SourceError: ``repo`` is not a folder, the package or the tests folder is missing (the fix
            lists the packages / test folders that are there), or ``package`` names a module inside
            a package (``pkg.mod``).
    """
    if not repo.is_dir():
        raise SourceError(f"repository folder {repo} does not exist", "set `path:` to the folder that holds the package and its tests")
    rel = package.replace(".", "/")
    for candidate in (repo / rel, repo / "src" / rel, repo / f"{rel}.py", repo / "src" / f"{rel}.py"):
        if candidate.is_dir() or (candidate.suffix == ".py" and candidate.is_file() and "/" not in rel):
            break
    else:
        _refuse_nested_module(repo, rel)
        raise SourceError(f"package {package!r} is neither {repo / rel} nor {repo / 'src' / rel}",
                          _root_fix(repo, rel, tests) or "set `package:` to the import name of a package folder or "
                          "a module (`mylib.py`) under `path` (or under path/src)" + _hint("packages found there", _package_names(repo)))
    if not (repo / tests).is_dir():
        raise SourceError(f"tests folder {repo / tests} does not exist" + doctest_note(candidate),
                          _root_fix(repo, rel, tests) or "set `tests:` to the folder (relative to `path`) that "
                          "holds the test files" + _hint("folders holding test files", _test_folders(repo)))
    return candidate


def _root_fix(repo: Path, rel: str, tests: str) -> str:
    """When ``path`` points inside the repository (its ``src/`` or the package folder itself) and a folder
    up to 3 levels above holds both the package and the tests: the fix naming that folder; else ``""``."""
    for root in list(repo.resolve().parents)[:3]:
        if ((root / rel).is_dir() or (root / "src" / rel).is_dir()) and (root / tests).is_dir():
            return (f"set `path:` to {root} (the repository root holding both the package and `{tests}`; "
                    "a src/ layout is found from there by itself), not a folder inside it")
    return ""

def _refuse_nested_module(repo: Path, rel: str) -> None:
    """A module inside a package (``package: pkg.mod`` naming ``pkg/mod.py``) is not a library: say to
    name the package. A single-module library (``mylib.py`` at ``path`` or ``path/src``) is supported."""
    for module in (repo / f"{rel}.py", repo / "src" / f"{rel}.py"):
        if module.is_file():
            top = rel.split("/")[0]
            raise SourceError(f"{module} is a module inside the package {top!r}, not a library of its own",
                              f"set `package: {top}` (the import name of the top-level package or module; "
                              "`exclude:` leaves out the modules you do not want as tasks)")


def top_name(package_dir: Path) -> str:
    """The import name of the package folder or single module ``package_dir`` (``six.py`` → ``six``)."""
    return package_dir.name.removesuffix(".py") if package_dir.is_file() else package_dir.name


def traced_path(pkg_rel: str, path: str) -> str:
    """A traced call's repository path: ``path`` is relative to the package folder ``pkg_rel``, or
    ``""`` when the package is a single module (``pkg_rel`` is then the module's own path)."""
    return f"{pkg_rel}/{path}" if path else pkg_rel


def exclude_globs(exclude: list[str], repo: Path, package_dir: Path) -> list[str]:
    """``exclude:`` as written, plus each glob under ``src/`` in a src layout: targets are located by
    their repository path (``src/pkg/mod.py::func``), users write the import path (``pkg/mod.py::func``)."""
    parent = package_dir.resolve().relative_to(repo.resolve()).parts[0]
    if parent != "src" or not (repo / "src").is_dir():
        return list(exclude)
    return list(exclude) + [f"src/{g}" for g in exclude if not g.startswith(("src/", "*"))]


def _hint(what: str, names: list[str]) -> str:
    """``"; <what>: a, b"`` when there are names to suggest, else nothing."""
    return f"; {what}: {', '.join(names[:8])}" if names else ""


def _package_names(repo: Path) -> list[str]:
    """Import names of the packages (folders with ``__init__.py``) and modules (``*.py`` but setup,
    conftest, noxfile and test files) at ``repo`` and ``repo/src``."""
    bases = [b for b in (repo, repo / "src") if b.is_dir()]
    folders = {p.parent.name for b in bases for p in b.glob("*/__init__.py")}
    modules = {p.stem for b in bases for p in b.glob("*.py") if p.stem not in ("setup", "conftest", "noxfile")
               and not p.stem.startswith("test_") and not p.stem.endswith("_test")}
    return sorted(n for n in folders | modules if n.isidentifier())


def _test_folders(repo: Path) -> list[str]:
    """``tests:`` values that would find test files: ``.`` when ``test_*.py`` sit at the root, and
    the top-level folders holding some."""
    def has_tests(folder: Path) -> bool:
        return any(folder.glob("test_*.py")) or any(folder.glob("*_test.py"))
    found = ["."] if has_tests(repo) else []
    return found + [d.name for d in sorted(repo.iterdir())
                    if d.is_dir() and not d.name.startswith(".") and has_tests(d)]


def target_modules(modules: list[ModuleInfo], repo: Path, tests: str, package_dir: Path,
                   test_files: set[str]) -> list[ModuleInfo]:
    """The package modules that may hold targets: never a test module (a collected test file,
    ``test_*.py``, ``*_test.py``, ``conftest.py``), nor anything under a tests folder inside the
    package (``toolz/tests``). A tests folder that *is* the package or holds it (iso8601's
    ``iso8601/test_iso8601.py`` beside its code: ``tests: iso8601``) only drops the test modules.
    """
    tests_dir, pkg = (repo / tests).resolve(), package_dir.resolve()
    inside = "" if pkg.is_relative_to(tests_dir) else tests_dir.relative_to(repo.resolve()).as_posix() + "/"

    def is_test(path: str) -> bool:
        name = path.rsplit("/", 1)[-1]
        return (path in test_files or name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
                or bool(inside) and path.startswith(inside))
    return [m for m in modules if not is_test(m.path)]


def doctest_note(package_dir: Path) -> str:
    """For a library tested by doctests only: ``"; <package> has N doctest examples ..."`` saying they
    are not verifiers and how to turn them into tests; ``""`` when its modules hold no ``>>>``."""
    files = [package_dir] if package_dir.is_file() else sorted(package_dir.rglob("*.py"))
    n = sum(line.lstrip().startswith(">>> ") for f in files
            for line in f.read_text(encoding="utf-8", errors="replace").splitlines())
    if not n:
        return ""
    return (f"; {package_dir.name} has {n} doctest examples (>>>), but doctests are not verifiers: write each "
            "as a pytest test (`>>> double(2)` / `4` becomes `def test_double(): assert double(2) == 4` in "
            "tests/test_<module>.py) and point `tests:` there")
