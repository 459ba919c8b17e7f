"""Early loading for a solution inside a package (issue 13; harness side, stdlib only).

Real packages use their own modules while they import: ``toolz/__init__.py`` ends with
``functoolz._sigs.create_signature_registry()`` and ``toolz/curried`` calls ``toolz.curry(...)``
on every function, so ``import toolz`` in any test needs the solution (``toolz._signatures``,
``toolz.functoolz``) to answer while the tests are collected. The solution is loaded before
collection (the tests' sources are never on disk: :mod:`tl_memtests`); for a target inside a
package, :func:`prepare` then imports the target's parent packages and the repository modules
the tests import (read from the test sources with :mod:`ast`, only modules found under the
task's folders) here, in Python's order, before the test modules, and only then what the
solution's file imports (:func:`tl_harness.preimport`: trusted for pickles).

The harness is the child subreaper of everything the solution starts (:func:`subreaper`), so a
process the solution leaves running never leaves the harness's view; the task's files stay
read-only to the solution (bubblewrap: a read-only bind; the process backend: caller-owned files,
a leased slot uid), so the modules imported here are the task's own.
"""

import ast
import ctypes
import importlib
import importlib.machinery
import os

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
    """Load the solution (``load()``: True when it loaded), then import the parents and the
    repository modules the tests import (see the module docstring). Returns whether it loaded."""
    import sys
    import tl_harness
    if not load():
        remote.kill()   # whatever it started while failing to load ends here
        return False
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
    return True
