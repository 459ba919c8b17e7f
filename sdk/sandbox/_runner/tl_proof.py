"""Where a watched audit event comes from, by positive proof (the hook of :mod:`tl_witness`, issue 17); stdlib only.

The witness's hook flags a watched event (a ``gc`` walk, ``sys.settrace``, ``ctypes``, a read of the
process's memory, ``os.fork``, a runner class patched) unless the call is *proven* to come from
trusted code. Trust is never read from a name: a frame is the runner's, pytest's or pluggy's only
when its code object *is* one of the code objects those modules held when the hook was armed
(before any repository code ran) and it runs with that module's own globals; it is the task's
test code only when its fingerprint is one of the pristine test functions'. A file name proves
nothing: code compiled under ``'<frozen zipimport>'``, under a test file's or a standard-library
file's path, or imported from ``/tmp``, is untrusted.

For the events that can reach the hook's state (:data:`STRICT`) the innermost Python frame itself
must be trusted: a standard-library frame is no proof (a thread started by repository code, a
``ThreadPoolExecutor`` work item, a ``functools.partial`` of a stdlib function handed to a test,
all have stdlib frames on top). For ``os.fork`` the direct caller may also be a genuine (recompiled
and fingerprinted) stdlib function whose forked child never returns to its caller
(:data:`FORK_OK`: ``multiprocessing``'s fork and forkserver, ``socketserver``). For a runner class
patched (``object.__setattr__``, which ``unittest.mock`` does on its own classes) genuine stdlib
frames are passed through to the first frame that must then be trusted.

:func:`watcher` (H4) judges the frames and code objects that reach repository code while a test runs (below).

Not covered: a trusted function that calls what it is given (pluggy's ``_multicall`` with forged
hook implementations, a pytest helper with a callable argument) still vouches for the call it
makes; such a call is flagged only if its innermost frame is not that trusted function.
"""

import os
import sys
import sysconfig
import types

STDLIB = tuple(sorted({os.path.realpath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib")}))
FORK_OK = ("/multiprocessing/popen_fork.py", "/multiprocessing/forkserver.py", "/socketserver.py")
STRICT = frozenset({"sys.settrace", "sys.setprofile", "sys._current_frames", "gc.get_objects", "gc.get_referrers",
                    "gc.get_referents", "sys.addaudithook", "ctypes.string_at", "ctypes.cdata", "ctypes.call_function",
                    "sys.monitoring.register_callback", "open"})
FORKS = frozenset({"os.fork", "os.forkpty"})


def _codes(code, glb, out):
    out[id(code)] = (code, glb)
    for c in code.co_consts:
        if type(c) is types.CodeType:
            _codes(c, glb, out)


def _collect(value, out, seen, depth=0):
    if id(value) in seen or depth > 4:
        return
    seen.add(id(value))
    if type(value) is types.FunctionType:
        _codes(value.__code__, value.__globals__, out)
        inner = value.__dict__.get("__wrapped__")
        if inner is not None:
            _collect(inner, out, seen, depth + 1)
    elif isinstance(value, (staticmethod, classmethod)):
        _collect(value.__func__, out, seen, depth + 1)
    elif isinstance(value, property):
        for f in (value.fget, value.fset, value.fdel):
            _collect(f, out, seen, depth + 1)
    elif isinstance(value, type):
        for v in list(vars(value).values()):
            _collect(v, out, seen, depth + 1)


def registry(dirs):
    """``{id(code): (code, globals)}`` of every function (nested ones, methods, properties included)
    of the loaded modules whose file lies under one of ``dirs`` (real paths ending in a separator).
    pytest's default plugins are imported first, so their code is known too."""
    import importlib

    from _pytest.config import default_plugins
    for name in default_plugins:
        try:
            importlib.import_module("_pytest." + name)
        except Exception:  # noqa: BLE001 - a plugin pytest cannot load here is not ours to trust
            pass
    out, seen = {}, set()
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if type(f) is str and os.path.realpath(f).startswith(dirs):
            for v in list(vars(mod).values()):
                _collect(v, out, seen)
    return out


def prover(runner, test_fps, test_files, fingerprint):
    """``source(frame, event)``: ``None`` when the event raised with ``frame`` as its innermost Python
    frame is proven to come from trusted code (see the module docstring), else a short text naming
    the culprit. ``runner`` is :func:`registry`'s; ``test_fps`` the pristine test functions'
    fingerprints, ``test_files`` their file names."""
    fps, files = {}, {}

    def fp_of(code):
        hit = fps.get(id(code))
        if hit is None or hit[0] is not code:
            hit = fps[id(code)] = (code, fingerprint(code))
        return hit[1]

    def trusted(frame):
        code = frame.f_code
        hit = runner.get(id(code))
        if hit is not None and hit[0] is code and frame.f_globals is hit[1]:
            return True
        return type(code.co_filename) is str and code.co_filename in test_files and fp_of(code) in test_fps

    def stdlib(code):
        name = code.co_filename
        if type(name) is not str or not name.startswith("/"):
            return False
        known = files.get(name)
        if known is None:
            known = files[name] = _file_fps(name, fingerprint)
        return fp_of(code) in known

    def source(frame, event):
        if event in FORKS:
            if frame is None or trusted(frame) or (stdlib(frame.f_code) and frame.f_code.co_filename.endswith(FORK_OK)):
                return None
            return _name(frame)
        through = event not in STRICT
        f = frame
        while f is not None:
            if trusted(f):
                return None
            if not (through and stdlib(f.f_code)):
                return _name(f)
            f = f.f_back
        return "standard-library frames only (a thread?)"
    source.trusted = trusted   # for watcher (below)
    return source


def _name(frame):
    name = frame.f_code.co_filename if frame is not None else None
    return name[-150:] if type(name) is str else "?"


def _file_fps(name, fingerprint):
    """The fingerprints of every code object of the real stdlib file ``name`` (recompiled), or an
    empty set when ``name`` is no file of the interpreter's standard library."""
    return _compiled_fps(name, fingerprint, lambda real: real.startswith(STDLIB) and "-packages" + os.sep not in real)


def _compiled_fps(name, fingerprint, accept):
    """The fingerprints of every code object of the real file ``name`` (recompiled), or an empty set
    when its real path fails ``accept`` or it cannot be read and compiled (no proof)."""
    try:
        real = os.path.realpath(name)
        if not accept(real):
            return frozenset()
        with open(real, "rb") as fh:
            code = compile(fh.read(), name, "exec", dont_inherit=True)
    except Exception:  # noqa: BLE001 - not a readable, compilable file: no proof
        return frozenset()
    out, todo = set(), [code]
    while todo:
        c = todo.pop()
        out.add(fingerprint(c))
        todo.extend(x for x in c.co_consts if type(x) is types.CodeType)
    out.discard(None)
    return frozenset(out)


# -- frames and code objects (H4) ------------------------------------------------------------
# Who reads a running test's frame or a test function's code (the hook of :mod:`tl_witness`, H4).
#
# A change task's tests run in the candidate's process, so code under test could read the genuine
# test's bytecode (the next ``LOAD_CONST`` after the call: the expected value) or its locals (a
# parameter named ``expected``) and return what the test wants. In CPython 3.11 every way to a frame
# or a code object raises an audit event: ``sys._getframe``, and ``object.__getattr__`` for
# ``tb_frame``, ``gi_frame``/``cr_frame``/``ag_frame``, ``f_code``, ``__code__``, ``gi_code``... (``gc``
# walks, ``sys._current_frames`` and tracing are watched by :mod:`tl_proof` already). :func:`watcher`
# judges two kinds:
#
# - a *frame* obtained (``sys._getframe``, a traceback's, a generator's or coroutine's frame) whose
#   chain of callers (``f_back``) holds a pristine test function's frame: the test is running below
#   whoever receives it;
# - a *code object* read (``__code__``, ``f_code``, ``gi_code``...) that is a pristine test function's
#   (its fingerprint, as :mod:`tl_witness` computes them; a name or a file name proves nothing).
#
# Either is flagged ``runner_tampering`` when its *receiver* is not trusted code: the innermost frame, or, when
# that is a genuine (recompiled and fingerprinted) library or runner function that hands frames or code back to
# its caller (``inspect.currentframe``/``stack``/``trace``, ``traceback.walk_stack``/``extract_stack``, ``dis``,
# ``logging.currentframe``, ``inspect``'s code walkers; pytest's ``TracebackEntry.frame``, ``Frame.code`` and
# ``getrawcode``, round 8), the first frame outside such functions. Trusted receivers: the runner, pytest, pluggy
# (:mod:`tl_proof`'s registry), a pristine test, and genuine library code that uses the frame or code itself
# (``logging``'s ``findCaller``, ``namedtuple``, ``inspect.signature``); library code: a function of a real file
# under the standard library or a read-only ``sys.path`` folder outside the repository, matching it recompiled.
#
# Not covered: what needs no frame or code object. Values the test holds as objects stay reachable through
# pytest's objects (``sys.meta_path``'s assertion rewriter holds the session, so its items, their
# ``callspec.params`` and ``funcargs``, withheld during the call), the test module's globals (guarded during the
# call: tl_rmods), a handler's ``frame`` argument (a stand-in: tl_rhide), third-party code that returns frames.
# Repository code that reads frames while a test runs (a caller-introspecting helper) is flagged even if honest.
GETATTR_FRAME = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
GETATTR_CODE = frozenset({"f_code", "__code__", "gi_code", "cr_code", "ag_code"})
EVENTS = frozenset({"sys._getframe", "object.__getattr__"})
# genuine library functions that hand a frame on to their caller (by the file's path ending)
FRAME_HANDS = {"/inspect.py": frozenset({"currentframe", "stack", "trace", "getouterframes", "getinnerframes"}),
               "/traceback.py": frozenset({"walk_stack", "walk_tb", "_walk_tb_with_full_positions", "extract_stack",
                                           "format_stack", "print_stack", "extract", "_extract_from_extended_frame_gen"}),
               "/logging/__init__.py": frozenset({"<lambda>"}),   # logging.currentframe
               "/asyncio/base_tasks.py": frozenset({"_task_get_stack"}), "/asyncio/tasks.py": frozenset({"get_stack"}),
               "/_pytest/_code/code.py": frozenset({"frame"})}   # TracebackEntry.frame (round 8: read past pytest)
# inspect's functions that read a code object and hand back nothing of its constants
PYTEST_CODE = ("code", "from_function", "getrawcode")   # Frame.code, Code.from_function, getrawcode (round 8)
CODE_KEEPS = frozenset({"_signature_from_function", "_signature_is_functionlike", "_has_code_flag", "getfile",
                        "getsourcefile", "getmodule", "unwrap", "isgeneratorfunction", "iscoroutinefunction",
                        "isasyncgenfunction", "_signature_from_callable", "signature", "from_callable", "getfullargspec"})


def libraries(cwd, folder, path):
    """Real folders (ending in a separator) whose files count as library code: the standard library
    and every ``path`` folder that is not writable and lies outside ``cwd`` and ``folder``."""
    out, mine = list(STDLIB), tuple(os.path.realpath(p).rstrip(os.sep) + os.sep for p in (cwd, folder))
    for p in path:
        real = os.path.realpath(p).rstrip(os.sep) + os.sep if type(p) is str and p else None
        if real and os.path.isdir(real) and not real.startswith(mine) and not os.access(real, os.W_OK):
            out.append(real)
    return tuple(dict.fromkeys(out))


def watcher(trusted, test_fps, test_files, fingerprint, libs, _type=type):
    """``check(event, args, frame)``: a short text naming the culprit when ``event`` (raised with
    ``frame`` as the innermost Python frame) hands a running test's frame or a test function's code
    to untrusted code, else ``None``. ``trusted(frame)`` is :func:`prover`'s ``source.trusted``."""
    fps, files = {}, {}
    code_of = types.FunctionType.__dict__["__code__"].__get__

    def fp_of(code):
        hit = fps.get(id(code))
        if hit is None or hit[0] is not code:
            hit = fps[id(code)] = (code, fingerprint(code))
        return hit[1]

    def is_test(code):
        return _type(code) is types.CodeType and code.co_filename in test_files and fp_of(code) in test_fps

    def library(code):
        name = code.co_filename
        if _type(name) is not str or not name.startswith("/"):
            return False
        known = files.get(name)
        if known is None:
            known = files[name] = _lib_fps(name, libs, fingerprint)
        return fp_of(code) in known

    def receiver(frame, frames):
        f = frame
        while f is not None and _hands(f.f_code, frames) and (library(f.f_code) or trusted(f)):
            f = f.f_back
        if f is None or trusted(f) or library(f.f_code):
            return None
        name = f.f_code.co_filename
        return name[-150:] if _type(name) is str else "?"

    def reaches_test(f):
        depth = 0
        while f is not None and depth < 400:
            if is_test(f.f_code):
                return True
            f, depth = f.f_back, depth + 1
        return False

    def check(event, args, frame):
        if _type(args) is not tuple or not args:
            return None
        if event == "sys._getframe":
            got, frames = args[0], True
        elif len(args) == 2 and _type(args[1]) is str and (args[1] in GETATTR_FRAME or args[1] in GETATTR_CODE):
            frames = args[1] in GETATTR_FRAME
            got = None if args[1] == "f_code" and _outside(args[0], test_files) else _target(args[0], args[1], code_of)
        else:
            return None
        if frames and _type(got) is not types.FrameType or not frames and not is_test(got):
            return None
        who = receiver(frame, frames)   # before the walk up the stack: library receivers (logging...) are the many
        if who is None or (frames and not reaches_test(got)):
            return None
        return "%s read %s" % (who, "a running test's frame" if frames else "a test's code")
    return check


RUNNER_MODULES = ("pytest", "_pytest", "pluggy", "unittest")


def rebinding(_type=type, _get=dict.get):
    """``moved()``: the first ``module.name`` (text) of the runner's modules (:data:`RUNNER_MODULES`, as
    loaded now, before any repository code) whose public function or class was rebound since, or a
    module replaced in ``sys.modules``; ``None`` when all are as they were. What a test calls
    (``pytest.raises``, ``pytest.approx``, ``unittest.TestCase``...) cannot be swapped for a liar that
    stays in place; the check reads dicts only (no foreign method runs)."""
    table, mods = [], sys.modules
    kinds = (types.FunctionType, types.BuiltinFunctionType, type)
    for name, mod in list(mods.items()):
        if _type(mod) is types.ModuleType and name.split(".")[0] in RUNNER_MODULES:
            ns = vars(mod)
            table.append((name, mod, ns, tuple((k, v) for k, v in list(ns.items())
                                               if k[:1] != "_" and isinstance(v, kinds))))

    def moved():
        for name, mod, ns, entries in table:
            if _get(mods, name) is not mod or _type(mod) is not types.ModuleType:   # replaced, or its __class__ swapped
                return name
            for k, v in entries:
                if _get(ns, k) is not v:
                    return name + "." + k
        return None
    return moved


def trusted_code(test_fps, test_files, fingerprint, libs, _type=type):
    """``trusted(fn)``: True when ``fn`` is a function whose code is a pristine test's (its file one of
    ``test_files``, its fingerprint one of ``test_fps``) or genuine library code under ``libs`` (the
    file recompiled holds the same code): :mod:`tl_rguard` does not probe such an ``__eq__``."""
    code_of, files, fps = types.FunctionType.__dict__["__code__"].__get__, {}, {}

    def trusted(fn):
        if _type(fn) is not types.FunctionType:
            return False
        code = code_of(fn)
        name = code.co_filename
        if _type(name) is not str:
            return False
        hit = fps.get(id(code))
        if hit is None or hit[0] is not code:
            hit = fps[id(code)] = (code, fingerprint(code))
        if name in test_files and hit[1] in test_fps:
            return True
        known = files.get(name)
        if known is None:
            known = files[name] = _lib_fps(name, libs, fingerprint) if name.startswith("/") else frozenset()
        return hit[1] in known
    return trusted


def _hands(code, frames):
    """True when ``code`` (if genuine library code) hands frames (``frames``) or code objects on to its caller."""
    name = code.co_filename if type(code.co_filename) is str else ""
    if frames:
        return any(name.endswith(end) and code.co_name in names for end, names in FRAME_HANDS.items())
    return name.endswith("/dis.py") or (name.endswith("/inspect.py") and code.co_name not in CODE_KEEPS) or (
        name.endswith(("/_pytest/_code/code.py", "/_pytest/_code/source.py")) and code.co_name in PYTEST_CODE)


def _outside(frame, test_files, _type=type):
    """True when ``frame`` runs with globals that are no test module's (reading ``f_globals`` raises
    no audit event): its code is no genuine test's (one run with other globals was already held)."""
    if _type(frame) is not types.FrameType:
        return False
    g = frame.f_globals
    return _type(g) is not dict or dict.get(g, "__file__") not in test_files


def _target(obj, name, code_of, _type=type):
    """The frame or code object that ``obj.<name>`` gives, read without running a foreign method."""
    try:
        if name == "__code__":
            return code_of(obj) if _type(obj) is types.FunctionType else None
        if name == "f_code":
            return obj.f_code if _type(obj) is types.FrameType else None
        if name == "tb_frame":
            return obj.tb_frame if _type(obj) is types.TracebackType else None
        if _type(obj) in (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType):
            return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - no target: nothing to judge
        return None
    return None


def _lib_fps(name, libs, fingerprint):
    """The fingerprints of every code object of the real library file ``name`` (recompiled), or an
    empty set when ``name`` is no file under ``libs``."""
    return _compiled_fps(name, fingerprint, lambda real: real.startswith(libs))


def runner_dirs(runner):
    """The folders of the code of module ``runner`` (the witness), pytest, pluggy and unittest (as imported and real)."""
    import _pytest
    import pluggy
    import pytest
    import unittest
    paths = [os.path.dirname(m.__file__) for m in (_pytest, pluggy, unittest, pytest, sys.modules[runner])]
    return tuple(dict.fromkeys(p.rstrip(os.sep) + os.sep for q in paths for p in (q, os.path.realpath(q))))


def owner(target, dirs, runner, _type=type, _function=types.FunctionType, _module=types.ModuleType):
    """The module name an ``object.__setattr__`` event's ``target`` belongs to (a class's, a module's
    ``__name__``); a function whose code's file is under ``dirs`` counts as ``runner[0]``'s (a
    function's ``__module__`` is rewritable without an audited event); None for anything else."""
    if isinstance(target, type):
        return type.__dict__["__module__"].__get__(target)
    if _type(target) is _module:
        return dict.get(vars(target), "__name__")
    if _type(target) is _function:
        return runner[0] if target.__code__.co_filename.startswith(dirs) else target.__module__
    return None
