"""Who may say a repository test ran (the evidence of :mod:`tl_repo`, issue 17); stdlib only.

A change task's tests run in the same process as the candidate repository, so nothing a Python
object holds is out of the candidate's reach: a closure cell, a default, a ``__code__``, a
function rebuilt with ``types.FunctionType`` from the runner's own code. The evidence that a
test's genuine function returned normally is therefore not decided by any function object the
repository can reach. It is decided by a PEP 578 audit hook (:func:`arm`), the only holder of the
nonce and of the report descriptor: Python has no way to list or fetch audit hooks, and the ``gc``
walks that could find its closure are themselves audited events it flags.

The hook writes ``ran <node id>`` only from facts of the live interpreter stack, read when the
runner's trace function (:func:`local`, reachable and holding nothing secret) raises the
``tl.ran`` audit event:

- the caller of ``sys.audit`` is a frame running :func:`local`'s own code object (captured before
  any repository code ran) with its ``event`` argument ``"return"``;
- that frame's caller is a frame whose code is one of the node's genuine test functions (the
  fingerprint of the pristine module compiled as pytest compiles it: bytecode, constants, names,
  exception table, flags; a code object rebuilt with other constants or handlers differs) and
  that frame is *at a return instruction*: it is returning normally (an exception unwinding it
  stops at the raising instruction). Only the interpreter calls a trace function from a frame
  standing at its return instruction, so neither calling :func:`local` (or a function rebuilt
  from its code, with any cells or defaults) from elsewhere nor ``sys.audit('tl.ran')`` counts;
- going outwards, the first frame running pytest's own ``pytest_runtest_call`` (its code object,
  captured before repository code ran) holds the item; its node id is read from the item's
  instance dict (no property, no repository method runs inside the hook), and the genuine frame
  is the outermost frame of that node's test code below it (a genuine call nested in another,
  e.g. repository code calling the test again with other arguments, is not evidence).

Inside the hook no code of the repository runs: objects are checked by exact type before any
use, constants are fingerprinted only when of exact builtin types, keys are compared by identity.

Not covered: ``ran`` means the genuine test function returned normally for that node id, not
that the test passed: unittest ``subTest`` failures are recorded without raising; a test called
(by a wrapper the repository installs) with fixture or parameter values other than pytest's, or a
node id rewritten on the item (``item._nodeid``), with pytest's reports also forged, could still
pass; a repository that makes what the test calls lie (``pytest.raises``, an ``==``, a builtin, or
the test's code rebuilt with other globals) makes the genuine code return normally: the evidence is
about the runner, the test's strength is the task's (a public function or class of pytest's,
pluggy's or unittest's modules rebound, or such a module replaced, is flagged when the test loads
such a name or returns: :func:`tl_proof.rebinding`; an ``==`` that answers yes to anything is probed
before the test's comparisons: :mod:`tl_rguard`, which says what those layers leave open; a builtin
is not checked). The trace function is set for the call phase only (a genuine function run from a
fixture or another thread is not evidence).
A test that replaces ``sys.settrace`` itself loses its evidence (it fails, flagged).
The ``f_trace`` jump (repository code setting a trace function on the genuine test's frame and
jumping over a failing ``assert`` through ``f_lineno``) needs that frame: obtaining a running test's
frame, or a test function's code object, from repository code is flagged
(:func:`tl_proof.watcher`, H4); a signal handler is given a stand-in (:mod:`tl_rguard`). Reading
process memory through ``ctypes`` is flagged, not prevented (``/proc/self/mem`` is closed: the test
process is not dumpable); the nonce is a Python string in the hook's closure, so a ``gc`` walk
finds it: pure Python cannot keep it out of reach, the flag of :mod:`tl_proof` is the line.
"""

import json
import os
import re
import sys
import types

from tl_wtrace import (_ARMED, _SEEKING, NODEID, RETURNS, SAFE, fingerprint, id_reader,  # noqa: F401 - re-exported
                       local, node_key, tracer, witness)

MSG = 2000
WATCHED = {"sys.settrace", "sys.setprofile", "sys._current_frames", "gc.get_objects", "gc.get_referrers",
           "gc.get_referents", "sys.addaudithook", "ctypes.string_at", "ctypes.cdata", "ctypes.call_function",
           "sys.monitoring.register_callback", "os.fork", "os.forkpty"}
RUNNER = ("_pytest", "pytest", "pluggy", "unittest", "tl_", "__main__")
MEMORY = re.compile(r"^/proc/(self|thread-self|\d+)/(task/\d+/)?(mem|maps|smaps|pagemap|environ)$")


def emitter(fd, nonce, _write=os.write, _quote=json.encoder.encode_basestring_ascii, _str=str, _int=int,
            _type=type):
    """``emit(**event)``: one ``<nonce> <json>`` line on ``fd`` (str or int values, built with the
    C string quoter and builtins bound here). Only :func:`arm`'s hook holds it."""
    tag = nonce + " {"

    def emit(**event):
        parts = []
        for key, value in event.items():
            if _type(value) is not _int and _type(value) is not _str:
                value = "?"
            parts.append(_quote(key) + ": " + (_quote(value) if _type(value) is _str else _int.__repr__(value)))
        data = (tag + ", ".join(parts) + "}\n").encode("utf-8", "replace")
        while data:
            data = data[_write(fd, data):]
    return emit


def _walk(code, prefix, rel, out):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            name = prefix + c.co_name
            out.setdefault((rel, name), set()).add(fingerprint(c))
            _walk(c, name + ".", rel, out)


def test_codes(folder, modules):
    """``{(module path, qualified name): {fingerprints}}`` of every function in ``modules`` (paths
    relative to ``folder``), compiled as pytest's assertion rewriting compiles them, and plainly."""
    import tl_inherit
    import tl_rguard
    out = {}
    FOLDER[:] = [folder]
    for rel in modules:
        for code in tl_rguard.module_codes(os.path.join(folder, rel)):
            _walk(code, "", rel, out)
        with open(os.path.join(folder, rel), "rb") as fh:   # a mixin's tests: node C::test_m runs A.test_m's code
            for name, ancestors in tl_inherit.inherited(fh.read()).items():
                out.setdefault((rel, name), set()).update(*(out.get((rel, a), ()) for a in ancestors))
    return out


def safe(args, _type=type):
    """A short text of audit ``args`` built from exact str/int/bytes items only (no ``repr`` of a
    foreign object runs inside the hook)."""
    out = []
    for a in args if _type(args) is tuple else ():
        out.append(repr(a)[:80] if _type(a) in (str, int, bytes) else "<object>")
    return ", ".join(out)[:200]


def arm(fd, nonce, codes, cwd, marks=None, shadow=None):
    """Install the audit hook that alone holds the nonce (nothing is returned, so no frame of the
    caller keeps it): ``ran`` lines from :func:`witness`, ``runner_tampering`` flags for a
    ``tl.ran`` event from elsewhere and for a watched event not proven to come from trusted code
    (:mod:`tl_proof`: the runner's, pytest's or pluggy's code objects as armed, or the pristine
    test functions). Call once pytest is imported and before any repository code runs."""
    import _pytest.nodes
    import _pytest.runner
    import pluggy
    import tl_proof
    emit = emitter(fd, nonce)
    check = witness(codes, _pytest.runner.pytest_runtest_call.__code__, id_reader(_pytest.nodes))
    dirs = tuple(os.path.realpath(os.path.dirname(m.__file__)) + os.sep
                 for m in (_pytest.nodes, pluggy, sys.modules[__name__]))
    fps = set().union(*codes.values()) if codes else set()
    files = {os.path.join(FOLDER[0], rel) for rel, _ in codes} if FOLDER else set()
    source = tl_proof.prover(tl_proof.registry(dirs), frozenset(fps) - {None}, frozenset(files), fingerprint)
    frames = tl_proof.watcher(source.trusted, frozenset(fps) - {None}, frozenset(files), fingerprint,
                               tl_proof.libraries(cwd, FOLDER[0] if FOLDER else cwd, sys.path))
    lib = tl_proof.trusted_code(frozenset(fps) - {None}, frozenset(files), fingerprint,
                                tl_proof.libraries(cwd, FOLDER[0] if FOLDER else cwd, sys.path))
    if marks is not None:   # the armed trace function, bound before the hook can flag a rebinding of it
        import tl_rguard
        import tl_shadow
        armed, state = types.FunctionType(local.__code__, local.__globals__, "local"), [0, None]
        armed.__defaults__ = (sys.audit, sys.settrace, state, tl_shadow.guarded(shadow, tl_rguard.probe), armed)
        _ARMED.append((armed, marks, state, tl_rguard.BUDGET))
    moved = tl_proof.rebinding()
    if marks is not None:
        moved = tl_rguard.with_globals(moved, tl_rguard.imports(FOLDER[0], sorted({r for r, _ in codes}))
                                       if FOLDER else {})
    sys.addaudithook(_hook(emit, check, source, frames, moved, lib, shadow, tl_proof.runner_dirs(__name__),
                           _layers(source, fps, files, cwd)))


def _layers(source, fps, files, cwd):
    """What the hook needs for :mod:`tl_rmods` and :mod:`tl_rhide`: ``(reader, mine)``, the judge of a
    guarded test module's read and the folders of the runner's own files (whose functions' defaults
    hold the layers' state); binds the tests folder into :func:`tl_rhide.hide`."""
    import _thread

    import tl_proof
    import tl_rhide
    import tl_rmods
    if FOLDER:
        tl_rhide.hide.__defaults__ = (FOLDER[0].rstrip(os.sep) + os.sep,)
    libs = tl_proof.libraries(cwd, FOLDER[0] if FOLDER else cwd, sys.path)
    reader = tl_rmods.judge(source.trusted, frozenset(fps) - {None}, frozenset(files), fingerprint, libs,
                            _thread.get_ident())
    here = os.path.dirname(os.path.abspath(__file__))
    return reader, frozenset({here, os.path.realpath(here)})


def _tampering(dirs, watched, _type=type, _modname=type.__dict__["__module__"].__get__):
    """``tampering(event, args)`` of the hook: a watched event, a runner's class or defaults (or a runner
    module's class) set, a guarded test module's class put back (:mod:`tl_rmods`), or an ``open`` of
    process memory."""
    from tl_proof import owner as _owner

    def tampering(event, args):
        if event in watched:
            return True
        if event == "object.__setattr__" and len(args) == 3 and args[1] == "__class__" \
                and _modname(_type(args[0])) == "tl_rmods":
            return True
        if event == "object.__setattr__":
            mod = _owner(args[0] if args else None, dirs, RUNNER)   # a runner's class or defaults, a module's class
            return _type(mod) is str and mod.startswith(RUNNER)
        return event == "open" and bool(args) and memory(args[0])
    return tampering


def _layer(source, reader, mine, _getframe=sys._getframe, _safe=safe):
    """``layer(event, args)`` of the hook: ``(trusted, why)`` for a guarded test module's attribute
    (``tl.mod``, :mod:`tl_rmods`), a handed test class's function's defaults (``tl_rhanded.viewed``: judged as
    that read, round 10) or a runner function's defaults read (``object.__getattr__``)."""
    from tl_rhanded import viewed as _viewed

    def layer(event, args):
        if event == "tl.mod":
            why = reader(_getframe(2))
            return why is None, why and "%s read a test module's attribute (%s) while a test ran" % (why, _safe(args))
        if _viewed(args[0]):
            why = reader(_getframe(2))
            return False, why and "%s read a test module's attribute (a handed method's %s) while a test ran" % (
                why, args[1])
        where = source(_getframe(2), event) if _runner_fn(args[0], mine) else None
        return False, where and "%s read a runner function's %s" % (where, args[1])
    return layer


def _runner_fn(fn, mine, _type=type, _code=types.FunctionType.__dict__["__code__"].__get__):
    """True when ``fn`` is a function of the runner's own files (``tl_*.py`` in a folder of ``mine``)."""
    if _type(fn) is not types.FunctionType:
        return False
    name = _code(fn).co_filename
    return _type(name) is str and os.path.dirname(name) in mine and os.path.basename(name).startswith("tl_")


FOLDER = []   # the tests folder (set by test_codes)


def memory(path, _type=type):
    """True when ``path`` (an ``open`` event's str or bytes) names this or another process's memory
    or its map under ``/proc``, however spelled (``//``, ``/./``, ``..``)."""
    if _type(path) is bytes:
        path = os.fsdecode(path)
    return _type(path) is str and bool(MEMORY.match(os.path.normpath(path)))


def _hook(emit, check, source, frames, moved, lib, shadow, dirs, layers, _getframe=sys._getframe, _type=type, _safe=safe,
          _watched=frozenset(WATCHED), _state=frozenset({"__defaults__", "__kwdefaults__"}),
          _frame_events=frozenset({"sys._getframe", "object.__getattr__"}),
          _frame_attrs=frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_code", "__code__", "gi_code",
                                  "cr_code", "ag_code"})):
    import tl_rguard
    from tl_shadow import intact as _intact
    busy, done, said = [], set(), set()
    guard, _trusted, _guard_events = tl_rguard.events(emit, moved, lib, said), tl_rguard.Trusted, tl_rguard.EVENTS

    tampering, layer = _tampering(dirs, _watched), _layer(source, *layers)
    def hook(event, args):
        if busy or _type(event) is not str or not (event[:3] == "tl." or event in _watched or event == "open"
                                                   or event == "object.__setattr__" or event in _frame_events):
            return
        busy.append(1)
        trusted = False
        try:
            if event in _guard_events:
                trusted = guard(event, args)
            elif event == "tl.ran":
                nid = check(_getframe(1))
                if nid is not False and shadow is not None and not _intact(_getframe(1).f_back, shadow):
                    emit(event="flag", flag="runner_tampering", detail="the shadow helpers were rebound before "
                                                                        "a test returned")   # or raised
                if nid is False:
                    emit(event="flag", flag="runner_tampering", detail="sys.audit('tl.ran') outside the runner's tracer")
                elif nid is not None and nid not in done:
                    done.add(nid)
                    lie = moved()   # what the test called may have been swapped for a liar (pytest.raises...)
                    if lie:
                        emit(event="flag", flag="runner_tampering", detail="%s was rebound before %s" % (lie, nid))
                    emit(event="ran", name=nid)
            elif event == "tl.mod" or (event == "object.__getattr__" and _type(args) is tuple and len(args) == 2
                                       and args[1] in _state):
                trusted, why = layer(event, args)
                if why and why not in said:
                    said.add(why)
                    emit(event="flag", flag="runner_tampering", detail=why)
            elif event in _frame_events:
                why = frames(event, args, _getframe(1)) if event == "sys._getframe" or (
                    _type(args) is tuple and len(args) == 2 and args[1] in _frame_attrs) else None
                if why and why not in said:   # once per culprit: a loop of reads is one flag, not a flood
                    said.add(why)
                    emit(event="flag", flag="runner_tampering", detail=why)
            elif tampering(event, args):
                where = source(_getframe(1), event)
                if where:
                    emit(event="flag", flag="runner_tampering", detail="%s used %s %s" % (where, event, _safe(args)))
        except Exception:  # noqa: BLE001 - the hook never breaks the tests
            pass
        finally:
            busy.pop()
        if trusted is True:
            raise _trusted
    return hook
