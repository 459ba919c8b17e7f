"""The candidate's stand-ins for the harness's objects (split from :mod:`tl_cvalues`; stdlib only).

A test's object that cannot live in the candidate (a lambda, a callback, an instance of a test's
class) arrives as one of these: every use of it is a call back into the harness, which runs it
there. Only a callable one is callable; a mapping is a ``Mapping``; an iterator only iterates.
"""

import collections.abc
import inspect


class HarnessProxy:
    """An object of the harness (a test's key function, callback, own object): calling it,
    iterating it or printing it is a call back into the harness, which runs it there."""

    __slots__ = ("_tl_cand", "_tl_rid", "_tl_type")

    def __init__(self, cand, rid, type_name):
        self._tl_cand, self._tl_rid, self._tl_type = cand, rid, type_name

    def __next__(self):
        return self._tl_cand.call_back(self._tl_rid, "next", (), {})

    def __iter__(self):
        return self._tl_cand.call_back(self._tl_rid, "iter", (), {})

    def __len__(self):
        return self._tl_cand.call_back(self._tl_rid, "len", (), {})

    def __repr__(self):
        return self._tl_cand.call_back(self._tl_rid, "repr", (), {})

    def __str__(self):
        return self._tl_cand.call_back(self._tl_rid, "str", (), {})

    def __bool__(self):
        return self._tl_cand.call_back(self._tl_rid, "bool", (), {})

    def __hash__(self):
        return self._tl_cand.call_back(self._tl_rid, "hash", (), {})

    def __reduce_ex__(self, protocol):
        raise TypeError("cannot pickle the test's %s (it lives in the test's process)" % self._tl_type)

    def __getattr__(self, name):   # a public attribute or method of the test's own object
        if name == "__qualname__":
            return self._tl_cand.call_back(self._tl_rid, "meta", (name,), {})
        if name == "__code__":   # a repository function's code (never a test's: the harness refuses)
            import marshal
            return marshal.loads(self._tl_cand.call_back(self._tl_rid, "code", (), {}))
        if name.startswith("_"):
            raise AttributeError(name)
        return self._tl_cand.call_back(self._tl_rid, "getattr", (name,), {})

    def __getitem__(self, key):
        return self._tl_cand.call_back(self._tl_rid, "getitem", (key,), {})

    def __setitem__(self, key, value):
        self._tl_cand.call_back(self._tl_rid, "setitem", (key, value), {})

    def __delitem__(self, key):
        self._tl_cand.call_back(self._tl_rid, "delitem", (key,), {})

    def __contains__(self, key):
        return self._tl_cand.call_back(self._tl_rid, "contains", (key,), {})

    @property
    def __name__(self):
        return self._tl_cand.call_back(self._tl_rid, "meta", ("__name__",), {})

    @property
    def __signature__(self):
        """The test callable's signature, rebuilt here from names and kinds (defaults are
        placeholders: their values stay in the harness)."""
        spec = self._tl_cand.call_back(self._tl_rid, "signature", (), {})
        return inspect.Signature([inspect.Parameter(str(n), inspect.Parameter.POSITIONAL_OR_KEYWORD.__class__(int(k)),
                                                    default=_DEFAULT if d else inspect.Parameter.empty) for n, k, d in spec])


class _Meta(str):
    """A class attribute of the harness proxies that reads, on an instance, the harness object's
    own ``__module__``/``__doc__`` through a call back (on the class: its own value), so the
    solution never sees this module's name as a test object's module."""

    def __get__(self, obj, owner=None):
        if obj is None:
            return str(self)
        return obj._tl_cand.call_back(obj._tl_rid, "meta", (self.attr,), {})


def _meta(attr, value):
    made = _Meta(value)
    made.attr = attr
    return made


HarnessProxy.__doc__ = _meta("__doc__", HarnessProxy.__doc__)
HarnessProxy.__module__ = _meta("__module__", __name__)


class HarnessCallable(HarnessProxy):
    """A test's callable (function, lambda, class, bound method): calling it is a call back."""

    __slots__ = ()
    __doc__ = _meta("__doc__", __doc__)
    __module__ = _meta("__module__", __name__)

    def __call__(self, *args, **kwargs):
        return self._tl_cand.call_back(self._tl_rid, "call", args, kwargs)

    def __get__(self, obj, owner=None):
        """A test's function kept as a class attribute binds as a method (as in one process)."""
        if obj is None or object.__getattribute__(self, "_tl_type") != "function":
            return self
        import types
        return types.MethodType(self, obj)


class HarnessMapping(HarnessProxy):
    """A test's own mapping (``isinstance(x, Mapping)`` holds; methods are called back)."""

    __slots__ = ()

    def keys(self):
        """The test mapping's keys, called back."""
        return self._tl_cand.call_back(self._tl_rid, "keys", (), {})

    def items(self):
        """The test mapping's items, called back."""
        return self._tl_cand.call_back(self._tl_rid, "items", (), {})

    def values(self):
        """The test mapping's values, called back."""
        return self._tl_cand.call_back(self._tl_rid, "values", (), {})

    def get(self, key, default=None):
        """``self[key]`` if present, else ``default``."""
        return self[key] if key in self else default
    __doc__ = _meta("__doc__", __doc__)
    __module__ = _meta("__module__", __name__)


class HarnessIterator:
    """A test's iterator (``iter(xs)``, a generator): stepped in the harness, one element per
    call back; only the iterator protocol (no ``len``: ``hasattr(it, "__len__")`` is False)."""

    __slots__ = ("_tl_cand", "_tl_rid", "_tl_type")

    def __init__(self, cand, rid, type_name):
        self._tl_cand, self._tl_rid, self._tl_type = cand, rid, type_name

    def __iter__(self):
        return self

    def __next__(self):
        return self._tl_cand.call_back(self._tl_rid, "next", (), {})

    def __repr__(self):
        return "<the test's %s>" % self._tl_type


collections.abc.MutableMapping.register(HarnessMapping)
HARNESS_TYPES = (HarnessProxy, HarnessCallable, HarnessMapping, HarnessIterator)
_DEFAULT = type("default", (), {"__repr__": lambda self: "<default of the test's callable>"})()


class _RecordType(type):
    """The metaclass of the record classes: making an instance (``dataclasses.replace``,
    ``attr.evolve``, ``type(r)(...)``) makes it in the harness, with the test's own class."""

    def __call__(cls, *args, **kwargs):
        return cls._tl_records.cand.call_back(cls._tl_class_rid, "call", args, kwargs)


class _TestClassType(type):
    """The metaclass of a test's class rebuilt here (:meth:`Records.test_class`): while the class
    is as the test sent it, making an instance calls back the test's class (the object lives in the
    test); once the solution sets or deletes one of its attributes (a decorator's ``__init__``), or
    makes a class from it, it is the solution's class and instances are made here."""

    def __call__(cls, *args, **kwargs):
        records = _RECORDS[0] if _RECORDS else None
        got = records.fresh.get(id(cls)) if records is not None else None
        if got is not None and got[0] is cls:
            return records.cand.call_back(got[1], "call", args, kwargs)
        return super().__call__(*args, **kwargs)

    def __setattr__(cls, name, value):
        if _RECORDS:
            _RECORDS[0].fresh.pop(id(cls), None)
        super().__setattr__(name, value)

    def __delattr__(cls, name):
        if _RECORDS:
            _RECORDS[0].fresh.pop(id(cls), None)
        super().__delattr__(name)


_RECORDS = []


class Records:
    """A test's own namedtuple, dataclass or attrs instance, here as a *record*: an instance of a
    class made here with the same name, module and fields holding the field values the harness
    sent, so ``_fields``, ``dataclasses.fields``, ``is_dataclass``, ``asdict``, ``attr.fields``
    (its ``__attrs_attrs__``) and unpacking work as in one process; any other public attribute (a
    method, a property), ``repr``, ``==`` (but a namedtuple's), ``hash`` and making a new instance
    are called back on the test's object or class. A record, or its class, sent back to the harness
    is the test's object or class itself. Changes to a record's fields stay here."""

    def __init__(self, cand):
        self.cand, self.classes, self.made = cand, {}, {}
        self.fresh, self.rebuilt = {}, {}   # id(class) -> (class, rid) while unchanged; rid -> class
        _RECORDS[:] = [self]

    def test_class(self, rid, type_name, names, tree):
        """A test's class rebuilt here from its bases and namespace (see :class:`_TestClassType`);
        the same test class is the same class here. A class that cannot be made here (a metaclass
        of its bases) is a :class:`HarnessCallable`, as before."""
        if rid in self.rebuilt:
            return self.rebuilt[rid]
        module, qual = str(names[0]), str(names[1])
        try:
            bases, space = self.cand.value(tree)
            space = dict(space, __module__=module, __qualname__=qual)
            cls = _TestClassType(qual.rpartition(".")[2], tuple(bases), space)
        except Exception:  # noqa: BLE001 - e.g. a metaclass conflict: it stays the test's, called back
            cls = HarnessCallable(self.cand, rid, str(type_name))
        self.rebuilt[rid] = cls
        if isinstance(cls, type):
            self.fresh[id(cls)] = (cls, rid)
        return cls

    def build(self, rid, type_name, spec, values, extra):
        """The record for the reverse id ``rid`` (see :meth:`tl_values.Codec.record` for ``spec``,
        ``values`` and ``extra``, wire trees)."""
        kind = spec[0]
        cls = self._class(kind, str(spec[1]), str(spec[2]), tuple(str(n) for n in spec[3]),
                          tuple(bool(p) for p in spec[4]), spec[5], extra)
        vals = list(self.cand.value(values))
        if kind == "namedtuple":
            inst = tuple.__new__(cls, vals)
        else:
            inst = object.__new__(cls)
            for name, value in zip(cls._tl_fields, vals):
                object.__setattr__(inst, name, value)
        self.made[id(inst)] = (inst, rid, str(type_name))
        return inst

    def pid(self, obj):
        """The reverse id of a record made here, of a record class or of a test's class rebuilt
        here and not changed (the test's object or class), or None."""
        got = self.made.get(id(obj))
        if got is not None and got[0] is obj:
            return ("r", got[1], got[2])
        got = self.fresh.get(id(obj))
        return ("r", got[1], obj.__name__[:80]) if got is not None and got[0] is obj else None

    def _class(self, kind, module, qual, names, params, class_rid, extra):
        key = (kind, module, qual, names, params, class_rid)
        if key not in self.classes:
            name = qual.rpartition(".")[2]
            space = dict(_record_methods(self, kind), __module__=module, __qualname__=qual, _tl_fields=names,
                         _tl_records=self, _tl_class_rid=class_rid)
            if kind == "namedtuple":
                import collections
                cls = _RecordType(name, (collections.namedtuple(name, names, module=module),), dict(space, __slots__=()))
            elif kind == "dataclass":
                import dataclasses
                eq, order, frozen = params
                cls = dataclasses.dataclass(_RecordType(name, (), dict(space, __annotations__={n: object for n in names})),
                                            eq=eq, order=order, frozen=frozen, repr=False)
            else:   # attrs: ``fields(C)`` is a tuple whose elements are also read by name (``fields(C).x``)
                import operator
                by_name = {n: property(operator.itemgetter(i)) for i, n in enumerate(names)}
                fields = type(name + "Attributes", (tuple,), dict(by_name, __slots__=()))(self.cand.value(extra))
                cls = _RecordType(name, (), dict(space, __attrs_attrs__=fields))
            self.classes[key] = cls
            self.made[id(cls)] = (cls, class_rid, name[:80])
        return self.classes[key]

    def is_record(self, obj):
        """True for a record (or record class) made here."""
        return self.pid(obj) is not None


def _record_methods(records, kind):
    """``__getattr__``, ``__repr__`` (and, for attrs, ``__eq__``/``__hash__``) of a record class."""
    def back(self, op, *args):
        got = records.made.get(id(self))
        if got is None or got[0] is not self:
            raise AttributeError(op)
        return records.cand.call_back(got[1], op, args, {})

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return back(self, "getattr", name)

    out = {"__getattr__": __getattr__, "__repr__": lambda self: back(self, "repr")}
    if kind == "attrs":
        out["__eq__"] = lambda self, other: back(self, "eq", other)
        out["__ne__"] = lambda self, other: not back(self, "eq", other)
        out["__hash__"] = lambda self: back(self, "hash")
    return out
