"""The trusted harness: runs the tests and computes every verdict, out of the solution's reach.

The solution runs only in the candidate process (:mod:`tl_candidate`), forked before this
process read the request. Here, the tests run against proxies (:mod:`tl_remote`): every call
crosses the process boundary, arguments and results travel as plain data or, for the
repository's own classes, as pickles decoded here only by a restricted unpickler (:mod:`tl_values`,
:mod:`tl_pickle`), and every assertion is evaluated in this process. The report channel (a pipe fd, or the warm server's stdout) is
never open in the candidate; this process is not dumpable, so ``/proc/<pid>/{mem,fd}`` of it
cannot be opened from the candidate (and seccomp denies ptrace and process_vm_*).

``pytest`` mode: the tests arrive in the request (never in the working folder). Their files are
written to a private folder as placeholders and their sources served from memory
(:mod:`tl_memtests`), so no test's source is ever on disk while solution code runs; the solution
is loaded before collection and the folder of placeholders is deleted at the end. ``script`` mode (HumanEval): the
test source is executed here, in a namespace whose unknown names resolve to the solution's
(``poly``, ``candidate``...), then ``check(<entry_point>)``.

Every event is ``<nonce> <json>`` on the channel; ``end`` comes last.
"""

import builtins
import ctypes
import json
import os
import sys
import time
import traceback

import tl_early
import tl_remote
import tl_rmodule

MSG = 2000
PR_SET_DUMPABLE = 4


def not_dumpable():
    """No ``/proc/<pid>/mem``, ``fd``, ``environ`` of this process for anyone in the sandbox."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class Channel:
    """The nonce-tagged report channel; ``buffer``: keep the lines (the warm server sends them
    in one frame at the end) instead of writing each to ``fd``."""

    def __init__(self, fd, nonce, buffer=False):
        self.fd, self.nonce, self.lines = fd, nonce, [] if buffer else None

    def emit(self, **event):
        """Write one nonce-tagged event line."""
        line = self.nonce + " " + json.dumps(event) + "\n"
        if self.lines is not None:
            self.lines.append(line)
        else:
            data = line.encode("utf-8", "replace")
            while data:
                data = data[os.write(self.fd, data):]


def module_name(target):
    """``pkg/mod.py`` -> ``pkg.mod``; ``src/pkg/__init__.py`` -> ``pkg`` (src layout, package)."""
    path = target[:-3] if target.endswith(".py") else target
    path = path[4:] if path.startswith("src/") else path
    path = path[:-len("/__init__")] if path.endswith("/__init__") else path
    return path.replace("/", ".")


class _Namespace(dict):
    """Script-mode globals: a name the test does not define resolves to the solution's."""

    def __init__(self, remote):
        super().__init__(__builtins__=builtins, __name__="__tl_check__")
        self.remote = remote

    def __missing__(self, name):
        if hasattr(builtins, name) or name.startswith("__"):
            raise KeyError(name)
        try:
            value = self.remote.result(self.remote.get(name))
        except AttributeError:
            raise KeyError(name)
        self[name] = value
        return value


class ImportGuard:
    """First on this process's ``sys.meta_path`` (every mode): nothing is imported here from a place
    the candidate can write (``roots``: its temporary folders, the warm ``/tmp/run``; the private
    tests folder's files only as held in memory, :mod:`tl_memtests`), nor the solution's file
    ``target`` under a name other than its own (``src.pkg.mod`` beside ``pkg.mod``); the solution's
    own name is served by ``solution`` (a finder giving the module of proxies). A cold script test
    that did ``import solution``, or a warm ``fractions.py`` in ``/tmp/run``, ran solution code here."""

    def __init__(self, name, target, roots, solution=None, remote=None):
        self.name, self.target, self.solution, self.remote = name, os.path.realpath(target), solution, remote
        self.refused = []
        self.roots = tuple(dict.fromkeys(os.path.realpath(r).rstrip(os.sep) + os.sep for r in roots if r))

    def find_spec(self, fullname, path=None, target=None):
        """The solution's spec for its own name; raises ImportError for a refused file; else None."""
        spec = self.solution.find_spec(fullname) if self.solution is not None else None
        if spec is not None:
            return spec
        import importlib.machinery
        self.check(fullname, importlib.machinery.PathFinder.find_spec(fullname, path))
        return None

    def check(self, fullname, spec, held=()):
        """Raise ImportError when ``spec`` (Python's own finding) is a refused file (see the class)."""
        if spec is None:
            return
        places = [spec.origin] if spec.origin and spec.has_location else list(spec.submodule_search_locations or [])
        for place in places:
            real = os.path.realpath(place)
            if real in held:
                continue
            if real == self.target or (real + os.sep).startswith(self.roots):
                why = "the harness was led to import %s from %s (the solution's file, or a folder the solution " \
                      "can write)" % (fullname, place)
                self.refused.append(why)
                if self.remote is not None:
                    self.remote.flag("runner_tampering", why)
                raise ImportError("tuneloop: " + why, name=fullname)


class _ScriptSolution:
    """``import <solution module>`` in a script test: the module of proxies (made on first use)."""

    def __init__(self, name, make):
        self.name, self.make, self.module = name, make, None

    def find_spec(self, fullname, path=None, target=None):
        """Claim the solution's module name."""
        if fullname != self.name:
            return None
        import importlib.machinery
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        """The module of proxies."""
        if self.module is None:
            self.module = self.make()
        return self.module

    def exec_module(self, module):
        """Nothing runs: the solution never runs here."""


def _guard(payload, cwd, remote):
    """The :class:`ImportGuard` of this run, first on ``sys.meta_path``."""
    import importlib.machinery  # noqa: F401 - loaded before the guard runs (it imports nothing while finding)
    roots = [os.environ.get("TMPDIR"), os.environ.get("HOME"), "/dev/shm"] + ([cwd] if payload.get("warm") else [])
    guard = ImportGuard(module_name(payload["target"]), os.path.join(cwd, payload["target"]), roots, remote=remote)
    sys.meta_path.insert(0, guard)
    return guard


def _load_request(payload, cwd):
    return {"module": module_name(payload["target"]), "target": payload["target"], "code": payload.get("code"),
            "cwd": cwd, "limits": payload["limits"], "path": payload.get("path", []),
            "nproc_extra": payload.get("nproc_extra", 0), "get": payload["entry"] if payload["mode"] == "script" else None}


def _source(payload, cwd):
    """The solution's file as text (only ever parsed here, never run), or None."""
    if payload.get("code") is not None:
        return payload["code"]
    try:
        with open(os.path.join(cwd, payload["target"]), encoding="utf-8") as fh:
            return fh.read()
    except (OSError, ValueError):
        return None


def public_names(source):
    """What ``from <solution module> import *`` gives, read from the source without running it:
    a literal ``__all__``, else the top-level names without a leading underscore."""
    import ast
    try:
        tree = ast.parse(source or "")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets) \
                and isinstance(node.value, (ast.List, ast.Tuple)):
            return [e.value for e in node.value.elts if isinstance(e, ast.Constant) and type(e.value) is str]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
    return [n for n in dict.fromkeys(names) if not n.startswith("_")]


def preimport(payload, cwd):
    """Import here the repository modules that the solution's file imports, *before* the
    solution loads (their files are still as the task shipped them), so that their classes can
    come back by value (:mod:`tl_pickle` trusts only modules this process has imported)."""
    import ast
    import importlib.util
    try:
        tree = ast.parse(_source(payload, cwd) or "")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    target = module_name(payload["target"])
    package = target.rpartition(".")[0].split(".") if "." in target else []
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package[:len(package) - node.level + 1] if node.level else []
            base = ".".join(parts + ([node.module] if node.module else []))
            names.update([base] + [base + "." + a.name for a in node.names if base])
    roots = tuple(os.path.realpath(r) + os.sep for r in [cwd] + list(payload.get("path", [])))
    for name in sorted(names)[:200]:
        if not name or name == target or name in sys.modules:
            continue
        try:
            spec = importlib.util.find_spec(name)
            if spec is not None and os.path.realpath(spec.origin or "/nonexistent").startswith(roots):
                importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - a module that does not import here stays untrusted
            continue


def _load(chan, payload, remote, cwd, early=False):
    if payload["mode"] == "pytest" and not early:   # early (tl_early): after the load, parents first
        preimport(payload, cwd)
    err = remote.load(_load_request(payload, cwd))
    if err is not None:
        kind, message = err
        chan.emit(event=kind if kind in ("compile_error", "runtime_error") else "timeout", message=message[-MSG:])
    return err is None


def run(chan, payload, remote, started):
    """Run the request's tests against the candidate; every event goes to ``chan``."""
    lim = payload["limits"]
    remote.deadline = started + lim["timeout_s"] - min(0.5, 0.1 * lim["timeout_s"])
    cwd = payload.get("cwd") or os.getcwd()
    os.chdir(cwd)
    if payload["target"].startswith("src/"):   # src layout: the package imports from src/
        payload["path"] = [os.path.join(cwd, "src")] + list(payload.get("path", []))
    extra = payload.get("path", [])   # warm: /tmp/run (and its src/), which the candidate can write, is never on this
    if extra and payload.get("warm"):   # process's import path (a fractions.py there ran here when a Fraction came back)
        extra = [p for p in extra if not (os.path.realpath(p) + os.sep).startswith(os.path.realpath(cwd) + os.sep)]
    sys.path[:] = ([] if payload.get("warm") else [cwd]) + sys.path + extra
    remote.codec.configure([cwd] + list(payload.get("path", [])), module_name(payload["target"]))
    guard = _guard(payload, cwd, remote)
    base = _cpu(0) if remote.sfd is not None else None   # a long-lived harness: this request's share
    chan.emit(event="start", python=sys.version.split()[0], warm=bool(payload.get("warm")))
    try:
        if payload["mode"] == "pytest":
            run_pytest(chan, payload, remote, cwd, guard)
        else:
            run_script(chan, payload, remote, cwd, guard)
    finally:
        summary = remote.finish()
        chan.emit(event="harness", **summary)
        usage(chan, None if base is None else (base, summary["cpu_s"]))
        sys.meta_path[:] = [f for f in sys.meta_path if f is not guard]   # the warm-up leaves none behind


def run_script(chan, payload, remote, cwd, guard):
    """HumanEval style: test source here, ``check(<entry>)`` against the remote entry point; a test's
    ``import <solution module>`` gives the module of proxies, as in ``pytest`` mode."""
    name = module_name(payload["target"])
    guard.solution = _ScriptSolution(name, lambda: tl_rmodule.RemoteModule(
        name, remote, public_names(_source(payload, cwd)), _source(payload, cwd)))
    if _load(chan, payload, remote, cwd):
        ns = _Namespace(remote)
        entry = payload["entry"]
        try:
            exec(compile(payload["tests"][payload["test_path"]], payload["test_path"], "exec"), ns)
            try:
                candidate = ns[entry]
            except KeyError:
                raise NameError("the solution does not define %r" % entry)
            ns["check"](candidate)
        except BaseException:  # noqa: BLE001 - any exception fails the check
            chan.emit(event="test", name="check", outcome="failed", message=traceback.format_exc()[-MSG:])
        else:
            chan.emit(event="test", name="check", outcome="passed", message="")
    chan.emit(event="end", exitstatus=0, collected=1)


class Reporter:
    """pytest plugin: one ``test`` event per test item, ``collect_error`` per broken module;
    no test runs if the solution did not load."""

    def __init__(self, chan, on_collected):
        self.chan, self.results, self.collected, self.on_collected, self.ended = chan, {}, 0, on_collected, False

    def pytest_collectreport(self, report):
        """pytest hook: report collection errors as failures."""
        if report.failed:
            self.chan.emit(event="collect_error", nodeid=report.nodeid, message=str(report.longreprtext)[-MSG:])

    def pytest_collection_modifyitems(self, session, config, items):
        """pytest hook (after every test module is imported): a solution that did not load runs no test."""
        self.collected = len(items)
        if not self.on_collected():
            items[:] = []

    def pytest_runtest_logreport(self, report):
        """pytest hook: emit each test's outcome once."""
        outcome, msg = self.results.get(report.nodeid, (None, ""))
        if report.failed:
            outcome = "failed" if report.when == "call" else (outcome if outcome in ("failed", "error") else "error")
            msg = (msg + "\n" + str(report.longreprtext))[-MSG:]
        elif report.skipped and outcome is None:
            outcome = "skipped"
        elif report.passed and report.when == "call":
            outcome = "passed"
        self.results[report.nodeid] = (outcome, msg)
        if report.when == "teardown":
            self.chan.emit(event="test", name=report.nodeid, outcome=outcome or "error", message=msg.strip())

    def pytest_sessionfinish(self, session, exitstatus):
        """pytest hook: emit the end-of-session marker after all tests ran."""
        self.ended = True
        self.chan.emit(event="end", exitstatus=int(exitstatus), collected=self.collected)


def run_pytest(chan, payload, remote, cwd, guard):
    """pytest on the request's tests. Their files are placeholders in a private folder and
    their sources are served from memory (:mod:`tl_memtests`), so the solution is loaded before
    collection (a test module may call it at import) and never sees a test's source; the folder
    of placeholders is removed at the end."""
    import shutil  # noqa: E402  (pytest mode only: tempfile, shutil and importlib.abc stay out of the warm
    import tempfile  # noqa: E402  server, whose every fork re-seeded random's state; issue 14)

    import pytest  # noqa: E402  (from the runtime folder)
    import tl_memtests

    name = module_name(payload["target"])
    package = os.path.dirname(os.path.join(cwd, payload["target"])) if payload["target"].endswith("__init__.py") else None
    source = _source(payload, cwd)
    module = tl_rmodule.RemoteModule(name, remote, public_names(source), source)
    guard.solution = tl_memtests.SolutionFinder(name, module, package)
    remote.echo = True
    folder = tempfile.mkdtemp(prefix=".tl-tests-", dir=os.environ.get("TMPDIR") or "/tmp")
    files = dict(payload.get("conftests", {}), **payload["tests"])
    files.setdefault("pytest.ini", "[pytest]\n")
    sources = tl_memtests.write(folder, files, cwd)
    sources.guard = guard   # first on sys.meta_path (ahead of pytest's own hook): the guard's checks too
    sources.install()
    if tl_early.wanted(payload):   # parents first, then the repository modules the tests import
        loaded = tl_early.prepare(payload, remote, cwd, lambda: _load(chan, payload, remote, cwd, True))
    else:
        loaded = _load(chan, payload, remote, cwd)
    if loaded:   # the module's own namedtuples, str subclasses, dataclasses, enums: from the task's file
        import tl_pristine
        tl_pristine.install(payload, remote, module, source, cwd)

    def collected():   # the folder stays until the end: only placeholders (pytest imports a package's
        return loaded  # ``__init__`` again when its tests are set up)

    args = ["-p", "no:terminal", "-p", "no:cacheprovider", "-p", "no:pastebin", "-p", "no:legacypath", "--rootdir", folder,
            "--confcutdir", folder] + tl_memtests.ini_args(files["pytest.ini"])
    reporter = Reporter(chan, collected)
    try:
        pytest.main(args + [os.path.join(folder, p) for p in sorted(payload["tests"])],
                    plugins=[reporter, tl_memtests.Installer(sources)])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if guard.refused and not reporter.ended:   # a conftest.py planted in the tests folder stopped pytest: the
        chan.emit(event="collect_error", nodeid="", message=guard.refused[0][-MSG:])   # solution's failure
        chan.emit(event="end", exitstatus=1, collected=reporter.collected)


def _cpu(who):
    """CPU seconds of this process (``who`` 0) or of its reaped children (-1)."""
    import resource
    ru = resource.getrusage(who)
    return ru.ru_utime + ru.ru_stime


def usage(chan, share=None):
    """CPU seconds of this process and its reaped children (the candidate included); ``share``:
    ``(this process's CPU when the request started, the candidate's relayed CPU)`` in a long-lived
    harness whose candidate is no child of it."""
    try:
        total = _cpu(0) - share[0] + share[1] if share else _cpu(0) + _cpu(-1)
        chan.emit(event="usage", cpu_s=round(total, 4))
    except Exception:  # noqa: BLE001 - best effort only
        pass


def now():
    """Monotonic seconds."""
    return time.monotonic()
