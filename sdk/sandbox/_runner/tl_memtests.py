"""Test files served from memory (issue 13; harness side, stdlib + pytest).

The harness writes every ``.py`` file of a pytest request (test modules, conftests, test
packages' ``__init__``, helpers) to its private folder as a *placeholder*: a file with the real
name whose only line raises ImportError. The real source stays in this process's memory:
pytest finds and names the files by path exactly as usual (rootdir, packages, ``sys.path``
insertion: its own code does it), and every import of one of them is served by
:class:`MemorySources`, first on ``sys.meta_path``, from memory, with pytest's assertion
rewriting; ``linecache`` holds the sources so tracebacks and ``inspect.getsource`` show them.

So no test's source is ever on disk where the solution could read it, and the solution may run
while the tests are collected: a test module may call it at import (``@attr.s`` classes, a
module-level ``curry(f)``, ``FOO = mod.build()``). What the solution's process can see of the
tests: the folder and the file names (``test_x_hidden.py``), and files that are not Python
(a data file a test reads is written as an empty placeholder too; the request's ``pytest.ini``
is written as it is, but pytest is given its options from memory, :func:`ini_args`). The folder
is the solution's to write (same uid): nothing in it is imported but the files held here
(``tl_harness.ImportGuard``).
"""

import ast
import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys

import pytest

PLACEHOLDER = "raise ImportError('tuneloop: this test file is served from memory by the harness')\n"


class SolutionFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import <target module>`` in the tests gives the :class:`tl_rmodule.RemoteModule`."""

    def __init__(self, name, module, package=None):
        self.name, self.module, self.package = name, module, package

    def find_spec(self, fullname, path=None, target=None):
        """Claim the solution's module name so the harness never imports its real code."""
        if fullname == self.name:
            spec = importlib.machinery.ModuleSpec(fullname, self, is_package=self.package is not None)
            if self.package is not None:
                spec.submodule_search_locations = [self.package]   # the package's other modules: real files
            return spec
        return None

    def create_module(self, spec):
        """The module of proxies prepared for the solution's name."""
        return self.module

    def exec_module(self, module):
        """Nothing to run: the module already holds the proxies (the solution never runs here)."""
        pass


class MemorySources(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the modules whose file is one of ``sources`` (absolute path -> text) from memory.

    The module is found where Python's own path finder finds it (the placeholder's place, so
    package and ``sys.path`` rules are Python's); only its code comes from here."""

    def __init__(self, sources, config=None, extra=None):
        self.sources, self.config, self.extra = dict(sources), config, dict(extra or {})
        self.guard, held = None, set()
        for path in self.sources:   # the files held here and their folders (a namespace package of the tests)
            path = os.path.realpath(path)
            while path not in held and path != os.path.dirname(path):
                held.add(path)
                path = os.path.dirname(path)
        self.held = frozenset(held)
        for path, text in self.sources.items():
            lines = text.splitlines(True)
            linecache.cache[path] = (len(text), None, lines, path)   # mtime None: never re-read

    def install(self):
        """Put this finder first on ``sys.meta_path`` (ahead of pytest's rewriting hook)."""
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        sys.meta_path.insert(0, self)

    def find_spec(self, fullname, path=None, target=None):
        """The spec Python's path finder gives, with this loader, for a file held here."""
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.origin or os.path.abspath(spec.origin) not in self.sources:
            if self.guard is None:   # ahead of pytest's hook, which would load a planted conftest.py
                return None          # from the folder: the harness's guard (tl_harness.ImportGuard) first
            claimed = self.guard.solution.find_spec(fullname) if self.guard.solution is not None else None
            if claimed is None:
                self.guard.check(fullname, spec, self.held)
            return claimed
        spec.loader = self
        return spec

    def create_module(self, spec):
        """Default module creation."""
        return None

    def get_source(self, fullname):
        """The source of ``fullname`` (for ``inspect`` and tracebacks)."""
        spec = importlib.util.find_spec(fullname)
        return self.sources.get(os.path.abspath(spec.origin)) if spec and spec.origin else None

    def exec_module(self, module):
        """Compile the source held here (asserts rewritten as pytest does) and run it."""
        path = os.path.abspath(module.__spec__.origin)
        text = self.sources[path]
        module.__file__ = path
        module.__cached__ = None
        if path in self.extra and isinstance(getattr(module, "__path__", None), list):
            module.__path__.append(self.extra[path])   # the package's other modules: the working folder's
        exec(self.compile(text, path), module.__dict__)

    def compile(self, text, path):
        """Code of ``text``; pytest's assertion rewriting when it is available."""
        tree = ast.parse(text, path)
        try:
            from _pytest.assertion.rewrite import rewrite_asserts
            rewrite_asserts(tree, text.encode("utf-8"), path, self.config)
        except Exception:  # noqa: BLE001 - plain asserts still pass or fail the same
            tree = ast.parse(text, path)
        return compile(tree, path, "exec", dont_inherit=True)


def _packages(files, cwd):
    """``{rel __init__.py: working-folder dir}`` for each folder of a test file that is a package in
    the working folder (``tests/__init__.py`` shipped with the task, not with the tests), so the
    test modules keep their package (``from .strategies import ...`` finds ``tests/strategies.py``)."""
    out = {}
    for rel in files:
        parts = rel.split("/")[:-1] if rel.endswith(".py") else []
        for i in range(1, len(parts) + 1):
            init = "/".join(parts[:i]) + "/__init__.py"
            real = os.path.join(cwd or "", init)
            if cwd and init not in files and os.path.isfile(real):
                out[init] = os.path.dirname(real)
    return out


def write(folder, files, cwd=None):
    """Write ``files`` (relative path -> text) under ``folder``: ``.py`` files and data files as
    placeholders, ``pytest.ini`` as it is; returns the :class:`MemorySources` of the ``.py`` files
    (and of the working folder's package ``__init__`` of each test folder, see :func:`_packages`)."""
    packages = _packages(files, cwd)
    files = dict(files)
    for init, real in packages.items():
        with open(os.path.join(real, "__init__.py"), encoding="utf-8") as fh:
            files[init] = fh.read()
    held = {}
    for rel, text in files.items():
        path = os.path.abspath(os.path.join(folder, rel))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if rel.endswith(".py"):
            held[path], body = text, PLACEHOLDER
        else:
            body = text if rel == "pytest.ini" else ""
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(body)
    return MemorySources(held, extra={os.path.abspath(os.path.join(folder, i)): r for i, r in packages.items()})


def ini_args(text):
    """pytest's arguments for the request's ``pytest.ini`` (``text``), read here from memory:
    ``-c /dev/null`` and one ``-o name=value`` per option. The copy in the tests folder is the
    solution's to rewrite (same uid): an ``addopts = -p solution`` there once loaded the solution
    as a plugin here, ``--deselect`` hid a failing test."""
    import iniconfig
    try:
        section = iniconfig.IniConfig("pytest.ini", data=text).sections.get("pytest", {})
    except Exception:  # noqa: BLE001 - a broken pytest.ini stops the run, as pytest would
        raise RuntimeError("the task's pytest.ini does not parse")
    args = ["-c", os.devnull]
    for name, value in dict(section).items():
        args += ["-o", "%s=%s" % (name, value)]
    return args


class Installer:
    """pytest plugin: keeps :class:`MemorySources` ahead of pytest's own import hook, which
    pytest puts first on ``sys.meta_path`` while it reads its configuration."""

    def __init__(self, sources):
        self.sources = sources

    @pytest.hookimpl(tryfirst=True)
    def pytest_load_initial_conftests(self, early_config):
        """pytest hook (before any conftest is imported): reinstall the memory finder first."""
        self.sources.config = early_config
        self.sources.install()
