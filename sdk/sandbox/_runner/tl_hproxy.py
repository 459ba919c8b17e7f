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


class Records:
    """A test's own namedtuple or dataclass instance, here as a *record*: an instance of a class
    made here with the same name, module and fields (``namedtuple``, ``dataclasses.make_dataclass``)
    holding the field values the harness sent, so ``_fields``, ``dataclasses.fields``,
    ``is_dataclass``, ``asdict`` and unpacking work as in one process; any other public attribute
    (a method, a property) and ``repr`` are called back on the test's object. A record sent back
    to the harness is the test's object itself. Changes to a record's fields stay here."""

    def __init__(self, cand):
        self.cand, self.classes, self.made = cand, {}, {}

    def build(self, rid, type_name, spec):
        """The record for the reverse id ``rid`` from ``spec`` = ``[kind, module, qualname,
        field names, values (wire tree), [eq, order, frozen]]`` (see :meth:`tl_values.Codec.record`)."""
        kind, module, qual, names, values, params = spec
        cls = self._class(kind, str(module), str(qual), tuple(str(n) for n in names), tuple(bool(p) for p in params))
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
        """The reverse id of a record made here (the test's object), or None."""
        got = self.made.get(id(obj))
        return ("r", got[1], got[2]) if got is not None and got[0] is obj else None

    def _class(self, kind, module, qual, names, params):
        key = (kind, module, qual, names, params)
        if key not in self.classes:
            records = self

            def __getattr__(self, name):
                got = records.made.get(id(self))
                if name.startswith("_") or got is None or got[0] is not self:
                    raise AttributeError(name)
                return records.cand.call_back(got[1], "getattr", (name,), {})

            def __repr__(self):
                got = records.made.get(id(self))
                return records.cand.call_back(got[1], "repr", (), {}) if got else object.__repr__(self)
            name = qual.rpartition(".")[2]
            space = {"__getattr__": __getattr__, "__repr__": __repr__, "__module__": module, "__qualname__": qual,
                     "_tl_fields": names}
            if kind == "namedtuple":
                import collections
                cls = type(name, (collections.namedtuple(name, names, module=module),), dict(space, __slots__=()))
            else:
                import dataclasses
                eq, order, frozen = params
                cls = dataclasses.make_dataclass(name, names, namespace=space, eq=eq, order=order, frozen=frozen,
                                                 repr=False)
                cls.__module__, cls.__qualname__ = module, qual
            self.classes[key] = cls
        return self.classes[key]

    def is_record(self, obj):
        """True for a record made here."""
        return self.pid(obj) is not None
