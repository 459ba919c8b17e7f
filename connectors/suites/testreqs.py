"""Find a repository's test requirements (issue 13, item 2).

Looked for in this order; the first place that names any requirement wins (``where`` says which):

1. ``pyproject.toml`` ``[dependency-groups]`` ``test``/``tests``/``testing`` (PEP 735,
   ``{include-group = ...}`` followed);
2. ``pyproject.toml`` ``[project.optional-dependencies]`` ``test``/``tests``/``testing``, and
   ``setup.cfg`` ``[options.extras_require]`` the same keys (``name[extra]`` of the project
   itself expanded);
3. ``requirements*test*.txt``, ``test*requirements*.txt``, ``requirements/test*.txt``,
   ``tests/requirements*.txt`` (``-r`` includes followed, other options dropped);
4. ``tox.ini`` ``[testenv]`` ``deps``; 5. ``noxfile.py`` string arguments of ``session.install``.

Tools that are not test dependencies are dropped (pytest itself, which the sandbox provides;
coverage, xdist, linters, type checkers, docs tools), as is the project itself.
"""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from pathlib import Path

KEYS = ("test", "tests", "testing")
SKIP = {"pytest", "pytest-cov", "coverage", "pytest-xdist", "pytest-randomly", "pytest-sugar", "pytest-codspeed",
        "pytest-benchmark", "pytest-mypy-plugins", "pytest-mypy", "pytest-flake8", "tox", "nox", "mypy", "ruff",
        "flake8", "black", "isort", "pylint", "pre-commit", "pre-commit-uv", "codecov", "sphinx", "pyright"}
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[([^\]]*)\])?")


def find_test_requirements(repo: Path, project: str = "") -> tuple[list[str], str]:
    """``(requirements, where)``: the repository's test requirements and the file they came from
    (``""`` when none were found). ``project``: the repository's own distribution name."""
    pyproject = _toml(repo / "pyproject.toml")
    extras = {**_cfg_extras(repo / "setup.cfg"), **pyproject.get("project", {}).get("optional-dependencies", {})}
    groups = pyproject.get("dependency-groups", {})
    finders = [
        ("pyproject.toml [dependency-groups]", lambda: [r for k in KEYS for r in _group(groups, k, set())]),
        ("pyproject.toml/setup.cfg test extras", lambda: [r for k in KEYS for r in extras.get(k, [])]),
        ("requirements files", lambda: _requirement_files(repo)),
        ("tox.ini [testenv] deps", lambda: _tox(repo / "tox.ini", extras)),
        ("noxfile.py session.install", lambda: _nox(repo / "noxfile.py")),
    ]
    for where, find in finders:
        reqs = _clean(find(), extras, project)
        if reqs:
            return reqs, where
    return [], ""


def _clean(reqs: list[str], extras: dict[str, list[str]], project: str, depth: int = 0) -> list[str]:
    out: list[str] = []
    own = _norm(project)
    for req in reqs:
        req = req.split(" #")[0].strip()
        m = _NAME.match(req)
        if not req or req.startswith(("-", ".", "/")) or "{" in req or not m:
            continue
        name = _norm(m.group(1))
        if own and name == own:
            if m.group(3) and depth < 3:
                out += _clean([r for e in m.group(3).split(",") for r in extras.get(e.strip(), [])], extras, project, depth + 1)
            continue
        if name not in SKIP and not name.startswith(("sphinx", "types-")):
            out.append(req)
    return list(dict.fromkeys(out))


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def _group(groups: dict, key: str, seen: set[str]) -> list[str]:
    out: list[str] = []
    for item in groups.get(key, []) if key not in seen else []:
        if isinstance(item, dict) and "include-group" in item:
            out += _group(groups, item["include-group"], seen | {key})
        elif isinstance(item, str):
            out.append(item)
    return out


def _cfg_extras(path: Path) -> dict[str, list[str]]:
    cfg = configparser.ConfigParser(interpolation=None)
    try:
        cfg.read(path, encoding="utf-8")
    except configparser.Error:
        return {}
    if not cfg.has_section("options.extras_require"):
        return {}
    return {k: [line for line in v.splitlines() if line.strip()] for k, v in cfg["options.extras_require"].items()}


def _requirement_files(repo: Path) -> list[str]:
    patterns = ("requirements*test*.txt", "test*requirements*.txt", "requirements/test*.txt", "tests/requirements*.txt")
    files = sorted({p for pat in patterns for p in repo.glob(pat) if p.is_file()})
    return [r for f in files for r in _read_requirements(f, 0)]


def _read_requirements(path: Path, depth: int) -> list[str]:
    out: list[str] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.split("#")[0].strip()
        if line.startswith(("-r ", "--requirement ")) and depth < 5:
            inc = path.parent / line.split(None, 1)[1].strip()
            out += _read_requirements(inc, depth + 1) if inc.is_file() else []
        elif line and not line.startswith("-"):
            out.append(line)
    return out


def _tox(path: Path, extras: dict[str, list[str]]) -> list[str]:
    cfg = configparser.ConfigParser(interpolation=None)
    try:
        cfg.read(path, encoding="utf-8")
    except configparser.Error:
        return []
    if not cfg.has_section("testenv"):
        return []
    deps = [line.strip() for line in cfg.get("testenv", "deps", fallback="").splitlines()]
    wanted = [e.strip() for e in cfg.get("testenv", "extras", fallback="").replace(",", "\n").splitlines()]
    deps = [d.split(":", 1)[1].strip() if re.match(r"^[\w,-]+:\s", d) else d for d in deps]  # factor-conditional
    return deps + [r for e in wanted if e in extras for r in extras[e]]


def _nox(path: Path) -> list[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8")) if path.is_file() else None
    except SyntaxError:
        return []
    out: list[str] = []
    for node in ast.walk(tree) if tree else []:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "install":
            out += [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return out
