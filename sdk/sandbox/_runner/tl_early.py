"""Early loading for a solution inside a package (issue 13; harness side, stdlib only).

Real packages use their own modules while they import: ``toolz/__init__.py`` ends with
``functoolz._sigs.create_signature_registry()`` and ``toolz/curried`` calls ``toolz.curry(...)``
on every function, so ``import toolz`` in any test needs the solution (``toolz._signatures``,
``toolz.functoolz``) to answer *while the tests are collected*. The harness normally loads the
solution only after collection (no solution code runs while a test file is on disk), so every
such task failed at collection.

For a target inside a package, :func:`prepare` therefore runs before any test file is written:

1. the solution is loaded (:meth:`tl_remote.Remote.load`; nothing of the tests exists yet);
2. the harness imports the target's parent packages and the repository modules the tests
   import (read from the test sources with :mod:`ast`, only modules found under the task's
   folders), so their import-time calls into the solution are answered now;
3. the candidate is stopped (``SIGSTOP``: every thread of it) and the harness checks that it
   has no other process (a child, or an orphan re-parented to the harness, which is a child
   subreaper: :func:`subreaper`); if it has one, no test is written and the run fails with the
   reason. Only then are the tests written and collected; the candidate stays stopped, and any
   use of the solution during collection fails as before (a test module that calls the solution
   at import); the test files are deleted, then the candidate continues (:func:`thaw`).

What the candidate could still learn: that a folder was created in ``$TMPDIR`` (an inotify
watch set while loading sees the folder's random name, never a file inside it or its content).
The task's files stay read-only to the solution (bubblewrap: a read-only bind; the process
backend: caller-owned files, a leased slot uid), so the modules imported in step 2 are the
task's own.
"""

import ast
import ctypes
import importlib
import importlib.machinery
import os
import signal
import time

PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37


def _prctl(*args):
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(*args)
    except (OSError, AttributeError):
        return -1


def subreaper():
    """Make this process the reaper of its orphaned descendants (called before the candidate is
    forked), so a process the solution starts can never leave the harness's view."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def is_subreaper():
    """True when :func:`subreaper` took effect (else the early path is not used)."""
    flag = ctypes.c_int(0)
    return _prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value == 1


def wanted(payload):
    """True for a pytest run whose target module lives inside a package (``pkg/mod.py``)."""
    import tl_harness
    return payload.get("mode") == "pytest" and "." in tl_harness.module_name(payload["target"]) and is_subreaper()


def test_imports(sources, target):
    """Absolute module names the test sources import (``a.b`` and, for ``from a.b import c``,
    ``a.b.c`` too), the target's parent packages first; the target itself excluded."""
    parts = target.split(".")
    names = [".".join(parts[:i]) for i in range(1, len(parts))]
    for text in sources:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names += [node.module] + [node.module + "." + a.name for a in node.names if a.name != "*"]
    return [n for n in dict.fromkeys(names) if n and n != target][:300]


def _in_roots(name, roots):
    """True when the top-level package of ``name`` is a file or folder under ``roots``."""
    try:
        spec = importlib.machinery.PathFinder.find_spec(name.split(".")[0])
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    places = [spec.origin] if spec.origin else list(spec.submodule_search_locations or [])
    return any(os.path.realpath(p).startswith(roots) for p in places if p)


def prepare(payload, remote, cwd, load):
    """Steps 1-3 of the module docstring. ``load()`` loads the solution (True when it loaded).
    Returns ``(loaded, refusal)``: ``refusal`` is None, or why no test may be written now."""
    import sys
    import tl_harness
    if not load():
        remote.kill()   # whatever it started while failing to load ends before a test file exists
        return False, None
    roots = tuple(os.path.realpath(r) + os.sep for r in [cwd] + list(payload.get("path", [])))
    sources = list(payload.get("conftests", {}).values()) + list(payload["tests"].values())
    for name in test_imports(sources, tl_harness.module_name(payload["target"])):
        if name in sys.modules or not _in_roots(name, roots):
            continue
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - it fails again (and is reported) at collection
            continue
    tl_harness.preimport(payload, cwd)   # what the solution's file imports (trusted for pickles)
    return True, freeze(remote)


def _stat(pid):
    """``(ppid, state)`` of ``pid`` from ``/proc``, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return int(fields[1]), fields[0].decode()
    except (OSError, IndexError, ValueError):
        return None


def others(candidate):
    """Live processes that descend from the candidate or are re-parented children of this
    process (other than the candidate): pids, from two consecutive scans of ``/proc``."""
    found = set()
    for _ in range(2):
        kids = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                st = _stat(int(entry))
                if st is not None and st[1] not in ("Z", "X"):
                    kids.setdefault(st[0], []).append(int(entry))
        todo = [p for p in kids.get(os.getpid(), []) if p != candidate] + kids.get(candidate, [])
        while todo:
            pid = todo.pop()
            if pid not in found:
                found.add(pid)
                todo += kids.get(pid, [])
    return sorted(found)


def freeze(remote):
    """Stop the candidate (waiting until it is stopped) and check it is alone; None, or why
    the tests may not be written. While stopped, the solution counts as not loaded (a use of it
    raises the harness's collection-time error instead of waiting for an answer)."""
    if remote.gone or remote.status is not None:
        return None
    try:
        os.kill(remote.pid, signal.SIGSTOP)
    except ProcessLookupError:
        return None
    for _ in range(2000):
        st = _stat(remote.pid)
        if st is None or st[1] in ("T", "t", "Z", "X"):
            break
        time.sleep(0.0005)
    else:
        return "the solution's process could not be stopped before the tests were collected"
    remote.loaded = False
    extra = others(remote.pid)
    if extra:
        return ("the solution started %d other process(es) while it loaded; a solution inside a package is "
                "loaded before its tests are collected, and then it must not leave processes running" % len(extra))
    return None


def thaw(remote):
    """Let the stopped candidate continue (the test files are gone); the solution is usable again."""
    remote.loaded = True
    try:
        os.kill(remote.pid, signal.SIGCONT)
    except ProcessLookupError:
        pass
