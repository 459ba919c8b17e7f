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
