"""Find a JavaScript/TypeScript repository's test dependencies (issue 13, item 2, the Node half).

Read from the repository's top ``package.json``: ``dependencies`` and ``devDependencies`` (the
tests import both: the code under test its runtime packages, the tests their helpers), as
``name@spec`` strings; ``optionalDependencies`` and ``peerDependencies`` are not read (npm
installs a locked tree's peers itself). The lockfile beside it (``npm-shrinkwrap.json``, else
``package-lock.json``) comes with them, so the sandbox gets the tree the repository locked;
``yarn.lock`` and ``pnpm-lock.yaml`` are not read (npm resolves the specs afresh: the log says so).

``file:`` specs are relative to the repository; the environment is built elsewhere
(:mod:`sdk.sandbox.npmdeps`), so they are made absolute here, in the specs and in the
lockfile's ``resolved`` fields. A ``file:`` folder is installed as a copy (npm's
``--install-links``), never as a link to the user's folder; a lockfile that links folders
(npm's default for them) is not used. Workspaces (``"workspaces"``) are not followed.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from sdk.errors import SourceError
from sdk.sandbox.npmdeps import LOCKFILES

log = logging.getLogger(__name__)
SECTIONS = ("devDependencies", "dependencies")  # the later wins when a name is in both


def find_node_requirements(repo: Path) -> tuple[list[str], str | None, str]:
    """``(requirements, lockfile, where)``: the ``name@spec`` strings of ``repo/package.json``, the
    lockfile's text (``file:`` paths absolute; None without one) and the lockfile's name (``""``
    without one). No ``package.json`` or no dependencies: ``([], None, "")``.

    Raises:
        SourceError: ``package.json`` or the lockfile is not valid JSON.
    """
    manifest = _json(repo / "package.json")
    if not isinstance(manifest, dict):
        return [], None, ""
    deps: dict[str, str] = {}
    for section in SECTIONS:
        table = manifest.get(section) or {}
        deps.update({str(k): str(v) for k, v in table.items()} if isinstance(table, dict) else {})
    if not deps:
        return [], None, ""
    reqs = [f"{name}@{absolute_spec(spec, repo)}" for name, spec in sorted(deps.items())]
    name = next((n for n in LOCKFILES if (repo / n).is_file()), "")
    if not name and any((repo / n).is_file() for n in ("yarn.lock", "pnpm-lock.yaml")):
        log.warning("files source: %s has a yarn/pnpm lockfile, which npm does not read; the test dependencies "
                    "are resolved from package.json's specs", repo)
    lock = _json(repo / name) if name else None
    if not isinstance(lock, dict):
        return reqs, None, ""
    if any(isinstance(v, dict) and v.get("link") for v in (lock.get("packages") or {}).values()):
        log.warning("files source: %s/%s links local folders (file: directories), which cannot be locked outside "
                    "the repository; the test dependencies are resolved from package.json's specs", repo, name)
        return reqs, None, ""
    return reqs, json.dumps(_absolute_lock(lock, repo), indent=1), name


def absolute_spec(spec: str, base: Path) -> str:
    """``file:rel/x.tgz`` → ``file:/abs/rel/x.tgz`` (relative to ``base``); other specs unchanged."""
    if not spec.startswith("file:"):
        return spec
    path = spec[len("file:"):]
    return spec if path.startswith("/") else f"file:{(base / path).resolve()}"


def _absolute_lock(lock: dict, repo: Path) -> dict:
    """The lockfile with every ``file:`` path (``resolved``, v1 ``version``, root specs) made absolute."""
    def fix(node: object) -> object:
        if isinstance(node, dict):
            return {k: absolute_spec(v, repo) if isinstance(v, str) else fix(v) for k, v in node.items()}
        return [fix(v) for v in node] if isinstance(node, list) else node
    return fix(lock)  # type: ignore[return-value]


def _json(path: Path) -> object:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SourceError(f"{path} is not valid JSON: {exc}",
                          "fix the file, or switch the test dependencies off (`test_requirements: []`)") from exc
