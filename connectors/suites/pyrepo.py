"""The files of a Python repository that travel with its tasks (read once per source).

Used by :mod:`connectors.suites.pytest_suite`:

* :func:`read_package`: every module of the package under test (the targets come from these);
* :func:`package_data`: small text data files inside the package (a word list the code opens
  beside its module, e.g. validators' ``_tld.txt``);
* :func:`support_files`: conftest files, test helpers and small data files of the tests folder;
* :func:`sibling_packages`: other top-level packages or modules next to the package that the
  tests or the package import (an sdist can ship an alias package, e.g. toolz's ``tlz`` or
  attrs' ``attr``), carried whole, never targets;
* :func:`dist_info`: a minimal ``<name>-<version>.dist-info`` at the task's root (always on the
  sandbox's ``sys.path``, whatever the layout), so
  ``importlib.metadata.version(name)`` works in the sandbox as if the package were installed
  (name and version from ``PKG-INFO``, else ``pyproject.toml``/``setup.cfg``, else the
  package name and ``0.0.0``).
"""

from __future__ import annotations

import ast
import configparser
import email.parser
import fnmatch
import logging
import re
import tokenize
import tomllib
from collections.abc import Sequence
from pathlib import Path

from connectors.suites.pylayout import top_name
from connectors.suites.pysource import ModuleInfo, scan_module
from sdk.errors import SourceError

DATA_LIMIT = 64 * 1024
NAMED_DATA_LIMIT = 1024 * 1024
log = logging.getLogger("tuneloop.connectors.repo")

SRC_CONFTEST = ("import os as _tl_os, sys as _tl_sys  # added by tuneloop: the package lives under {parent}/\n"
                "_tl_sys.path.insert(0, _tl_os.path.join(_tl_os.path.dirname(_tl_os.path.abspath(__file__)), {parent!r}))\n")


def outside(repo: Path, path: Path) -> bool:
    """``path`` (a file found in ``repo``) resolves to a place outside ``repo`` (a symlink to a key,
    another checkout, ``/etc``...): it is never read, and a warning names it."""
    target = path.resolve()
    if target.is_relative_to(repo.resolve()):
        return False
    log.warning("%s is a link to %s, outside the repository: left out (copy the file in if the "
                "tests need it)", path.relative_to(repo).as_posix() if path.is_relative_to(repo) else path, target)
    return True


def read_package(repo: Path, package_dir: Path, exclude: Sequence[str] = ()) -> tuple[list[ModuleInfo], dict[str, str]]:
    """Every ``.py`` file of the package (``relpath -> text``) and the modules that parse;
    ``package_dir`` may be a single module file (that file alone).

    A module matching an ``exclude`` glob is never a target: one that is not text or does not
    parse is left out (not text) or carried without being scanned (does not parse).

    Raises:
        SourceError: a module is not text in its declared encoding or does not parse (the message
            names it and says how to exclude it).
    """
    files: dict[str, str] = {}
    modules: list[ModuleInfo] = []
    for path in [package_dir] if package_dir.is_file() else sorted(package_dir.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(repo).as_posix()
        if outside(repo, path):
            continue
        excluded = any(fnmatch.fnmatch(rel, g) for g in exclude)
        fix = f"fix the file, or add '{rel}' to the source's `exclude:` option"
        try:
            text = _source_text(path)
        except (UnicodeDecodeError, SyntaxError, LookupError, OSError) as exc:
            if excluded:
                continue
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise SourceError(f"{rel} cannot be read as Python source: {why}", fix) from exc
        files[rel] = text
        try:
            modules.append(scan_module(text, rel))
        except SyntaxError as exc:
            if not excluded:
                raise SourceError(f"{rel} does not parse: {exc}", fix) from exc
    return modules, files


def _source_text(path: Path) -> str:
    """A module's text in the encoding it declares (PEP 263 cookie or BOM, else UTF-8)."""
    with tokenize.open(path) as fh:
        return fh.read()


def package_data(repo: Path, package_dir: Path) -> dict[str, str]:
    """``relpath -> text`` of the package's own data files: every non-``.py`` file under
    ``package_dir`` that is UTF-8 text under 64 KiB, or under 1 MiB when a module of the package
    names it in a string literal (text_unidecode's 311 KB ``data.bin``, read with
    ``pkgutil.get_data``); hidden and ``__pycache__`` paths skipped. A named file left out (too
    large, not UTF-8) is named in a warning.

    Without them the package's code fails in the sandbox where it reads one beside its module
    (``Path(__file__).parent / "_tld.txt"``: ``FileNotFoundError``), and the reference of every
    function that reads it is quarantined as ``reference_fails``.
    """
    out: dict[str, str] = {}
    if package_dir.is_file():  # a single-module library has no data files of its own
        return out
    code = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in package_dir.rglob("*.py")
                     if "__pycache__" not in p.parts and not outside(repo, p))
    for path in sorted(package_dir.rglob("*")):
        parts = path.relative_to(package_dir).parts
        if (not path.is_file() or path.suffix in (".py", ".pyc", ".pyo") or "__pycache__" in parts
                or any(p.startswith(".") for p in parts) or outside(repo, path)):
            continue
        named = f"'{path.name}'" in code or f'"{path.name}"' in code
        size = path.stat().st_size
        if size > (NAMED_DATA_LIMIT if named else DATA_LIMIT):
            if named:
                log.warning("%s (%d KiB) is named by the package's code but over %d KiB: left out, so code "
                            "reading it fails in the sandbox", path.relative_to(repo).as_posix(), size >> 10,
                            NAMED_DATA_LIMIT >> 10)
            continue
        try:  # newline="": a data file's "\r" and "\r\n" stay as they are (text_unidecode's table maps "\r")
            with path.open(encoding="utf-8", newline="") as fh:
                out[path.relative_to(repo).as_posix()] = fh.read()
        except UnicodeDecodeError:
            if named:
                log.warning("%s is named by the package's code but is not UTF-8 text: left out (tasks carry text "
                            "files only), so code reading it fails in the sandbox", path.relative_to(repo).as_posix())
    return out


def support_files(repo: Path, tests: str, package_dir: Path) -> dict[str, str]:
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
        root = SRC_CONFTEST.format(parent=parent) + root
    if root:
        out["conftest.py"] = root
    for path in sorted((repo / tests).rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if not path.is_file() or "__pycache__" in path.parts or any(p.startswith(".") for p in path.relative_to(repo).parts):
            continue
        is_test = path.suffix == ".py" and (path.name.startswith("test_") or path.stem.endswith("_test"))
        if is_test or path.stat().st_size > DATA_LIMIT or outside(repo, path):
            continue
        try:
            out[rel] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
    return out


def imported_roots(texts: list[str]) -> set[str]:
    """Top-level names of every absolute import in ``texts`` (sources that do not parse are skipped)."""
    out: set[str] = set()
    for text in texts:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                out |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                out.add(node.module.split(".")[0])
    return out


def sibling_packages(repo: Path, package_dir: Path, tests: str, imported: set[str]) -> dict[str, str]:
    """``relpath -> text`` of the top-level packages and modules beside ``package_dir`` that
    ``imported`` names (the tests folder, ``setup.py``, ``conftest.py`` and ``noxfile.py`` excluded)."""
    parent = package_dir.parent
    tests_dir = (repo / tests).resolve()
    out: dict[str, str] = {}
    for name in sorted(imported - {top_name(package_dir), "setup", "conftest", "noxfile", "tests", "test"}):
        folder, module = parent / name, parent / f"{name}.py"
        if folder.is_dir() and (folder / "__init__.py").is_file() and folder.resolve() != tests_dir:
            for path in sorted(folder.rglob("*.py")):
                if "__pycache__" not in path.parts:
                    out[path.relative_to(repo).as_posix()] = path.read_text(encoding="utf-8")
        elif module.is_file():
            out[module.relative_to(repo).as_posix()] = module.read_text(encoding="utf-8")
    return out


def dist_info(repo: Path, package_dir: Path, top_level: list[str]) -> dict[str, str]:
    """``relpath -> text`` of a minimal ``.dist-info`` folder at the task root (see module doc)."""
    name, version = _name_version(repo)
    name = name or top_name(package_dir)
    prefix = f"{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info/"
    return {f"{prefix}METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
            f"{prefix}top_level.txt": "".join(t + "\n" for t in sorted(top_level)),
            f"{prefix}INSTALLER": "tuneloop\n"}


def project_name(repo: Path) -> str:
    """The distribution name the repository declares, or ``""``."""
    return _name_version(repo)[0]


def _name_version(repo: Path) -> tuple[str, str]:
    if (repo / "PKG-INFO").is_file():
        meta = email.parser.Parser().parsestr((repo / "PKG-INFO").read_text(encoding="utf-8", errors="replace"),
                                              headersonly=True)
        if meta.get("Name"):
            return meta["Name"], meta.get("Version") or "0.0.0"
    name, version = "", ""
    if (repo / "pyproject.toml").is_file():
        try:
            project = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
        except tomllib.TOMLDecodeError:
            project = {}
        name, version = str(project.get("name", "")), str(project.get("version", ""))
    if not name and (repo / "setup.cfg").is_file():
        cfg = configparser.ConfigParser(interpolation=None)
        try:
            cfg.read(repo / "setup.cfg", encoding="utf-8")
            name = cfg.get("metadata", "name", fallback="")
            version = version or cfg.get("metadata", "version", fallback="")
        except configparser.Error:
            pass
    if not re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", version or ""):
        version = "0.0.0"  # attr:/file: references and dynamic versions are not evaluated
    return name, version
