"""The proxies the tests hold for the candidate's objects (split from :mod:`tl_remote`, whose
module docstring gives the rules): :class:`RemoteObject` and its iterator."""

import tl_values

COMPARISONS = ("lt", "le", "gt", "ge")


def _binop(name, reflected=False, decides=True):
    """An operator of :class:`RemoteObject`; with ``decides``, a handle meeting anything but a
    handle is refused (its method would see the expected value and choose the outcome)."""
    def method(self, other):
        kind, x = self._tl_target()
        if kind == "v":
            import operator
            fn = getattr(operator, name)
            return fn(other, x) if reflected else fn(x, other)
        if decides and not _is_handle(other):
            self._tl_refuse(name, other)
        args = (other, self) if reflected else (self, other)
        return self._tl_remote.op(name, *args)
    return method


PLAIN = frozenset({type(None), bool, int, float, str, bytes, complex, list, tuple, dict, set, frozenset})


def _is_handle(value):   # a proxy of an object that lives in the candidate
    return isinstance(value, RemoteObject) and value._tl_target()[0] == "h"


def _strict(name, want):
    def method(self, *args):
        kind, x = self._tl_target()
        if kind == "v":
            return getattr(x, "__%s__" % name)(*args)
        got = self._tl_remote.op(name, self, *args)
        if type(got) is not want:
            raise TypeError("%s() of a %s returned %s" % (name, self._tl_type, type(got).__name__))
        return got
    return method


class RemoteIterator:
    """Iteration over an object of the candidate, one element per call (``step``), as lazy as
    in one process: ``take(3, count())`` ends, ``groupby``'s groups see their elements."""

    def __init__(self, handle):
        self.handle = handle

    def __iter__(self):
        return self

    def __next__(self):
        got = self.handle._tl_remote.op("step", self.handle)
        if type(got) is not list or not got:
            raise StopIteration
        return got[0]


META = ("__name__", "__qualname__", "__wrapped__", "__defaults__", "__kwdefaults__", "__annotations__")


class _Meta(str):
    """A class attribute of :class:`RemoteObject` that reads, on a handle, the remote object's
    own ``__doc__`` or ``__module__`` (a string or None); on the class, its own value."""

    def __get__(self, obj, owner=None):
        if obj is None:
            return str(self)
        kind, x = obj._tl_target()
        if kind == "v":
            return getattr(x, self.attr, None)
        if not obj._tl_remote.loaded:
            return None
        got = obj._tl_remote.result(obj._tl_remote.ask({"op": "attr", "h": x, "name": self.attr}))
        return got if got is None or type(got) is str else None


def _meta(attr, value):
    made = _Meta(value)
    made.attr = attr
    return made


class RemoteObject:
    """A value living in the candidate process (see the module docstring)."""

    __doc__ = _meta("__doc__", __doc__)
    __module__ = _meta("__module__", __name__)

    def __init__(self, remote, target, type_name="object"):
        object.__setattr__(self, "_tl_remote", remote)
        object.__setattr__(self, "_tl_ref", target)
        object.__setattr__(self, "_tl_type", type_name)

    def _tl_target(self):
        return self._tl_ref

    def __call__(self, *args, **kwargs):
        kind, x = self._tl_target()
        if kind == "v":
            return x(*args, **kwargs)
        remote = self._tl_remote
        if remote.codec.decoding:
            raise tl_values.tl_pickle.Refused(self._tl_type, "__call__ (a value rebuilt by calling the solution)", True)
        req = {"op": "call", "h": x, "args": remote.codec.to_wire(list(args)),
               "kwargs": remote.codec.to_wire(list(kwargs.items()))}
        answer = remote.ask(req)
        remote.codec.apply_mutations(answer, args, kwargs)
        return remote.result(answer)

    def __getattr__(self, name):
        if (name.startswith("__") and name.endswith("__") and name not in META) or not self._tl_remote.loaded:
            raise AttributeError(name)
        kind, x = self._tl_target()
        if kind == "v":
            return getattr(x, name)
        return self._tl_remote.result(self._tl_remote.ask({"op": "attr", "h": x, "name": name}))

    def __setattr__(self, name, value):
        kind, x = self._tl_target()
        if kind == "v":
            raise AttributeError("cannot set %r on a plain value" % name)
        self._tl_remote.result(self._tl_remote.ask({"op": "setattr", "h": x, "name": name, "value": self._tl_remote.codec.to_wire(value)}))

    def __eq__(self, other):
        kind, x = self._tl_target()
        if kind == "v":
            return x == other
        if not isinstance(other, RemoteObject) and type(other) not in PLAIN:
            if type(other).__eq__ is not object.__eq__:
                return NotImplemented   # the test's own object decides (``AlwaysEquals()``), as in one process
            return False   # an object of the harness without ``__eq__`` is only ever equal to itself
        if _is_handle(other):
            got = self._tl_remote.op("eq", self, other)
            return got if type(got) is bool else False
        if self._tl_remote.op("suspect", self) is True:
            self._tl_remote.flag("always_equal", "a %s (not plain data, own __eq__) was compared with %s"
                                 % (self._tl_type, type(other).__name__))
        return False

    def __ne__(self, other):
        got = self.__eq__(other)
        return got if got is NotImplemented else not got

    def _tl_refuse(self, name, other):
        """Raise TypeError for ``name`` on this handle and ``other`` (no handle); report
        ``always_equal`` when the solution's class defines the operator itself."""
        family = COMPARISONS if name in COMPARISONS else (name, "r" + name)
        if self._tl_remote.op("defines", self, ["__%s__" % n for n in family]) is True:
            self._tl_remote.flag("always_equal", "a %s (not plain data, own __%s__) met %s"
                                 % (self._tl_type, name, type(other).__name__))
        raise TypeError("'%s' between the solution's %s and a %s is refused: only plain data is compared "
                        "or computed with in the tests" % (name, self._tl_type, type(other).__name__))

    def __hash__(self):
        kind, x = self._tl_target()
        if kind == "v":
            return hash(x)
        got = self._tl_remote.op("hash", self)   # equal objects of the solution hash alike (sets, dict keys)
        if type(got) is not int:
            raise TypeError("hash() of a %s returned %s" % (self._tl_type, type(got).__name__))
        return got

    def __iter__(self):
        kind, x = self._tl_target()
        return iter(x) if kind == "v" else RemoteIterator(self._tl_remote.op("iterh", self))

    def __next__(self):
        kind, x = self._tl_target()
        return next(x) if kind == "v" else RemoteIterator(self).__next__()

    def __repr__(self):
        kind, x = self._tl_target()
        if kind == "v":
            return repr(x)
        got = self._tl_remote.op("repr", self)
        return got if type(got) is str else "<%s>" % self._tl_type

    def __str__(self):
        kind, x = self._tl_target()
        if kind == "v":
            return str(x)
        got = self._tl_remote.op("str", self)
        return got if type(got) is str else "<%s>" % self._tl_type

    __bool__ = _strict("bool", bool)
    __len__ = _strict("len", int)
    __int__ = _strict("int", int)
    __float__ = _strict("float", float)
    __contains__ = _strict("contains", bool)
    __lt__, __le__, __gt__, __ge__ = (_binop(n) for n in ("lt", "le", "gt", "ge"))
    __add__, __sub__, __mul__, __truediv__, __floordiv__, __mod__, __pow__ = (
        _binop(n) for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"))
    __radd__, __rsub__, __rmul__ = (_binop(n, True) for n in ("add", "sub", "mul"))
    __getitem__ = _binop("getitem", decides=False)

    def __setitem__(self, key, value):
        kind, x = self._tl_target()
        if kind == "v":
            raise TypeError("'%s' object does not support item assignment" % type(x).__name__)
        self._tl_remote.op("setitem", self, key, value)

    def __delitem__(self, key):
        kind, x = self._tl_target()
        if kind == "v":
            raise TypeError("'%s' object doesn't support item deletion" % type(x).__name__)
        self._tl_remote.op("delitem", self, key)

    def __get__(self, obj, owner=None):
        """A handle kept as a class attribute binds as it would in one process (a function becomes
        a method of the test's instance, a descriptor class's ``__get__`` runs), in the candidate."""
        kind, x = self._tl_target()
        if obj is None or kind == "v" or not self._tl_remote.loaded:
            return self
        got = self._tl_remote.op("bind", self, obj, owner)
        return got[0] if type(got) is list and len(got) == 1 else self

    def __instancecheck__(self, instance):
        """``isinstance(x, handle of a class)``: True when the class is in the MRO of the type of
        ``x`` (a handle, or a value of a class of the task's file, :mod:`tl_pristine`, asked there);
        any other value of the harness is never an instance of the solution's class."""
        kind, x = self._tl_target()
        if kind == "v":
            return isinstance(instance, x)
        ours = type(instance) in self._tl_remote.codec.trust.pristine.values()   # crosses by value (tl_pristine)
        return (_is_handle(instance) or ours) and self._tl_remote.op("isa", instance, self) is True

    def __subclasscheck__(self, sub):
        """``issubclass(handle, handle)``, by the MRO (no metaclass hook runs)."""
        kind, x = self._tl_target()
        if kind == "v":
            return issubclass(sub, x)
        ours = sub in self._tl_remote.codec.trust.pristine.values()   # named for the candidate (tl_pristine)
        return (_is_handle(sub) or ours) and self._tl_remote.op("subclass", sub, self) is True

    def __reduce_ex__(self, protocol):
        """``pickle.dumps(handle)``: pickled in the candidate (the solution's own ``__reduce__``
        runs there); loading it asks the candidate to unpickle those bytes."""
        kind, x = self._tl_target()
        if kind == "v":
            return x.__reduce_ex__(protocol)
        data = self._tl_remote.op("pickle", self, protocol)
        if type(data) is not bytes:
            raise TypeError("cannot pickle the solution's %s" % self._tl_type)
        return _unpickle, (data,)

    def __neg__(self):
        kind, x = self._tl_target()
        return -x if kind == "v" else self._tl_remote.op("neg", self)

    def __abs__(self):
        kind, x = self._tl_target()
        return abs(x) if kind == "v" else self._tl_remote.op("abs", self)


CURRENT = []   # the Remote of this run (set when it starts): what ``_unpickle`` asks


def _unpickle(data):
    """Rebuild a handle pickled by :meth:`RemoteObject.__reduce_ex__` (in the candidate)."""
    if not CURRENT or type(data) is not bytes:
        raise TypeError("no candidate to unpickle the solution's value")
    return CURRENT[-1].op("unpickle", data)
