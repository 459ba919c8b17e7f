"""Where a pytest repository's package and tests are: the package folder (flat or ``src/`` layout),
the tests folder, ``exclude:`` globs written as import paths, and errors that say what was found
instead (the packages present, the folders holding test files, a single-module library)."""

from __future__ import annotations

from pathlib import Path

from sdk.errors import SourceError


def locate_package(repo: Path, package: str, tests: str) -> Path:
    """The folder of ``package`` under ``repo`` or ``repo/src``.

    Raises:
        SourceError: ``repo`` is not a folder, the package or the tests folder is missing (the fix
            lists the packages / test folders that are there), or the library is a single module.
    """
    if not repo.is_dir():
        raise SourceError(f"repository folder {repo} does not exist", "set `path:` to the folder that holds the package and its tests")
    rel = package.replace(".", "/")
    for candidate in (repo / rel, repo / "src" / rel):
        if candidate.is_dir():
            break
    else:
        _refuse_single_module(repo, rel)
        raise SourceError(f"package {package!r} is neither {repo / rel} nor {repo / 'src' / rel}",
                          _root_fix(repo, rel, tests) or "set `package:` to the import name of a folder under "
                          "`path` (or under path/src)" + _hint("packages found there", _package_names(repo)))
    if not (repo / tests).is_dir():
        raise SourceError(f"tests folder {repo / tests} does not exist",
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

def _refuse_single_module(repo: Path, rel: str) -> None:
    """A single-module library (``mylib.py``) is not a package folder: say so, and how to make one."""
    for module in (repo / f"{rel}.py", repo / "src" / f"{rel}.py"):
        if module.is_file():
            raise SourceError(f"{module} is a single module, not a package folder: the pytest source needs a "
                              "package (a folder with __init__.py)",
                              f"in a copy of the repository, move {module.name} to {rel}/__init__.py "
                              "(imports of it stay the same)")


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
    """Import names of the packages (folders with ``__init__.py``) at ``repo`` and ``repo/src``."""
    return sorted(p.parent.name for base in (repo, repo / "src") if base.is_dir()
                  for p in base.glob("*/__init__.py") if p.parent.name.isidentifier())


def _test_folders(repo: Path) -> list[str]:
    """``tests:`` values that would find test files: ``.`` when ``test_*.py`` sit at the root, and
    the top-level folders holding some."""
    def has_tests(folder: Path) -> bool:
        return any(folder.glob("test_*.py")) or any(folder.glob("*_test.py"))
    found = ["."] if has_tests(repo) else []
    return found + [d.name for d in sorted(repo.iterdir())
                    if d.is_dir() and not d.name.startswith(".") and has_tests(d)]
