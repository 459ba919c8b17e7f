"""The candidate's side of values crossing to and from the harness (stdlib only).

Values leave as plain JSON, as handles (``{"h": id}``: the solution's own classes, functions,
anything the harness would not rebuild) or as pickles of trusted classes (:mod:`tl_pickle`;
the harness decodes them with a restricted unpickler, so this side only decides what is *worth*
sending by value: the harness's rules are the ones that hold). Values from the harness are
decoded with the plain unpickler (the harness is trusted); a test's object that cannot live
here (a lambda, a callback) arrives as a :class:`HarnessProxy`, used through calls back.

The solution module's value classes that the harness rebuilds from the task's own file
(:meth:`Values.take_values`, :mod:`tl_pristine`) leave by value. A test's namedtuple or dataclass
arrives as a record with its fields (:class:`tl_hproxy.Records`) and goes back as the test's
object. An instance of another untrusted subclass of a builtin value type (a ``namedtuple``, an ``IntEnum``
member, a ``str`` subclass of the solution's, ``numpy.float64``) leaves as its *base value*
(:func:`base_value`: read with the base type's own slots, so no method of the subclass runs), at
the top level and inside plain containers; the tests then compare plain data in the harness, so
an overridden ``__eq__`` never decides anything there.
"""

import builtins
import copyreg
import io
import os
import pickle
import sys
import types

import tl_pickle
import tl_wire
from tl_hproxy import HARNESS_TYPES, HarnessCallable, HarnessIterator, HarnessMapping, HarnessProxy, Records  # noqa: F401

SCALARS = (type(None), bool, int, float, complex, str, bytes)
BOUND = (types.MethodType, types.BuiltinMethodType, types.MethodWrapperType)   # reduce to getattr: honest
CONTAINERS = (list, tuple, dict, set, frozenset)
TRUTHS = ("__eq__", "__lt__", "__le__", "__gt__", "__ge__", "__contains__")
LIES = TRUTHS + ("__ne__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__")


def base_value(obj, t):
    """The exact builtin value under ``obj`` (of type ``t``, a subclass of a builtin value type),
    read through the base type's own slots (``int.__int__``, ``str.__str__``, full slices...), never
    through a method the subclass defines; None when ``t`` subclasses none of them. Elements of a
    container are not converted here (see :meth:`Values.lower`)."""
    if issubclass(t, int):
        return int.__int__(obj)
    if issubclass(t, float):
        return float.__float__(obj)
    if issubclass(t, complex):
        return complex(complex.real.__get__(obj), complex.imag.__get__(obj))
    if issubclass(t, str):
        return str.__str__(obj)
    for base in (bytes, tuple, list):
        if issubclass(t, base):
            return base.__getitem__(obj, slice(None))
    if issubclass(t, dict):
        return dict(dict.items(obj))
    if issubclass(t, frozenset):
        return frozenset(frozenset.__iter__(obj))
    if issubclass(t, set):
        return set(set.__iter__(obj))
    return None


class Values:
    """Mixin of :class:`tl_candidate.Candidate`: needs ``handles``, ``handle()``, ``trust``,
    ``reader``, ``wfd``, ``afd`` and ``answer(req)``."""

    def value(self, tree):
        """A value from the harness (plain, a handle, or a pickle of the trusted harness's)."""
        return tl_wire.decode(tree, lambda key, _t: self.handles[key],
                              loads=lambda text: tl_pickle.loads_trusted(text, self.load_id))

    def load_id(self, pid):
        """A persistent id of the harness's pickle: a local handle, a reverse handle (proxy back to the harness), or a value."""
        if pid[0] == "h":
            return self.handles[pid[1]]
        if pid[0] == "m":   # a module, by name (the harness's repository or standard modules)
            import importlib
            return importlib.import_module(pid[1])
        if pid[0] == "c":   # a value class of the solution's module, the harness's is the task's (tl_pristine)
            return self.trust.pristine[pid[1]]
        if pid[0] == "r" and len(pid) == 6 and pid[3] == "class":   # a test's class, by its namespace
            return self.records.test_class(pid[1], pid[2], pid[4], pid[5])
        if pid[0] == "r" and len(pid) == 7 and pid[3] == "record":   # a test's namedtuple, dataclass, attrs instance
            return self.records.build(pid[1], pid[2], *pid[4:])
        if pid[0] == "r":
            seen = self.__dict__.setdefault("_tl_reverse", {})   # one proxy per harness object
            if pid[1] not in seen:
                kind = {("mapping",): HarnessMapping, ("iterator",): HarnessIterator,
                        ("callable",): HarnessCallable}.get(tuple(pid[3:]), HarnessProxy)
                seen[pid[1]] = kind(self, pid[1], pid[2])
            return seen[pid[1]]
        return self.value(pid[1])

    def take_values(self, names):
        """The names of ``names`` that are value classes of the solution's module (the harness
        rebuilds them as the task's own classes, :mod:`tl_pristine`): their instances now cross
        by value (``Trust.pristine``). Solution code runs only in the lookups of this module."""
        found = {}
        space = self.module.__dict__ if self.module is not None else {}
        for name in names if type(names) is list else ():
            cls = space.get(name) if type(name) is str else None
            if isinstance(cls, type) and cls.__module__ == self.trust.target and cls.__qualname__ == name:
                found[name] = cls
        self.trust.pristine = found
        return sorted(found)

    def persistent_id(self, obj):
        """None: pickle ``obj`` by value (a trusted class, :mod:`tl_pickle`); else a handle."""
        t = type(obj)
        if t in tl_pickle.EXACT or t is bytearray:
            return None
        if t in HARNESS_TYPES:
            return ("r", obj._tl_rid, obj._tl_type)
        if self.records.is_record(obj):   # a test's record goes back as the test's object itself
            return self.records.pid(obj)
        if tl_pickle.std_iterator(t):   # stepped where it lives (``iter(xs)``, a generator, ``count()``)
            return ("h", self.handle(obj), t.__name__[:80])
        if isinstance(obj, type) and self.trust.allowed_class(obj):
            return None
        if not isinstance(obj, type) and self.trust.allowed_class(t):
            return None
        if ("__reduce__" in t.__dict__ or "__reduce_ex__" in t.__dict__) and t not in BOUND:
            self._smuggle(obj)
        return ("h", self.handle(obj), t.__name__[:80])

    def _smuggle(self, obj):
        """Report a value (that stays here) whose ``__reduce__`` names a callable that is no
        trusted class (``os.system``...): an attempt to run code where it is unpickled."""
        try:
            self._guard(obj)
        except BaseException:  # noqa: BLE001 - solution code: whatever it does, the value stays here
            pass

    def _guard(self, obj):
        """The reduce tuple of a by-value object when it rebuilds from trusted classes only;
        else report it (a standard callable such as ``os.system``: runner_tampering) and raise
        PicklingError (the value then stays here behind a handle)."""
        rv = obj.__reduce_ex__(tl_pickle.PROTOCOL)
        if type(rv) is not tuple:
            return NotImplemented
        fn = rv[0] if rv else None
        if fn in (copyreg.__newobj__, copyreg.__newobj_ex__) or (isinstance(fn, type) and self.trust.allowed_class(fn)):
            return rv
        name = self.singleton(obj)
        if name is not None:   # ``UTC = Utc()`` reduced to ``_Utc()``: crosses by name, as the harness's own
            return name
        module = str(getattr(fn, "__module__", None) or "")
        # honest: a value rebuilt by its own class (functools.partial) or by a function of the
        # solution's module (toolz's curry); hostile: a standard callable such as os.system
        if tl_pickle.is_stdlib_module(module) and not (isinstance(fn, type) and isinstance(obj, fn)):
            name = "%s.%s" % (module, getattr(fn, "__qualname__", "?"))
            os.write(self.afd, ("runner_tampering __reduce__ naming %s\n" % name[:200]).encode())
        raise pickle.PicklingError("rebuilt by %r, not by a trusted class" % (fn,))

    def singleton(self, obj):
        """The public top-level name under which ``obj`` (not callable) is held by its own repository
        module (never the solution's), or None: the harness resolves that name in its own copy of
        the module (:meth:`tl_pickle.Trust.find`), a lookup that runs nothing of the candidate's."""
        module = getattr(type(obj), "__module__", None)
        mod = self.trust.repo_module(module) if type(module) is str and not callable(obj) else None
        for key, value in list(vars(mod).items()) if mod is not None else ():
            if value is obj and type(key) is str and key.isidentifier() and not key.startswith("_"):
                return key
        return None

    def lower(self, value, depth=0, memo=None):
        """``value`` with every untrusted builtin-subclass instance replaced by its base value
        (:func:`base_value`), at the top and inside exact list/tuple/dict/set/frozenset; parts
        that need no change (and cycles) are kept as they are."""
        t = type(value)
        if t in SCALARS or depth > tl_wire.MAX_DEPTH:
            return value
        memo = {} if memo is None else memo
        if id(value) in memo:
            return memo[id(value)]
        base = value
        if t not in CONTAINERS:
            if t in HARNESS_TYPES or self.trust.allowed_class(t) or self.records.is_record(value):
                return value
            try:
                base = base_value(value, t)
            except Exception:  # noqa: BLE001 - a layout that is not the builtin's: it stays a handle
                base = None
            if base is None:
                return value
            self.probe_lies(value, t)
        memo[id(value)] = value
        down = lambda v: self.lower(v, depth + 1, memo)  # noqa: E731
        bt = type(base)
        if bt is dict:
            out = {down(k): down(v) for k, v in base.items()}
            same = all(a is b for pair in zip(out.items(), base.items()) for a, b in zip(*pair))
        elif bt in CONTAINERS:
            out = bt(down(v) for v in base)
            same = bt in (list, tuple) and all(a is b for a, b in zip(out, base))
        else:
            out, same = base, True
        out = value if same and base is value else out
        memo[id(value)] = out
        return out

    def probe_lies(self, value, t):
        """Report (``always_equal``) a builtin subclass whose own comparison or arithmetic
        answers for an object it cannot know (``__eq__`` true, ``__sub__`` a number, against a
        fresh ``object()``): it crosses as its base value anyway, this only says it lied.
        Methods of standard-library classes (``IntEnum``...) are not probed; each type once."""
        probed = self.__dict__.setdefault("_tl_probed", set())
        if t in probed:
            return
        probed.add(t)
        stranger = object()
        for name in LIES:
            owner = next((k for k in t.__mro__ if name in k.__dict__), None)
            if owner is None or owner.__module__ in ("builtins", None) or tl_pickle.is_stdlib_module(owner.__module__):
                continue
            try:
                got = getattr(value, name)(stranger)
                lied = got is not NotImplemented and (not got if name == "__ne__" else bool(got) if name in TRUTHS else True)
            except BaseException:  # noqa: BLE001 - an honest method refuses a stranger
                continue
            if lied:
                os.write(self.afd, ("always_equal %s.%s answered for an unknown object\n" % (t.__name__[:80], name)).encode())
                return

    def global_ref(self, obj):
        """``{"g": [module, qualname, handle]}`` for a function, class or module of a repository
        module (never the solution's) that is reachable by that name; else NotPlain."""
        t = type(obj)
        if t is types.ModuleType:
            module, qual = getattr(obj, "__name__", None), ""
        elif t in (types.FunctionType, types.BuiltinFunctionType) or isinstance(obj, type):
            module, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        else:
            raise tl_wire.NotPlain("not a global")
        if type(module) is not str or type(qual) is not str or "<" in qual or self.trust.repo_module(module) is None:
            raise tl_wire.NotPlain("not a repository global")
        found = sys.modules[module]
        for part in qual.split(".") if qual else ():
            found = getattr(found, part, None)
        if found is not obj:
            raise tl_wire.NotPlain("not reachable by its name")
        return {"g": [module, qual, self.handle(obj)]}

    def encode(self, value):
        """A value for the harness: plain JSON, a handle, or a pickle (see the module doc)."""
        try:
            return tl_wire.encode(value)
        except tl_wire.NotPlain:
            pass
        value = self.lower(value)
        try:
            return tl_wire.encode(value)
        except tl_wire.NotPlain:
            pass
        try:   # plain data holding the repository's functions, classes, modules: named
            return tl_wire.encode(value, self.global_ref)
        except tl_wire.NotPlain:
            pass
        pid = self.persistent_id(value)
        if pid is not None and pid[0] == "h":
            return {"h": pid[1], "type": pid[2]}
        try:
            return {"p": tl_pickle.dumps(value, self.persistent_id, self._guard)}
        except BaseException:  # noqa: BLE001 - not picklable after all: it stays here
            return {"h": self.handle(value), "type": type(value).__name__[:80]}

    def mutable(self, value):
        """True for a by-value argument whose changes must go back to the harness."""
        t = type(value)
        if t in (list, dict, set, bytearray):
            return True
        if t in tl_pickle.EXACT or t in HARNESS_TYPES or isinstance(value, type) or self.handles.get(id(value)) is value \
                or self.records.is_record(value):
            return False
        return self.trust.allowed_class(t) and (hasattr(value, "__dict__") or hasattr(t, "__slots__"))

    def dumps(self, obj, protocol):
        """``pickle.dumps(obj)`` as in one process, a test's object in it by reference (its
        proxy's id: it never leaves the harness); the bytes only come back here (:meth:`loads`)."""
        buf = io.BytesIO()
        pickler = pickle.Pickler(buf, protocol)
        pickler.persistent_id = lambda o: ("r", o._tl_rid) if type(o) in HARNESS_TYPES else None
        pickler.dump(obj)
        return buf.getvalue()

    def loads(self, data):
        """``pickle.loads`` of what :meth:`dumps` made (a test's object: the same proxy again)."""
        unpickler = pickle.Unpickler(io.BytesIO(data))
        unpickler.persistent_load = lambda pid: self.__dict__.get("_tl_reverse", {})[pid[1]]
        return unpickler.load()

    def call_back(self, rid, op, args, kwargs):
        """Run ``op`` on the harness's object ``rid`` (serving the harness's nested requests
        meanwhile); its result, or its exception raised here."""
        tl_wire.send(self.wfd, {"cb": rid, "op": op, "args": self.encode(list(args)),
                                "kwargs": self.encode(list(kwargs.items()))})
        while True:
            try:
                req = self.reader.recv()
            except (EOFError, tl_wire.WireError):
                os._exit(0)
            if "cbr" in req:
                break
            tl_wire.send(self.wfd, self.answer(req))
        if "err" in req:
            err = req["err"]
            cls = getattr(builtins, err.get("type", ""), None) if err.get("builtin") else None
            try:
                exc = cls(err.get("msg", "")) if isinstance(cls, type) and issubclass(cls, Exception) else None
            except TypeError:
                exc = None
            if exc is not None:
                raise exc
            raise RuntimeError("%s: %s" % (err.get("type"), err.get("msg")))
        return self.value(req["v"])
