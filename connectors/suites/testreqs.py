"""Find a repository's test requirements (issue 13, item 2).

Looked for in this order; the first place that names any requirement wins (``where`` says which),
and a declared test group or extra (1, 2) wins even when it names only tools such as pytest and
coverage (webcolors 25.10.0: its noxfile's docs and lint sessions are no test requirements):

1. ``pyproject.toml`` ``[dependency-groups]`` ``test``/``tests``/``testing`` (PEP 735,
   ``{include-group = ...}`` followed);
2. ``pyproject.toml`` ``[project.optional-dependencies]`` ``test``/``tests``/``testing``, and
   ``setup.cfg`` ``[options.extras_require]`` the same keys (``name[extra]`` of the project
   itself expanded);
3. ``requirements*test*.txt``, ``test*requirements*.txt``, ``requirements/test*.txt``,
   ``tests/requirements*.txt`` (``-r`` includes followed, other options dropped);
4. ``tox.ini`` ``[testenv]`` ``deps``; 5. ``noxfile.py`` string arguments of ``session.install`` in
   its test sessions (named or tagged ``test``; ``-r FILE`` read).

Tools that are not test dependencies are dropped (pytest itself, which the sandbox provides;
coverage, xdist, linters, type checkers, docs tools), as is the project itself.

:func:`import_failures` and :func:`declare_fix` turn a test file that failed at import for a
missing module into advice naming those places and the ``test_requirements`` option.
"""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from pathlib import Path
from typing import Callable, Sequence

from sdk.sandbox.deps import missing_modules

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
    for i, (where, find) in enumerate(finders):
        found = find()
        reqs = _clean(found, extras, project)
        if reqs or (found and i < 2):   # a declared test group or extra is the whole list, tools only or not
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
    """String arguments of ``session.install`` in the *test* sessions of a noxfile (a session whose
    function name or ``tags`` name tests: docs, lint and packaging sessions install no test helper);
    ``-r FILE`` reads that requirements file, other options and their values are dropped."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8")) if path.is_file() else None
    except SyntaxError:
        return []
    out: list[str] = []
    for fn in tree.body if tree else []:
        if not isinstance(fn, ast.FunctionDef) or not any("session" in ast.unparse(d) for d in fn.decorator_list):
            continue
        if "test" not in fn.name.lower() and not any("test" in ast.unparse(d).split("tags", 1)[-1]
                                                     for d in fn.decorator_list if "tags" in ast.unparse(d)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "install":
                out += _install_args([a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)],
                                     path.parent)
    return out


def _install_args(args: list[str], root: Path) -> list[str]:
    """``pip install`` arguments as requirements: ``-r FILE`` read, other options (and ``-c``/``-e``'s
    value) dropped."""
    out, skip = [], False
    for i, arg in enumerate(args):
        if skip:
            skip = False
        elif arg in ("-r", "--requirement") and i + 1 < len(args):
            inc, skip = root / args[i + 1], True
            out += _read_requirements(inc, 1) if inc.is_file() else []
        elif arg in ("-c", "--constraint", "-e", "--editable"):
            skip = True
        elif not arg.startswith("-"):
            out.append(arg)
    return out


def import_failures(errors: Sequence[str]) -> dict[str, list[str]]:
    """Test files that failed at import for a missing module, each with the modules named:
    ``{"tests/test_clock.py": ["freezegun"]}`` from collection errors ``"<nodeid>: <report>"``."""
    out: dict[str, list[str]] = {}
    for err in errors:
        modules = missing_modules(err)
        if modules:
            known = out.setdefault(err.split(": ", 1)[0], [])
            known.extend(m for m in modules if m not in known)
    return out


def declare_fix(modules: Sequence[str]) -> str:
    """How to give the tests the ``modules`` they import and the sandbox lacks: the ``test_requirements``
    option, or the places :func:`find_test_requirements` reads by itself."""
    names = ", ".join(repr(m) for m in modules)
    return (f"declare the package(s) providing {names} as test requirements: the source's `test_requirements:` "
            f"option (e.g. --set sources.0.options.test_requirements='[{modules[0]}]'; the pip name can differ "
            "from the module name), or where they are read automatically when the option is unset: pyproject.toml "
            "[dependency-groups] or test extras ([project.optional-dependencies] test/tests/testing), "
            "requirements*test*.txt, tox.ini [testenv] deps, noxfile.py session.install")


def failure_advice(nodeid: str, detail: str) -> str:
    """``"; first: NODEID: DETAIL"`` for a quarantine reason of tests that fail on the original code,
    plus a ``fix:`` line when the cause is an ``ImportError`` the code raised itself (an optional
    dependency it asks for by name, e.g. validators' ``Do `pip install validators[crypto-eth-addresses]```);
    ``""`` without a detail."""
    if not detail:
        return ""
    text = f"; first: {nodeid}: {detail[:300]}{'…' if len(detail) > 300 else ''}"
    if detail.startswith(("ImportError", "ModuleNotFoundError")):
        text += ("\nfix: the code under test needs a package the sandbox lacks: name it in the source's "
                 "`test_requirements:` option (with the suite's own requirements, which the option replaces), "
                 "or leave these tests out with `exclude:`")
    return text


def collection_warning(errors: Sequence[str]) -> str:
    """One warning for the test files pytest could not collect (``"<nodeid>: <report>"`` each): their
    tests never ran, so they cover nothing even where other tests keep the functions as tasks; the
    files with the missing modules they import and a ``fix:`` line. ``""`` without errors."""
    if not errors:
        return ""
    failed = import_failures(errors)
    parts = [f"{f} (No module named {', '.join(map(repr, ms))})" for f, ms in failed.items()]
    for err in errors:
        name, _, report = err.partition(": ")
        if name not in failed:
            parts.append(f"{name} ({(report.strip().splitlines() or ['error'])[-1][:200]})")
    modules = list(dict.fromkeys(m for ms in failed.values() for m in ms))
    fix = declare_fix(modules) if modules else "fix those files' collection errors (until then only their own tests are left out)"
    return (f"{len(errors)} test file(s) could not be collected, so their tests never ran: "
            f"{'; '.join(parts[:5])}{' …' if len(parts) > 5 else ''}\nfix: {fix}")


def may_cover(repo: Path, path: str, qualname: str) -> Callable[[str], bool]:
    """For :func:`import_advice`: whether a test file (relative to ``repo``) that failed at import names
    the function ``qualname`` of ``path`` (``pkg/mod.py``) or its module, so its tests may have called it;
    True for a file that cannot be read."""
    module = path.rsplit("/", 2)[-2] if path.endswith("/__init__.py") else Path(path).stem
    words = [re.compile(rf"\b{re.escape(n)}\b") for n in (qualname.split(".")[0], module)]

    def check(test_file: str) -> bool:
        try:
            text = (repo / test_file).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return True
        return any(w.search(text) for w in words)
    return check


def import_advice(errors: Sequence[str], may_cover: Callable[[str], bool] = lambda _file: True) -> str:
    """For a function no test calls: the test files that failed at import for a missing module (their
    tests never ran, so may call it) and a ``fix:`` line (:func:`declare_fix`); ``""`` when none did.
    ``may_cover(file)`` keeps only the files that could have covered the function (the pytest source:
    those naming it or its module), so a function nothing tests is not blamed on another file's import."""
    failed = {f: ms for f, ms in import_failures(errors).items() if may_cover(f)}
    if not failed:
        return ""
    files = ", ".join(f"{f} (No module named {', '.join(map(repr, ms))})" for f, ms in list(failed.items())[:3])
    modules = list(dict.fromkeys(m for ms in failed.values() for m in ms))
    return (f"; test file(s) {files}{' …' if len(failed) > 3 else ''} failed at import, so their tests never "
            f"ran\nfix: {declare_fix(modules)}")
