"""Node test dependencies for the sandbox: one cached, read-only ``node_modules`` per dependency set.

The Node half of :mod:`sdk.sandbox.deps` (issue 13, item 2), built the same way: a JavaScript or
TypeScript task carries its npm dependencies as ``name@spec`` strings
(:attr:`ExecRequest.requirements`) and, when the repository has one, its lockfile among its
files (``package-lock.json`` or ``npm-shrinkwrap.json``, ``file:`` paths made absolute by the
source). They are installed once into ``<cache>/node-<key>/node_modules`` where ``key`` hashes
the sorted specs, the lockfile's text and the sandbox's ``node --version``; built under a
temporary name, renamed into place, files made read-only (the cache root is
:func:`sdk.sandbox.deps.cache_root`).

How npm runs (on the host, before any task is built):

- ``npm ci`` when a lockfile is given (the exact tree the repository locked; a lockfile out of
  sync with ``package.json`` is npm's error, passed on), else ``npm install``; ``file:`` folders
  copied in (``--install-links``), not linked to the user's folder; always with
  ``--ignore-scripts``: lifecycle scripts (``preinstall``, ``postinstall``, ``prepare``) are code
  from the user's dependencies that would run on the host, outside the sandbox, so none runs.
  A package that needs its install script (a native addon built by ``node-gyp``) is installed
  unbuilt and fails in its tests, not here.
- the ``node``/``npm`` the sandbox finds (:data:`TOOLS`), not the caller's ``PATH``;
- an environment built from nothing: ``HOME`` a fresh temporary folder, no user or global
  ``.npmrc`` (both point at missing files, so registry tokens in ``~/.npmrc`` are never read),
  no ``NODE_PATH``/``NODE_OPTIONS``/``npm_config_*`` of the caller; only the proxy variables
  (``HTTPS_PROXY``, ``NO_PROXY``...) and ``NODE_EXTRA_CA_CERTS`` pass. A private registry, an
  offline cache or an ``.npmrc`` are given explicitly (``npm_args``: ``--registry URL``,
  ``--offline --cache DIR``, ``--userconfig FILE``). npm's download cache is
  ``<cache>/npm-cache``.

Inside the sandbox the folder is bound read-only (bubblewrap: at
:data:`~sdk.sandbox.deps.DEPS_MOUNT`) and ``tl_build.py`` links ``node_modules`` beside the
task's files to it, so ``require('x')`` and ``import 'x'`` (ESM ignores ``NODE_PATH``) resolve.
The build folder is writable, so code under test could put a ``node_modules`` of its own there
before a test loads a package: the node guard (``languages/tl_node_guard.cjs``) therefore makes a
CommonJS ``require('x')`` from outside the environment look only in its ``node_modules``, and an ESM
``import 'x'`` or ``import('x')`` (made after the code under test ran) that resolves outside the
environment is resolved again from it (a resolve hook registered with ``module.register``, which it
then disables, so no hook of the code under test runs before it). Not covered: the code under test
changing a package the tests share with it, once loaded (``require('x').f = () => 0`` before the
test calls ``f``: one process, one module instance; shown outside the sandbox with this guard), and
Node's global folders (``$HOME/.node_modules``: ``HOME`` is the sandbox's private tmpfs), which are
searched after the environment for a package it lacks (such a task's reference fails its tests, so
it is never validated).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from sdk.sandbox.deps import _lock, _writable, DependencyError, cache_root, publish_env

TOOLS = "/usr/local/bin:/usr/bin:/bin"  # where the sandbox looks for node (sdk.sandbox.languages.SEARCH)
LOCKFILES = ("npm-shrinkwrap.json", "package-lock.json")  # npm's order of preference
PASS_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "NODE_EXTRA_CA_CERTS")
ROOT_NAME = "tuneloop-node-deps"


def split_spec(requirement: str) -> tuple[str, str]:
    """``("name", "spec")`` of ``name@spec`` (``@scope/name@^1`` keeps its scope; a bare name is ``*``)."""
    req = requirement.strip()
    at = req.find("@", 1)
    return (req, "*") if at < 0 else (req[:at], req[at + 1:] or "*")


@functools.lru_cache(maxsize=4)
def node_version(path: str = TOOLS) -> str:
    """``node --version`` of the node in ``path`` (``"none"`` when there is none)."""
    node = shutil.which("node", path=path)
    if node is None:
        return "none"
    try:
        return subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip() or "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def node_env_key(requirements: tuple[str, ...] | list[str], lockfile: str | None = None) -> str:
    """``node-`` and 16 hex chars over the sorted specs, the lockfile's text and the node version."""
    body = "\n".join(sorted({r.strip() for r in requirements if r.strip()}))
    text = f"node {node_version()}\n{body}\n--lock--\n{lockfile or ''}"
    return "node-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def find_node_env(requirements: tuple[str, ...] | list[str], lockfile: str | None = None,
                  root: Path | None = None) -> Path | None:
    """The built environment (the folder holding ``node_modules``), or None when not built yet."""
    path = (root or cache_root()) / node_env_key(requirements, lockfile)
    return path if (path / ".complete").is_file() else None


def request_lockfile(files: dict[str, str]) -> str | None:
    """The lockfile among a request's support files (:data:`LOCKFILES` order), or None."""
    return next((files[name] for name in LOCKFILES if name in files), None)


def ensure_node_env(requirements: tuple[str, ...] | list[str], lockfile: str | None = None, *,
                    npm_args: tuple[str, ...] | list[str] = (), root: Path | None = None,
                    timeout_s: float = 900.0) -> Path:
    """The environment for ``requirements`` (and ``lockfile``), built with npm if not cached yet.

    Args:
        requirements: ``name@spec`` strings (``lodash@^4.17.21``, ``x@file:/abs/x-1.0.0.tgz``).
        lockfile: the text of the repository's ``package-lock.json`` (``file:`` paths absolute),
            installed with ``npm ci``; None: ``npm install`` resolves the specs.
        npm_args: extra npm options (``--registry URL``, ``--offline``, ``--cache DIR``).
        root: cache root (default :func:`sdk.sandbox.deps.cache_root`).
        timeout_s: wall-clock limit of the npm run, seconds.
    Returns:
        The folder whose ``node_modules`` the sandbox links beside the task's files.
    Raises:
        DependencyError: npm is missing, failed (its error lines are in the message) or ran too long.
    """
    reqs = sorted({r.strip() for r in requirements if r.strip()})
    root = root or cache_root()
    with _lock:
        found = find_node_env(reqs, lockfile, root)
        if found is not None:
            return found
        npm = shutil.which("npm", path=TOOLS)
        if npm is None:
            raise DependencyError(f"npm is not installed (searched {TOOLS}); the test dependencies {reqs} need it",
                                  "install node and npm as system packages, or switch the dependencies off "
                                  "(`test_requirements: []`)")
        root.mkdir(parents=True, exist_ok=True)
        final = root / node_env_key(reqs, lockfile)
        tmp = Path(tempfile.mkdtemp(prefix=f".build-{final.name}-", dir=root))
        try:
            _install(npm, tmp, reqs, lockfile, list(npm_args), root, timeout_s)
        except BaseException:
            _writable(tmp)
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return publish_env(tmp, final, reqs)


def _install(npm: str, folder: Path, reqs: list[str], lockfile: str | None, npm_args: list[str], root: Path,
             timeout_s: float) -> None:
    """Write the manifest (and lockfile) into ``folder`` and run npm there; see the module docstring."""
    deps = dict(split_spec(r) for r in reqs)
    manifest = {"name": ROOT_NAME, "version": "0.0.0", "private": True, "dependencies": deps}
    (folder / "package.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    if lockfile is not None:
        lock = _as_root_lock(lockfile, manifest)
        (folder / "package-lock.json").write_text(json.dumps(lock, indent=1), encoding="utf-8")
    home = folder / ".home"
    home.mkdir()
    env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
    env |= {"PATH": TOOLS, "HOME": str(home), "npm_config_userconfig": str(home / "npmrc"),
            "npm_config_globalconfig": str(home / "global-npmrc"), "npm_config_cache": str(root / "npm-cache"),
            "npm_config_update_notifier": "false", "npm_config_fund": "false", "npm_config_audit": "false",
            "npm_config_ignore_scripts": "true"}
    verb = ["ci"] if lockfile is not None else ["install", "--no-package-lock"]
    cmd = [npm, *verb, "--ignore-scripts", "--install-links", "--no-audit", "--no-fund", "--loglevel=error", *npm_args]
    try:
        proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired as exc:
        raise DependencyError(f"npm ran longer than {timeout_s:.0f} s installing the test dependencies {reqs}",
                              "check that the registry is reachable (`npm_args: [--registry, URL]`), or install "
                              "from an offline cache (`npm_args: [--offline, --cache, DIR]`)") from exc
    if proc.returncode != 0:
        raise DependencyError(f"npm {verb[0]} could not install the test dependencies {reqs}:\n{npm_error(proc.stderr or proc.stdout)}",
                              ("bring the lockfile in line with package.json (`npm install --package-lock-only` in "
                               "the repository), " if lockfile is not None else "") +
                              "fix or pin the names in `test_requirements:` (or package.json), make the registry "
                              "reachable (`npm_args: [--registry, URL]`), use an offline cache (`npm_args: [--offline, "
                              "--cache, DIR]`), or switch the dependencies off (`test_requirements: []`)")
    shutil.rmtree(home, ignore_errors=True)


def _as_root_lock(lockfile: str, manifest: dict) -> dict:
    """The repository's lockfile with its root entry replaced by ``manifest``'s, so ``npm ci``
    finds it in sync with the manifest written beside it.

    Raises:
        DependencyError: the lockfile is not JSON.
    """
    try:
        lock = json.loads(lockfile)
    except json.JSONDecodeError as exc:
        raise DependencyError(f"the npm lockfile is not valid JSON ({exc})",
                              "regenerate it with `npm install --package-lock-only`, or delete it") from exc
    lock["name"], lock["version"] = manifest["name"], manifest["version"]
    if isinstance(lock.get("packages"), dict):
        lock["packages"][""] = {"name": manifest["name"], "version": manifest["version"],
                                "dependencies": manifest["dependencies"]}
    return lock


def npm_error(text: str, limit: int = 1200) -> str:
    """npm's error lines without the stack trace, the object dump, ``syscall``/``errno``, the command's
    usage text (``npm ci`` prints it after a lockfile out of sync) and the log-file line (the first
    ``limit`` characters)."""
    keep, depth = [], 0
    for raw in text.splitlines():
        line = raw.removeprefix("npm error").removeprefix("npm ERR!").strip()
        if line == "Usage:":
            keep = keep[:-1]  # the command's one-line summary above it
            break
        depth += line.count("{") - line.count("}")
        if not line or line.startswith(("at ", "A complete log", "syscall ", "errno ")) or depth > 0 or line == "}":
            continue
        keep.append(line)
    return "\n".join(dict.fromkeys(keep))[:limit]
