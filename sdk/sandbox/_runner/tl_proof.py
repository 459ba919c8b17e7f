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
    return source


def _name(frame):
    name = frame.f_code.co_filename if frame is not None else None
    return name[-150:] if type(name) is str else "?"


def _file_fps(name, fingerprint):
    """The fingerprints of every code object of the real stdlib file ``name`` (recompiled), or an
    empty set when ``name`` is no file of the interpreter's standard library."""
    try:
        real = os.path.realpath(name)
        if not real.startswith(STDLIB) or "-packages" + os.sep in real:
            return frozenset()
        with open(real, "rb") as fh:
            code = compile(fh.read(), name, "exec", dont_inherit=True)
    except Exception:  # noqa: BLE001 - not a readable, compilable stdlib file: no proof
        return frozenset()
    out, todo = set(), [code]
    while todo:
        c = todo.pop()
        out.add(fingerprint(c))
        todo.extend(x for x in c.co_consts if type(x) is types.CodeType)
    out.discard(None)
    return frozenset(out)
