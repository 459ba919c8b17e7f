"""The test process of a whole-repository candidate (change tasks, issue 17); stdlib and pytest only.

usage: started by :mod:`tl_repohost` (never by hand) as a fresh ``python -I -S -B`` whose stdin
carries one JSON header (nonce, report fd, tests folder, test modules, ``sys.path`` additions).

A change task's candidate is the whole working folder: the tests import it, so it runs in this
process, next to pytest. Nothing pytest reports is trusted on its own here; what the trusted
harness (the parent, :mod:`tl_repohost`) accepts as a pass needs evidence from this runner:

- before any repository code runs (``-I -S``: no ``sitecustomize``, ``usercustomize`` or ``.pth``
  file is ever read; the working folder joins ``sys.path`` only after pytest loaded its
  entry-point plugins, so a ``*.dist-info`` of the repository declares none), the nonce is read from stdin and kept only in the emitter's closure, and
  every function of every test module is fingerprinted as pytest will compile it (asserts
  rewritten, and plainly);
- at the call phase of each test, its function object is replaced by a recording wrapper that
  emits ``ran <node id>`` after the *genuine* test function (its code's fingerprint is the one of
  that node id's function in the pristine module; for a decorated test, the genuine function's
  own frame is traced and must return normally) returned. A ``runtest`` patched into a no-op, a
  report rewritten to ``passed``, a plugin or hook registered by repository code, or a test
  function swapped for another never produce that line;
- ``end`` is emitted by ``pytest_sessionfinish``, then the process leaves through ``os._exit``
  (no ``atexit`` hook, no finaliser of the repository runs after the verdicts);
- a PEP 578 audit hook reports (``runner_tampering``) what repository code does to reach the
  runner: tracing and profiling hooks, ``gc`` walks, other threads' frames, patching classes of
  pytest, pluggy, unittest or this runner, reading process memory.

Not covered (the same limit as the Java launcher's): the nonce and the emitter live in this
process. The emitter writes only for callers whose code object is one of this runner's (any
other caller, e.g. repository code that found it through frames, writes a ``runner_tampering``
flag), but code that rebuilds a function from the runner's own code object with cells of its
choosing, or rewrites the cells of the runner's wrapper (``__closure__``), could still forge a
line; the static scans of the reward flag frame access.
``ran`` is necessary, not sufficient: the outcome is still pytest's, so with pytest's reports
forged *and* a genuine function returning normally, a test could pass that records failures
without raising (unittest ``subTest``) or that was called with other arguments than its
parametrisation's.
"""

import hashlib
import inspect
import json
import os
import re
import sys
import types

MSG = 2000
WATCHED = {"sys.settrace", "sys.setprofile", "sys._current_frames", "gc.get_objects", "gc.get_referrers",
           "gc.get_referents", "sys.addaudithook", "ctypes.string_at", "ctypes.cdata",
           "sys.monitoring.register_callback"}
RUNNER = ("_pytest", "pytest", "pluggy", "unittest", "tl_", "__main__")
TRANSPARENT = ("functools.py", "inspect.py", "types.py", "os.py", "pathlib.py", "io.py", "_pyio.py")
MEMORY = re.compile(r"^/proc/(self|thread-self|\d+)/(task/\d+/)?(mem|maps|pagemap|environ)$")


def _read_all(fd):
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def emitter(fd, nonce, trusted, _write=os.write, _quote=json.encoder.encode_basestring_ascii, _str=str, _int=int,
            _isinstance=isinstance, _bool=bool, _getframe=sys._getframe, _id=id):
    """``emit(**event)``: one ``<nonce> <json>`` line on ``fd``; the nonce stays in this closure.
    Values are str or int; the JSON is built here with the C string quoter and builtins bound
    before any repository code ran (a patched ``json`` or ``builtins`` changes no line). Only
    callers whose code object is one of ``trusted`` (ids, filled by :func:`main`: this runner's own
    functions) are written; any other caller (repository code that found the emitter through
    frames or closures) writes a ``runner_tampering`` flag instead."""
    tag = nonce + " {"

    def emit(**event):
        caller = _getframe(1).f_code
        if _id(caller) not in trusted:
            event = {"event": "flag", "flag": "runner_tampering",
                     "detail": "the runner's emitter was called from " + _str(caller.co_filename)[-150:]}
        parts = []
        for key, value in event.items():
            if _isinstance(value, _bool):
                value = _int(value)
            elif not _isinstance(value, (_int, _str)):
                value = _str(value)
            parts.append(_quote(key) + ": " + (_quote(value) if _isinstance(value, _str) else _int.__repr__(value)))
        data = (tag + ", ".join(parts) + "}\n").encode("utf-8", "replace")
        while data:
            data = data[_write(fd, data):]
    return emit


def fingerprint(code, _sha=hashlib.sha256, _code=types.CodeType, _tuple=tuple, _isinstance=isinstance,
                _type=type, _repr=repr):
    """A digest of a code object and the code objects it holds (names, bytecode, constants)."""
    def walk(co):
        consts = _tuple(walk(c) if _isinstance(c, _code) else (_type(c).__name__, _repr(c)) for c in co.co_consts)
        return (co.co_name, co.co_code, co.co_names, co.co_varnames, co.co_freevars, co.co_cellvars,
                co.co_firstlineno, co.co_filename, consts)
    return _sha(_repr(walk(code)).encode("utf-8", "replace")).hexdigest()


def _walk(code, prefix, rel, out):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            name = prefix + c.co_name
            out.setdefault((rel, name), set()).add(fingerprint(c))
            _walk(c, name + ".", rel, out)


def test_codes(folder, modules):
    """``{(module path, qualified name): {fingerprints}}`` of every function in ``modules`` (paths
    relative to ``folder``), compiled as pytest's assertion rewriting compiles them, and plainly."""
    from pathlib import Path
    from _pytest.assertion.rewrite import _rewrite_test
    out = {}
    for rel in modules:
        path = os.path.join(folder, rel)
        codes = []
        try:
            codes.append(_rewrite_test(Path(path), None)[1])
        except Exception:  # noqa: BLE001 - a module that does not compile fails at collection
            pass
        try:
            with open(path, "rb") as fh:
                codes.append(compile(fh.read(), path, "exec", dont_inherit=True))
        except Exception:  # noqa: BLE001
            pass
        for code in codes:
            _walk(code, "", rel, out)
    return out


def node_key(nodeid):
    """``tests/t.py::TestA::test_b[1]`` -> ``("tests/t.py", "TestA.test_b")``."""
    parts = nodeid.split("::")
    return parts[0], ".".join(p.split("[", 1)[0] for p in parts[1:])


def inside(path, root):
    """True when file ``path`` (absolute; ``<frozen ...>``, ``<string>`` are not files) lies under
    folder ``root``."""
    if not isinstance(path, str) or not path.startswith("/"):
        return False
    try:
        return os.path.realpath(path).startswith(root)
    except (TypeError, ValueError):
        return False


def genuine(fn, expected, _fp=fingerprint, _code=types.CodeType, _getattr=getattr, _isinstance=isinstance):
    """How ``fn`` (an item's test function) is the test of the ``expected`` fingerprints: ``True``
    when its own code is; the genuine code object when ``fn`` wraps it (``__wrapped__``, hypothesis'
    ``inner_test``), whose normal return :func:`recorder` must then see happen; ``None`` when
    neither. (Helpers are bound as defaults here and below: patching globals or builtins changes
    nothing.)"""
    for depth in range(8):
        func = _getattr(fn, "__func__", fn)
        code = _getattr(func, "__code__", None)
        if _isinstance(code, _code) and _fp(code) in expected:
            return True if depth == 0 else code
        fn = _getattr(func, "__wrapped__", None) or _getattr(_getattr(func, "hypothesis", None), "inner_test", None)
        if fn is None:
            return None
    return None


def watched(fn, code, args, kwargs, _settrace=sys.settrace, _gettrace=sys.gettrace):
    """Call ``fn``; ``(result, True)`` when a frame running ``code`` returned normally during the
    call (a trace function on that frame only: an ``exception`` event not followed by a ``line``
    one means the frame left by an exception). A test whose wrapper never runs the genuine
    function, or swallows its failure, is not seen to pass."""
    seen = [False]

    def tracer(frame, event, arg):
        if frame.f_code is not code:
            return None
        pending = [False]

        def local(frame, event, arg):
            if event == "exception":
                pending[0] = True
            elif event == "line":
                pending[0] = False
            elif event == "return" and not pending[0]:
                seen[0] = True
            return local
        return local
    old = _gettrace()
    _settrace(tracer)
    try:
        result = fn(*args, **kwargs)
    finally:
        _settrace(old)
    return result, seen[0]


def recorder(fn, name, ok, emit, _coro=inspect.iscoroutinefunction, _watched=watched, _true=True):
    """``fn`` wrapped so that its normal return emits ``ran name``: ``ok`` is :func:`genuine`'s
    answer (a genuine code object: the return must be seen by :func:`watched`). Async for a
    coroutine function (the evidence after the await; pytest-asyncio still sees one; wrapped
    coroutine tests get no evidence)."""
    if _coro(fn):

        async def genuine_test(*args, **kwargs):
            result = await fn(*args, **kwargs)
            if ok is _true:
                emit(event="ran", name=name)
            return result
        return genuine_test

    def genuine_test(*args, **kwargs):
        if ok is _true:
            result = fn(*args, **kwargs)
            emit(event="ran", name=name)
        elif ok is not None:
            result, seen = _watched(fn, ok, args, kwargs)
            if seen:
                emit(event="ran", name=name)
        else:
            result = fn(*args, **kwargs)
        return result
    return genuine_test


def plugin(emit, codes, folder, cwd, _genuine=genuine, _key=node_key, _recorder=recorder):
    """The pytest plugin (a fresh class whose state lives in this closure, not on the instance):
    each genuine test function's normal return (``ran``), each outcome (``test``), ``end``."""
    import functools
    import shutil
    import pytest
    results, collected, root = {}, [0], cwd.rstrip(os.sep)

    class Plugin:
        @pytest.hookimpl(tryfirst=True)
        def pytest_load_initial_conftests(self, early_config):
            """The working folder joins sys.path only now (no entry-point plugin from it)."""
            sys.path.insert(0, root)   # after pytest loaded its entry-point plugins: none from here

        def pytest_collectreport(self, report):
            """Emit a collection error with its message."""
            if report.failed:
                emit(event="collect_error", nodeid=report.nodeid, message=str(report.longreprtext)[-MSG:])

        def pytest_collection_modifyitems(self, session, config, items):
            """Count the tests; the test files leave the disk."""
            collected[0] = len(items)   # the test files leave the disk, as in the harness's pytest mode
            shutil.rmtree(folder, ignore_errors=True)

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_call(self, item):
            """Swap the test for its recorder, which alone can emit ``ran``."""
            fn, name = getattr(item, "obj", None), item.nodeid
            if fn is None:
                return
            ok = _genuine(fn, codes.get(_key(name), ()))
            genuine_test = _recorder(fn, name, ok, emit)
            try:
                functools.update_wrapper(genuine_test, fn)
            except (AttributeError, TypeError):
                pass
            item.obj = genuine_test

        def pytest_runtest_logreport(self, report):
            """Emit each test's outcome once, at teardown."""
            outcome, msg = results.get(report.nodeid, (None, ""))
            if report.failed:
                outcome = "failed" if report.when == "call" else (outcome if outcome in ("failed", "error") else "error")
                msg = (msg + "\n" + str(report.longreprtext))[-MSG:]
            elif report.skipped and outcome is None:
                outcome = "skipped"
            elif report.passed and report.when == "call":
                outcome = "passed"
            results[report.nodeid] = (outcome, msg)
            if report.when == "teardown":
                emit(event="test", name=report.nodeid, outcome=outcome or "error", message=msg.strip())

        def pytest_sessionfinish(self, session, exitstatus):
            """Emit the end marker (no marker: the harness reads a crash)."""
            emit(event="end", exitstatus=int(exitstatus), collected=collected[0])
    return Plugin()


def testside(rel):
    """True for a test-side support file, as :data:`sdk.tasks.change.TEST_GLOBS` has them (a change
    may not edit those: they are the task's own)."""
    parts = rel.split("/")
    name = parts[-1]
    return (len(parts) > 1 and parts[0] == "testing") or bool(set(parts[:-1]) & {"tests", "test"}) \
        or name.startswith("test_") \
        or name.endswith("_test.py") or name == "conftest.py"


def auditor(emit, cwd, _inside=inside, _testside=testside):
    """The PEP 578 hook: flag runner-reaching events whose caller is repository code (the
    innermost frame, past stdlib helpers that only pass a call on; test-side support files of
    the working folder are the task's own and not flagged)."""
    busy = []

    def from_repo():
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if _inside(name, cwd):
                return False if _testside(name[len(cwd):]) else name
            if not name.endswith(TRANSPARENT):
                return False
            frame = frame.f_back
        return False

    def hook(event, args):
        if busy or not (event in WATCHED or event in ("object.__setattr__", "open")):
            return
        busy.append(1)
        try:
            hit = event in WATCHED or (event == "object.__setattr__" and args and isinstance(args[0], type)
                                       and str(getattr(args[0], "__module__", "")).startswith(RUNNER)) \
                or (event == "open" and args and isinstance(args[0], str) and bool(MEMORY.match(args[0])))
            where = hit and from_repo()
            if where:
                emit(event="flag", flag="runner_tampering", detail="%s used %s %s" % (where, event, str(args)[:200]))
        except Exception:  # noqa: BLE001 - the hook never breaks the tests
            pass
        finally:
            busy.pop()
    return hook


def main():
    """Read the header, fingerprint the tests, run pytest with :class:`Plugin`, leave via ``_exit``."""
    here, _exit = os.path.dirname(os.path.abspath(__file__)), os._exit
    head = json.loads(_read_all(0).decode("utf-8"))
    trusted = {id(sys._getframe(0).f_code)}
    emit = emitter(int(head.pop("fd")), head.pop("nonce"), trusted)
    cwd = os.path.realpath(head["cwd"]) + os.sep
    sys.path[:0] = [here]   # the working folder joins once pytest's plugins are loaded (the plugin)
    sys.path += head.get("path", [])
    sys.dont_write_bytecode = True
    import tl_guard
    tl_guard.protect()
    import pytest
    folder = head["folder"]
    plug = plugin(emit, test_codes(folder, head["tests"]), folder, cwd)
    hook = auditor(emit, cwd)
    trusted.update(id(c) for c in recorder.__code__.co_consts if isinstance(c, types.CodeType))
    trusted.update(id(f.__code__) for f in list(vars(type(plug)).values()) + [hook] if hasattr(f, "__code__"))
    sys.addaudithook(hook)
    sys.modules["__main__"] = types.ModuleType("__main__")   # this module is not reachable by name
    main_ = pytest.main
    emit(event="started")
    try:
        main_(head["args"], plugins=[plug])
    except BaseException as exc:  # noqa: BLE001 - reported; the parent decides
        emit(event="runtime_error", message=("%s: %s" % (type(exc).__name__, exc))[-MSG:])
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            _exit(0)


if __name__ == "__main__":
    main()
