"""Test dependencies for the sandbox: one cached, read-only pip environment per requirement set.

A task whose tests import third-party helpers (``freezegun``, ``hypothesis``) carries their
requirement strings (:attr:`ExecRequest.requirements`). They are installed once with
``pip install --target`` into ``<cache>/<key>/`` where ``key`` hashes the sorted requirements
and the installing Python's ``major.minor``; later runs (and other processes) reuse the folder.
The folder is built under a temporary name and renamed into place, so a half-built environment
is never used, and its files are made read-only (0444; folders stay 0755 so the owner can delete the cache).

Inside the sandbox the environment goes at the *end* of ``sys.path`` (after the task's own
files and our runtime copy of pytest), read-only: bubblewrap binds it at :data:`DEPS_MOUNT`, the
process backend passes the host path. Nothing of the caller's own site-packages is added: pip
``--target`` installs every dependency of the requirements into the folder itself.

The cache root is ``$TUNELOOP_DEPS_CACHE``, else ``~/.cache/tuneloop/deps``. When a sandbox uid
cannot traverse it (root's 0700 home), :func:`sandbox_view` copies the environment once per
process into a temporary folder the uid can read.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from sdk.errors import SandboxError

DEPS_MOUNT = "/opt/tuneloop/deps"
_lock = threading.Lock()
_views: dict[str, Path] = {}


class DependencyError(SandboxError):
    """The test requirements could not be installed (unreachable index, unknown name, conflict)."""


def cache_root() -> Path:
    """Where environments are kept: ``$TUNELOOP_DEPS_CACHE`` or ``~/.cache/tuneloop/deps``."""
    return Path(os.environ.get("TUNELOOP_DEPS_CACHE") or Path.home() / ".cache" / "tuneloop" / "deps")


def env_key(requirements: tuple[str, ...] | list[str]) -> str:
    """16 hex chars over the sorted, stripped requirements and this Python's ``major.minor``."""
    body = "\n".join(sorted({r.strip() for r in requirements if r.strip()}))
    tag = f"py{sys.version_info[0]}.{sys.version_info[1]}"
    return hashlib.sha256(f"{tag}\n{body}".encode()).hexdigest()[:16]


def find_env(requirements: tuple[str, ...] | list[str], root: Path | None = None) -> Path | None:
    """The built environment for ``requirements``, or None when it is not built yet."""
    path = (root or cache_root()) / env_key(requirements)
    return path if (path / ".complete").is_file() else None


def ensure_env(requirements: tuple[str, ...] | list[str], *, pip_args: tuple[str, ...] | list[str] = (),
               root: Path | None = None, timeout_s: float = 900.0) -> Path:
    """The environment for ``requirements``, built with pip if it is not cached yet.

    Args:
        requirements: pip requirement strings (``freezegun>=1.2``, markers allowed).
        pip_args: extra ``pip install`` options, e.g. ``["--no-index", "--find-links", DIR]``.
        root: cache root (default :func:`cache_root`).
        timeout_s: wall-clock limit of the pip run, seconds.
    Returns:
        The folder to put on ``sys.path`` (it holds the packages and their ``.dist-info``).
    Raises:
        DependencyError: pip failed (its last lines are in the message) or ran too long.
    """
    reqs = sorted({r.strip() for r in requirements if r.strip()})
    root = root or cache_root()
    with _lock:
        found = find_env(reqs, root)
        if found is not None:
            return found
        root.mkdir(parents=True, exist_ok=True)
        final = root / env_key(reqs)
        tmp = Path(tempfile.mkdtemp(prefix=f".build-{final.name}-", dir=root))
        cmd = [sys.executable, "-m", "pip", "install", "--target", str(tmp), "--no-input",
               "--disable-pip-version-check", "--no-warn-script-location", *pip_args, *reqs]
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_TARGET", "PIP_USER")}
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise DependencyError(f"pip ran longer than {timeout_s:.0f} s installing the test requirements {reqs}",
                                  "check that the package index is reachable, or give a local wheel folder "
                                  "(`pip_args: [--no-index, --find-links, DIR]`)") from exc
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            tail = "\n".join(line for line in (proc.stderr or proc.stdout).splitlines()
                             if line.strip() and not line.startswith(" "))[-1200:]
            raise DependencyError(f"pip could not install the test requirements {reqs}:\n{tail}",
                                  "fix or pin the names in `test_requirements:` (or where they were found), make "
                                  "the index reachable, or point `pip_args` at a local wheel folder")
        return publish_env(tmp, final, reqs)


def publish_env(tmp: Path, final: Path, reqs: list[str]) -> Path:
    """Mark the finished environment ``tmp`` complete (its requirement lines in ``.complete``), make it
    read-only and rename it to ``final``; when another process published ``final`` first, drop ``tmp``
    and use theirs. Returns ``final``."""
    (tmp / ".complete").write_text("\n".join(reqs) + "\n", encoding="utf-8")
    _read_only(tmp)
    try:
        tmp.rename(final)
    except OSError:  # another process finished first: use its copy
        _writable(tmp)
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def sandbox_view(env: Path, reachable: bool) -> Path:
    """``env`` itself when the sandbox uid can read it (``reachable``), else a private copy in a
    world-readable temporary folder, made once per process and removed at exit."""
    if reachable:
        return env
    with _lock:
        view = _views.get(str(env))
        if view is None or not view.is_dir():
            base = Path(tempfile.mkdtemp(prefix=f"tuneloop-deps-{os.getpid()}-"))
            view = base / env.name
            shutil.copytree(env, view, symlinks=True)
            for path in [base, *base.rglob("*")]:
                if not path.is_symlink():
                    path.chmod(0o755 if path.is_dir() else 0o644)
            atexit.register(shutil.rmtree, base, True)
            _views[str(env)] = view
        return view


def _read_only(root: Path) -> None:
    """Files 0444 (0555 when executable: scripts in ``bin/``, ``node_modules/.bin``), folders 0755."""
    for path in [*root.rglob("*"), root]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o555 if path.stat().st_mode & 0o111 else 0o444)


def _writable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)


# "No module named 'six.moves'; 'six' is not a package" is a submodule of a present module (six's lazy
# six.moves), not a missing install: installing six would not help, so it names nothing
_MISSING = re.compile(r"No module named '([\w.]+)'(?!; '[\w.]+' is not a package)|could not import '([\w.]+)'")


def missing_modules(text: str) -> list[str]:
    """Top-level modules that ``text`` (a failure message, skip reason or traceback) says could not be
    imported, in order of first mention: ``No module named 'x.y'`` and pytest's ``importorskip``
    reason ``could not import 'x'`` give ``x``; ``No module named 'x.y'; 'x' is not a package`` gives
    nothing (``x`` is there: a module, not a package)."""
    found = [next(g for g in m.groups() if g).split(".")[0] for m in _MISSING.finditer(text)]
    return list(dict.fromkeys(found))


def requirements_fix(modules: list[str]) -> str:
    """The fix for tests that need ``modules`` that are not installed: name ``test_requirements``."""
    names = ", ".join(modules)
    return (f"add the package(s) that provide {names} to the source's `test_requirements:` option (e.g. "
            f"--set sources.0.options.test_requirements='[{modules[0]}]'; the pip name can differ from the "
            "module name), or `pip_args: [--no-index, --find-links, DIR]` for a local wheel folder")


# what Node, Go and javac say when a test needs a package the sandbox does not have
_NODE_MISSING = re.compile(r"Cannot find (?:module|package) '([^'\s]+)'")
_GO_MISSING = re.compile(r"(?:no required module provides|cannot find module providing) package ([\w./~-]+)")
_JAVA_MISSING = re.compile(r"error: package ([\w.]+) does not exist")


def node_packages(text: str) -> list[str]:
    """npm packages that ``text`` says Node could not find (``Cannot find module 'x/sub'`` from
    ``require``, ``Cannot find package 'x' imported from`` from ``import``: ``x``; ``@scope/x`` kept
    whole), in order of first mention; relative and absolute paths (the task's own files) and
    ``node:`` builtins are left out."""
    found = []
    for m in _NODE_MISSING.finditer(text):
        spec = m.group(1)
        if spec.startswith((".", "/")) or ":" in spec:
            continue
        found.append("/".join(spec.split("/")[:2 if spec.startswith("@") else 1]))
    return list(dict.fromkeys(found))


def missing_dependency_fix(text: str) -> str:
    """The fix for tests that ``text`` (failure reasons, reports) says need something not installed:
    Python modules (:func:`requirements_fix`), npm packages (``test_requirements`` of a ``files``
    source, or ``package.json``), Go modules or Java packages (the sandbox has none beyond the
    standard library and JUnit: leave those tests out with ``exclude``); ``""`` when it says none."""
    if missing := missing_modules(text):
        return requirements_fix(missing)
    if npm := node_packages(text):
        return (f"declare the npm package(s) {', '.join(npm)} in package.json (devDependencies, with its "
                f"package-lock.json) or in the source's `test_requirements:` option (e.g. --set "
                f"sources.0.options.test_requirements='[{npm[0]}]'; a list there replaces package.json's)")
    go = list(dict.fromkeys(_GO_MISSING.findall(text)))
    java = list(dict.fromkeys(_JAVA_MISSING.findall(text)))
    if go or java:
        what = f"Go package(s) {', '.join(go)}" if go else f"Java package(s) {', '.join(java)}"
        return (f"the tests need {what}, and the sandbox has no {'Go module downloads' if go else 'jars'} beyond the "
                f"{'standard library' if go else 'JDK and JUnit'}: leave those tests out with the source's "
                "`exclude:` option (globs of test files)")
    return ""
