"""The harness's side of values crossing to and from the candidate (stdlib only).

To the candidate (:meth:`Codec.to_wire`): plain data as tagged JSON; a proxy as its handle;
anything else pickled, where the candidate can rebuild it (standard-library and repository
classes, functions by name), and as a *reverse handle* otherwise (a lambda, a bound method, an
instance of a class defined in a test file): the candidate calls back (:meth:`Codec.callback`)
and the harness runs it, so a test's key function or callback works without its code ever
leaving the harness.

From the candidate (:meth:`Codec.decode`): only through :class:`tl_pickle.Restricted`. A pickle
that names anything hostile (a standard-library callable such as ``os.system``, the solution's
own module, the runner) kills the candidate and is reported as ``runner_tampering``; a class of
a module the tests never imported is a plain failure of that call (``TypeError``).

In-place mutation (:meth:`Codec.apply_mutations`): after a call the candidate sends the new
state of each by-value argument that changed, and it is copied onto the harness's original
(list/dict/set contents, instance attributes), so ``f(acct); assert acct.closed`` and
``helper(xs); assert xs == sorted(xs)`` hold. Only top-level arguments are copied back, and
their contents are fresh objects (an element the test kept a reference to is not updated).
"""

import builtins
import collections.abc
import operator
import os
import pickle
import sys
import types

import tl_pickle
import tl_wire

BY_NAME = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
           types.WrapperDescriptorType, types.ClassMethodDescriptorType, types.MethodWrapperType)
MSG = 2000


class Codec:
    """Encoding and decoding for one :class:`tl_remote.Remote` (``remote``); ``proxy`` is the
    :class:`tl_remote.RemoteObject` class, ``gone`` its CandidateGone exception."""

    def __init__(self, remote, proxy, gone):
        self.remote, self.proxy, self.gone = remote, proxy, gone
        self.trust = tl_pickle.Trust((), None)
        self.reverse = {}
        self.decoding = 0   # > 0 while a candidate pickle is decoded: no handle may be called then
        self.interned = {}   # handle id -> its proxy (:meth:`handle`)
        self.mirrors = {}   # mirrored exception class -> its name in the solution's module (tl_rmodule)

    def configure(self, roots, target):
        """Trusted folders and the solution's module name (known once the request is read)."""
        self.trust = tl_pickle.Trust(roots, target)

    # -- harness -> candidate --------------------------------------------------------------
    def to_wire(self, value):
        """A harness value as sent to the candidate (see the module docstring)."""
        try:
            return tl_wire.encode(value)
        except tl_wire.NotPlain:
            pass
        if isinstance(value, self.proxy):
            kind, x = value._tl_target()
            if kind == "h":
                return {"h": x}
        try:
            return {"p": tl_pickle.dumps(value, self.persistent_id)}
        except (pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError):
            top = self._rpid(value)
            return {"p": tl_pickle.dumps(value, lambda o: top if o is value else self.persistent_id(o))}

    def persistent_id(self, obj):
        """None to pickle ``obj`` by value, else a handle tuple."""
        t = type(obj)
        if t in tl_pickle.EXACT:
            return None
        if t is object or t is types.MappingProxyType:   # a sentinel: its identity is all it has; a read-only view
            return self._rpid(obj)
        if tl_pickle.std_iterator(t):   # the candidate steps the test's own iterator (its position)
            return self._rpid(obj)
        if isinstance(obj, self.proxy):
            kind, x = obj._tl_target()
            return ("h", x) if kind == "h" else ("v", self.to_wire(x))
        if isinstance(obj, types.ModuleType) and type(obj.__name__) is str and (
                self._importable(obj.__name__) or obj.__name__ == self.trust.target):
            return ("m", obj.__name__)
        cls = obj if isinstance(obj, type) else t
        if self.trust.pristine and getattr(cls, "__module__", None) == self.trust.target and self.trust.allowed_class(cls):
            # the task's own value class (tl_pristine): by value, its class named for the candidate
            return ("c", cls.__qualname__) if cls is obj else None
        if isinstance(obj, type) and obj in self.mirrors:   # the solution's own class, there
            pid = self.remote.handle_of(self.mirrors[obj])
            if pid is not None:
                return pid
        if isinstance(obj, type) or t in BY_NAME:
            owner = getattr(obj, "__objclass__", obj)
            qual = str(getattr(obj, "__qualname__", "<"))
            module = getattr(owner, "__module__", None)
            if "<" not in qual and self._importable(module) and (
                    t is not type or _by_name(obj) or tl_pickle.is_stdlib_module(module)):
                return None   # by name (a repository class being decorated is not bound to it yet)
        elif t is not types.MethodType and self._importable(t.__module__):
            # by value; a make_dataclass instance (module ``types``, not found by name) as a record
            return None if _by_name(t) else self.record(obj, t)
        return (self.test_class(obj) if t is type else self.record(obj, t)) or self._rpid(obj)

    def test_class(self, cls):
        """A class defined in a test, or a repository class not bound to its name yet (decorated
        at import by the solution's ``@attrs``), with a plain metaclass, by its namespace, so the
        solution can decorate it as in one process (``@attr.s``): ``("r", id, name, "class", [module,
        qualname], [bases, namespace items])``, its functions as reverse handles (called back,
        bound to the instance); making an instance of it there calls back the test's class until
        the solution changes the class (:class:`tl_hproxy.Records`). None when a part does not
        cross (a slot, a property: the class is then a reverse handle, as before)."""
        owner = str(cls.__module__)
        busy = self.__dict__.setdefault("_classing", set())
        if owner.split(".")[0] in HARNESS_LIBS or owner.startswith("tl_") or id(cls) in busy:
            return None
        busy.add(id(cls))
        try:
            space = [[k, v] for k, v in cls.__dict__.items() if k not in ("__dict__", "__weakref__", "__module__", "__qualname__")]
            if any(type(v) in (property, types.MemberDescriptorType, types.GetSetDescriptorType) for _, v in space):
                return None
            tree = self.to_wire([list(cls.__bases__), space])
        except Exception:  # noqa: BLE001 - a part that does not cross: the class stays behind its handle
            return None
        finally:
            busy.discard(id(cls))
        return ("r", self._reverse(cls), cls.__name__[:80], "class", [owner, str(cls.__qualname__)], tree)

    def record(self, obj, t):
        """A test's own namedtuple, dataclass or attrs instance as a *record* (its fields go along,
        so the candidate rebuilds it with them: :class:`tl_hproxy.Records`): the reverse handle
        ``("r", id, type name, "record", [kind, module, qualname, field names, [eq, order, frozen],
        class id], values, extra)`` (``extra``: an attrs class's ``__attrs_attrs__``, else None);
        None for anything else (or fields that do not cross)."""
        owner = str(t.__module__)
        if owner.split(".")[0] in HARNESS_LIBS or owner.startswith("tl_"):
            return None
        dataclasses = sys.modules.get("dataclasses")
        fields = getattr(t, "_fields", None) if issubclass(t, tuple) else None
        extra = None
        if type(fields) is tuple and fields and all(type(f) is str for f in fields) and callable(getattr(t, "_make", None)):
            kind, names, params = "namedtuple", list(fields), [True, False, True]
        elif dataclasses is not None and dataclasses.is_dataclass(t):
            p = t.__dataclass_params__
            kind, names, params = "dataclass", [f.name for f in dataclasses.fields(t)], [p.eq, p.order, p.frozen]
        elif isinstance(getattr(t, "__attrs_attrs__", None), tuple):
            extra = tuple(t.__attrs_attrs__)   # a plain tuple (its own class is made on the fly)
            kind, names, params = "attrs", [str(a.name) for a in extra], [True, False, False]
        else:
            return None
        try:
            values = tuple.__getitem__(obj, slice(None)) if kind == "namedtuple" else [getattr(obj, n) for n in names]
            tree, extra = self.to_wire(list(values)), None if extra is None else self.to_wire(extra)
        except Exception:  # noqa: BLE001 - a field that cannot be read or sent: the object stays a handle
            return None
        spec = [kind, owner, str(t.__qualname__), names, [bool(x) for x in params], self._reverse(t)]
        return ("r", self._reverse(obj), t.__name__[:80], "record", spec, tree, extra)

    def _importable(self, module):
        """True when the candidate imports ``module`` as the same code (stdlib or repository)."""
        if type(module) is not str:
            return False
        return self.trust.repo_module(module) is not None or (
            tl_pickle.is_stdlib_module(module) and not module.startswith("tl_"))

    def _reverse(self, obj):
        self.reverse[id(obj)] = obj
        return id(obj)

    def _rpid(self, obj):
        """The reverse handle of ``obj``: ``("r", id, type name[, "mapping", "iterator" or "callable"])``."""
        pid = ("r", self._reverse(obj), type(obj).__name__[:80])
        if tl_pickle.std_iterator(type(obj)):
            return pid + ("iterator",)
        if isinstance(obj, collections.abc.Mapping):
            return pid + ("mapping",)
        return pid + ("callable",) if callable(obj) else pid   # only a callable one is callable there

    # -- candidate -> harness --------------------------------------------------------------
    def load_id(self, pid):
        """A persistent id in a candidate pickle -> a proxy or the harness's own object."""
        if type(pid) is tuple and len(pid) == 3 and pid[0] == "h" and type(pid[1]) is int:
            return self.handle(pid[1], str(pid[2])[:80])
        if type(pid) is tuple and len(pid) == 3 and pid[0] == "r" and pid[1] in self.reverse:
            return self.reverse[pid[1]]
        raise tl_pickle.Refused("persistent id", repr(pid)[:80], True)

    def loads(self, text):
        """The candidate's pickle ``text`` read with the restricted loader (trusted classes only)."""
        self.decoding += 1
        try:
            return tl_pickle.loads_restricted(text, self.trust, self.load_id)
        finally:
            self.decoding -= 1

    def decode(self, tree):
        """A value from the candidate (raises TypeError for an honest mismatch; kills the
        candidate and raises CandidateGone for a hostile or broken value)."""
        try:
            return tl_wire.decode(tree, self.handle, loads=self.loads,
                                  ref=self.global_ref)
        except tl_pickle.Refused as exc:
            if not exc.hostile:
                raise TypeError("the solution returned a %s.%s: only plain data, the repository's classes "
                                "imported by the tests and a few standard ones cross by value" % (exc.module, exc.name))
            self.remote.flag("runner_tampering", "the solution sent a value that names %s.%s" % (exc.module, exc.name))
            reason = "the solution's process sent a value naming %s.%s (refused)" % (exc.module, exc.name)
        except Exception as exc:  # noqa: BLE001 - a malformed value
            reason = "the solution's process sent a malformed value (%s)" % exc
        self.remote.kill()
        self.remote.gone = reason
        raise self.gone(reason)

    def handle(self, key, type_name):
        """The one proxy of the candidate's object ``key`` (interned: the same object comes back
        as the same proxy, so ``f(x) is x`` and ``pickle.loads(pickle.dumps(f)) is f`` hold)."""
        got = self.interned.get(key)
        if got is None:
            got = self.interned[key] = self.proxy(self.remote, ("h", key), type_name)
        return got

    def global_ref(self, module, qual, handle):
        """A function, class or module the candidate named (``module``, ``qual``; "" for the module
        itself): this process's own object of that name when ``module`` is a repository module
        imported here (never the solution's), so identity holds (``merge(d)["f"] is f``); else the
        handle. Only plain-data trees carry such names, never a pickle (nothing is called)."""
        mod = self.trust.repo_module(module) or self._import_repo(module)
        obj = mod
        for part in qual.split(".") if mod is not None and qual else ():
            if part.startswith("__") or part == "<locals>":
                obj = None
                break
            obj = getattr(obj, part, None)
        if obj is not None and (obj is mod or (isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType))
                                               and getattr(obj, "__module__", None) == module
                                               and getattr(obj, "__qualname__", None) == qual)):
            return obj
        return self.handle(handle, qual.rpartition(".")[2][:80] or "module")

    def _import_repo(self, module):
        """Import the repository module ``module`` here (its file under the trusted folders, in a
        package already imported here, never the solution's): the module the solution holds is then
        this process's own, as in one
        process (``functoolz._sigs.create_signature_registry()`` fills the registry the tests read)."""
        import importlib
        import importlib.util
        if module == self.trust.target or module.startswith("tl_") or module in sys.modules \
                or module.split(".")[0] not in sys.modules:   # only inside a package imported here already
            return None
        try:
            spec = importlib.util.find_spec(module)
            origin = os.path.realpath(spec.origin) if spec is not None and spec.origin else ""
            if origin.startswith(self.trust.roots):
                importlib.import_module(module)
        except BaseException:  # noqa: BLE001 - it stays behind its handle
            return None
        return self.trust.repo_module(module)

    def error(self, err):
        """The exception object of a candidate error, when it came by value, else None."""
        if "p" not in err:
            return None
        try:
            exc = self.decode({"p": err["p"]})
        except TypeError:
            return None
        ok = isinstance(exc, BaseException) and type(exc).__name__ not in tl_pickle.NEVER_RAISED \
            and not isinstance(exc, (SystemExit, KeyboardInterrupt, GeneratorExit))
        return exc if ok else None

    def apply_mutations(self, answer, args, kwargs):
        """Copy the candidate's changes of by-value arguments back onto ``args``/``kwargs``."""
        muts = answer.get("mut")
        if type(muts) is not list:
            return
        for item in muts[:len(args) + len(kwargs)]:
            if type(item) is not list or len(item) != 2:
                continue
            key, tree = item
            if type(key) is int and 0 <= key < len(args):
                orig = args[key]
            elif type(key) is str and key in kwargs:
                orig = kwargs[key]
            else:
                continue
            if not isinstance(orig, self.proxy):
                tl_pickle.apply_state(orig, self.decode(tree))

    def code_of(self, obj):
        """``marshal`` bytes of the code of a plain function of a repository module that holds no
        tests (a decorator's ``func`` from another module: validators' ``_func_args_as_dict`` reads
        ``func.__code__.co_varnames``). Plain data, and the repository's code is the candidate's to
        read anyway; a function of a test file, conftest or a module served from memory (the tests),
        the solution's or the harness's own, is refused (AttributeError): its constants would be
        the expected values."""
        import marshal
        module = self.trust.repo_module(getattr(obj, "__module__", None)) if type(obj) is types.FunctionType else None
        loader = type(getattr(getattr(module, "__spec__", None), "loader", None)).__name__
        path = os.path.realpath(getattr(module, "__file__", None) or "/nonexistent")
        base = os.path.basename(path)
        if module is None or loader == "MemorySources" or base == "conftest.py" or base.startswith("test_") \
                or base.endswith("_test.py") or os.path.realpath(obj.__code__.co_filename) != path:
            raise AttributeError("__code__: only a function of the repository's own (non-test) modules shows its code")
        return marshal.dumps(obj.__code__)

    # -- calls back from the candidate -----------------------------------------------------
    def callback(self, frame):
        """Run one call back (``{"cb": id, "op", "args", "kwargs"}``) on a reverse handle; the
        reply frame. CandidateGone propagates; any other exception is sent back."""
        try:
            obj = self.reverse[frame.get("cb")]
            args = self.decode(frame.get("args"))
            kwargs = dict(self.decode(frame.get("kwargs")))
            op = frame.get("op")
            if op == "call":
                value = obj(*args, **kwargs)
            elif op == "next":
                value = next(obj)
            elif op == "iter":
                value = iter(obj)
            elif op in ("repr", "str", "len", "hash", "bool"):
                value = getattr(builtins, op)(obj)
            elif op == "eq":   # a record's comparison, decided by the test's own object
                value = obj == args[0]
            elif op in ("getitem", "setitem", "delitem", "contains"):
                value = getattr(operator, op)(obj, *args)
            elif op in ("keys", "items", "values") and isinstance(obj, collections.abc.Mapping):
                value = list(getattr(obj, op)())
            elif op in ("getattr", "meta", "signature"):
                value = reflect(obj, op, args)
            elif op == "code":
                value = self.code_of(obj)
            else:
                raise TypeError("unsupported operation on a test's object: %r" % (op,))
            return {"cbr": 1, "v": self.to_wire(value)}
        except self.gone:
            raise
        except BaseException as exc:  # noqa: BLE001 - the test's exception goes back to the caller
            name = type(exc).__name__
            return {"cbr": 1, "err": {"type": name[:100], "builtin": getattr(builtins, name, None) is type(exc),
                                      "msg": _safe(exc)[-MSG:]}}


def _by_name(cls):
    """True when ``cls`` is found under its module and qualname (``make_dataclass`` classes claim
    the module ``types`` and are not: they cross as records)."""
    obj = sys.modules.get(cls.__module__)
    for part in str(cls.__qualname__).split("."):
        obj = getattr(obj, part, None)
    return obj is cls


def _safe(exc):
    try:
        return str(exc)
    except BaseException:  # noqa: BLE001
        return type(exc).__name__


HARNESS_LIBS = frozenset({"_pytest", "pytest", "pluggy", "iniconfig", "py", "_py"})   # and tl_*


def reflect(obj, op, args):
    """What a call back may read of the harness's object ``obj``: ``getattr`` a public
    attribute of a test's or the repository's own instance (never of a module, class, function
    or standard-library object, never a module as the value: nothing leads to the harness's
    internals); ``meta`` its ``__name__``/``__qualname__``/``__module__``/``__doc__`` (a string; the doc may be None); ``signature`` its
    parameters as ``[name, kind, has default]`` (plain data)."""
    name = args[0] if args else None
    if op == "signature":
        import inspect
        return [[p.name, int(p.kind), p.default is not p.empty] for p in inspect.signature(obj).parameters.values()]
    if op == "meta":
        value = getattr(obj, name, None) if name in ("__name__", "__qualname__", "__module__", "__doc__") else None
        if type(value) is not str and not (value is None and name == "__doc__"):
            raise AttributeError(name)
        return value
    owner = str(getattr(type(obj), "__module__", "") or "")
    if type(name) is not str or name.startswith("_") or isinstance(obj, (types.ModuleType, type)) \
            or tl_pickle.is_stdlib_module(owner) or owner.split(".")[0] in HARNESS_LIBS or owner.startswith("tl_"):
        raise AttributeError("%r: only public attributes of a test's own objects are read from the harness" % (name,))
    value = getattr(obj, name)
    if isinstance(value, types.ModuleType):
        raise AttributeError("%r is a module: not read from the harness" % (name,))
    return value
