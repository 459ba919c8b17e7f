"""The witness's reading of the live stack (split from :mod:`tl_witness`, issue 14); stdlib only.

What :mod:`tl_witness`'s audit hook relies on to say a genuine test returned (see that module for the
whole argument and what it leaves open): :func:`fingerprint` of a code object, the trace functions of
each test's call phase (:func:`tracer`, which hands the test's frame to :func:`local`, armed with
:mod:`tl_rguard`'s marks), :func:`id_reader` of a pytest item's node id and :func:`witness`, the check of
the frame that raised ``tl.ran``. Nothing here holds a secret; :mod:`tl_witness` re-exports every name.
"""

import dis
import hashlib
import os
import sys
import types

RETURNS = frozenset(dis.opmap[n] for n in ("RETURN_VALUE", "RETURN_CONST") if n in dis.opmap)
SAFE = (str, bytes, int, float, complex, bool, type(None), type(Ellipsis))
NODEID = "_nodeid"


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
