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

import dis
import hashlib
import json
import os
import re
import sys
import types

MSG = 2000
RETURNS = frozenset(dis.opmap[n] for n in ("RETURN_VALUE", "RETURN_CONST") if n in dis.opmap)
SAFE = (str, bytes, int, float, complex, bool, type(None), type(Ellipsis))
NODEID = "_nodeid"
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


def fingerprint(code, _sha=hashlib.sha256, _code=types.CodeType, _type=type, _repr=repr, _safe=SAFE,
                _function=types.FunctionType, _key=object.__hash__):
    """A digest of a code object and those it holds (name, bytecode, names, constants, exception
    table, flags, file, first line); ``None`` when a field or constant is not of an exact builtin
    type (no method of a foreign object is ever called). A function constant (the shadow's helpers,
    :func:`tl_shadow.bind`) counts by identity: code bound to other functions differs."""
    def names(t):
        if _type(t) is not tuple or any(_type(x) is not str for x in t):
            raise ValueError
        return t

    def const(c):
        t = _type(c)
        if t is _code:
            return walk(c)
        if t is tuple or t is frozenset:
            return (t.__name__, tuple(const(x) for x in c))
        if t in _safe:
            return (t.__name__, _repr(c))
        if t is _function:
            return ("function", _key(c))
        raise ValueError

    def walk(co):
        head = (co.co_name, co.co_qualname if hasattr(co, "co_qualname") else "", co.co_filename)
        if any(_type(x) is not str for x in head):
            raise ValueError
        return (head, co.co_code, names(co.co_names), names(co.co_varnames), names(co.co_freevars),
                names(co.co_cellvars), co.co_firstlineno, co.co_flags, getattr(co, "co_exceptiontable", b""),
                tuple(const(c) for c in co.co_consts))
    try:
        return _sha(_repr(walk(code)).encode("utf-8", "replace")).hexdigest()
    except (ValueError, RecursionError):
        return None


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


def node_key(nodeid):
    """``tests/t.py::TestA::test_b[1]`` -> ``("tests/t.py", "TestA.test_b")``."""
    parts = nodeid.split("::")
    return parts[0], ".".join(p.split("[", 1)[0] for p in parts[1:])


_SEEKING = []   # the global trace function of :func:`tracer` (reachable; it decides nothing)
_ARMED = []     # (local armed by :func:`arm`, marks, its state, budget), read once by :func:`tracer`


def local(frame, event, arg, _audit=sys.audit, _settrace=sys.settrace, _state=None, _probe=None, _self=None):
    """The trace function of a test function's frame: at its ``return`` it asks the hook to look
    (it decides nothing and holds nothing secret), and the seeking trace function takes over again.
    Armed (:func:`arm`), for the frame's first :data:`tl_rguard.BUDGET` opcodes (``_state``: the
    count left and the frame's marks, set by :func:`tracer`), before a load of a runner name it asks
    the hook to check them (``tl.step``) and before a comparison it probes the operands."""
    if event == "opcode":
        if _state is None or _state[0] <= 0:
            frame.f_trace_opcodes = False
        else:
            _state[0] -= 1
            kind = _state[1].get(frame.f_lasti)
            if kind == 1:
                _audit("tl.step")
            elif kind:   # 2: a comparison (probed), 3: a shadow helper's name (tl_shadow.guarded)
                _probe(frame, kind)
        return local if _self is None else _self
    if event == "return":
        if _SEEKING:
            _settrace(_SEEKING[-1])
        _audit("tl.ran")
    return local if _self is None else _self


def tracer(folder, names):
    """The global trace function for a test's call phase: :func:`local` for a frame of a module
    under ``folder`` running a function named as a test (``names``); then, until that frame
    returns, the global trace function is the C builtin ``getattr`` (``getattr(frame, "call",
    None)`` is None: nested calls are not traced, at the cost of a C call, where a Python trace
    function made call-heavy tests 5-8x slower). Cheap filters only; the hook checks the code."""
    root, names = folder.rstrip(os.sep) + os.sep, frozenset(n for n in names if n.startswith("test"))

    def trace(frame, event, arg, _settrace=sys.settrace, _quiet=getattr, _armed=_ARMED[-1] if _ARMED else None):
        g = frame.f_globals
        f = g.get("__file__") if type(g) is dict else None
        code = frame.f_code
        if type(f) is str and f.startswith(root) and code.co_name in names:
            frame.f_trace_lines = False
            if _armed is not None:   # (local, marks, state): the test's marks and a fresh budget
                at = _armed[1].get((code.co_filename, code.co_firstlineno, code.co_qualname, len(code.co_code)))
                _armed[2][:] = [_armed[3] if at else 0, at]
                frame.f_trace_opcodes = bool(at)
            _settrace(_quiet)
            return local if _armed is None else _armed[0]
        return None
    _SEEKING.append(trace)
    return trace


def id_reader(nodes):
    """``read(item)``: the node id of a pytest item, or ``None``, read from its slots or instance
    dict through descriptors captured now (``nodes`` is ``_pytest.nodes``): no property and no
    method of the item runs, every value is checked by exact type. pytest >= 9.2 keeps a
    ``NodeId`` in the ``_id`` slot; older versions a ``_nodeid`` str in the instance dict."""
    slot = vars(nodes.Node).get("_id")
    if slot is not None:
        from _pytest.nodeid import NodeId
        path_d, names_d, params_d = (vars(NodeId)[k] for k in ("path", "names", "params"))

        def read(item):
            try:
                v = slot.__get__(item)
                if type(v) is not NodeId:
                    return None
                path, names, params = path_d.__get__(v), names_d.__get__(v), params_d.__get__(v)
            except (TypeError, AttributeError):
                return None
            if type(path) is not str or type(names) is not tuple or any(type(x) is not str for x in names) \
                    or (params is not None and type(params) is not str):
                return None
            text = "::".join((path,) + names)
            return text if params is None else text + "[" + params + "]"
        return read
    owner = next(k for k in nodes.Item.__mro__ if "__dict__" in vars(k))
    dict_d = vars(owner)["__dict__"]

    def read_old(item):
        try:
            d = dict_d.__get__(item)
        except TypeError:
            return None
        for k, v in dict.items(d) if type(d) is dict else ():
            if k is NODEID:
                return v if type(v) is str else None
        return None
    return read_old


def witness(codes, runtest_code, read, _fp=fingerprint, _key=node_key, _type=type, _str=str,
            _local=local.__code__, _returns=RETURNS):
    """``check(frame)``: the node id whose genuine test function the frame ``frame`` (the caller of
    ``sys.audit('tl.ran')``) shows returning normally, ``None`` when it shows nothing, or
    ``False`` when the event did not come from the runner's trace function (see the module
    docstring). ``read`` is :func:`id_reader`'s."""
    cache = {}

    def fp_of(code):
        hit = cache.get(id(code))
        if hit is None or hit[0] is not code:
            hit = cache[id(code)] = (code, _fp(code))
        return hit[1]

    def check(t):
        if t is None or t.f_code is not _local:
            return False
        event = t.f_locals.get("event")
        f = t.f_back
        if _type(event) is not _str or event != "return" or f is None or f.f_lasti < 0:
            return None
        code = f.f_code
        if code.co_code[f.f_lasti] not in _returns:
            return None
        fp, between, g = fp_of(code), [], f.f_back
        while g is not None and g.f_code is not runtest_code:
            between.append(g.f_code)
            g = g.f_back
        if fp is None or g is None:
            return None
        nid = read(g.f_locals.get("item"))
        expected = codes.get(_key(nid)) if nid is not None else None
        if not expected or fp not in expected or any(fp_of(c) in expected for c in between):
            return None
        return nid
    return check


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
    sys.addaudithook(_hook(emit, check, source, frames, moved, lib, shadow, tl_proof.runner_dirs(__name__)))


FOLDER = []   # the tests folder (set by test_codes)


def memory(path, _type=type):
    """True when ``path`` (an ``open`` event's str or bytes) names this or another process's memory
    or its map under ``/proc``, however spelled (``//``, ``/./``, ``..``)."""
    if _type(path) is bytes:
        path = os.fsdecode(path)
    return _type(path) is str and bool(MEMORY.match(os.path.normpath(path)))


def _hook(emit, check, source, frames, moved, lib, shadow, dirs, _getframe=sys._getframe, _type=type, _safe=safe, _watched=frozenset(WATCHED),
          _frame_events=frozenset({"sys._getframe", "object.__getattr__"}),
          _frame_attrs=frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_code", "__code__", "gi_code",
                                  "cr_code", "ag_code"})):
    import tl_rguard
    from tl_proof import owner as _owner
    from tl_shadow import intact as _intact
    busy, done, said = [], set(), set()
    guard, _trusted, _guard_events = tl_rguard.events(emit, moved, lib, said), tl_rguard.Trusted, tl_rguard.EVENTS

    def tampering(event, args):
        if event in _watched:
            return True
        if event == "object.__setattr__":
            mod = _owner(args[0] if args else None, dirs, RUNNER)   # a runner's class or defaults, a module's class
            return _type(mod) is str and mod.startswith(RUNNER)
        return event == "open" and bool(args) and memory(args[0])

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
