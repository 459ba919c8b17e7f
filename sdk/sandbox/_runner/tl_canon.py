"""Canonical data of a comparison's operands for :mod:`tl_shadow` (issue 14; stdlib only).

:func:`canonical` reduces values, without calling any repository-written Python code, to plain data:
a builtin subclass to its base value (read through the base type's slots), lists, tuples, dicts and
sets item by item, an object of a Python class defined outside the library folders (the repository,
the runner) to an :class:`Obj` (qualified class name, its ``__dict__`` and slots read through the
type's own descriptors), an object of a library or test class (:func:`classifier`), or of a type
Python code cannot alter, to an :class:`Opaque` compared with the real operator (trusted; met by an :class:`Obj`, the
library or test object's own operator answers, as a repository ``__eq__`` returning NotImplemented
lets it). A ``functools.partial`` is opened as data (function, arguments, keywords). At most
:data:`BUDGET` nodes per walk (past it :class:`Budget` is raised: the shadow gives no opinion).
"""

import functools
import sys
import types

BUDGET = 100000
HEAPTYPE, IMMUTABLE = 1 << 9, 1 << 8
SCALARS = frozenset({type(None), bool, int, float, complex, str, bytes, type(Ellipsis), type(NotImplemented)})


class Opaque:
    """A value the shadow does not open (a library or test object, or of a type Python code cannot
    alter): compared with the real operator against the other side's canonical data."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __hash__(self):
        return 0

    def _o(self, other, _type=type):
        return other.v if _type(other) is _type(self) else other

    def __eq__(self, other):
        return self.v == self._o(other)

    def __ne__(self, other):
        return self.v != self._o(other)

    def __lt__(self, other):
        return self.v < self._o(other)

    def __le__(self, other):
        return self.v <= self._o(other)

    def __gt__(self, other):
        return self.v > self._o(other)

    def __ge__(self, other):
        return self.v >= self._o(other)

    def __contains__(self, item):
        return self._o(item) in self.v


class Obj:
    """An object of a repository class, as data: its qualified class name and its fields."""

    __slots__ = ("f", "q")

    def __init__(self, q, f):
        self.q, self.f = q, f

    def __hash__(self):
        return hash(self.q)

    def __eq__(self, other, _type=type, _opaque=Opaque):
        if _type(other) is _opaque:   # a library or test object decides, with its real operator (reflected)
            return NotImplemented
        return _type(other) is _type(self) and self.q == other.q and self.f == other.f

    def __ne__(self, other, _type=type, _opaque=Opaque):
        if _type(other) is _opaque:
            return NotImplemented
        return not self.__eq__(other)


class Budget(Exception):
    """The canonical walk went past :data:`BUDGET` nodes."""


def rebound(f, **values):
    """A copy of the function ``f`` with the defaults named in ``values`` replaced. The shadow's state
    lives in defaults alone (rebinding them is flagged by the witness's hook), never in a closure cell,
    whose contents are rewritable without an audited event.

    Raises:
        TypeError: a name in ``values`` is not one of ``f``'s positional parameters with a default.
    """
    code, old = f.__code__, f.__defaults__ or ()
    names = code.co_varnames[code.co_argcount - len(old):code.co_argcount]
    if set(values) - set(names):
        raise TypeError(f"{f.__name__} has no default named {sorted(set(values) - set(names))}")
    return types.FunctionType(code, f.__globals__, f.__name__, tuple(values.get(n, d) for n, d in zip(names, old)))


def _judge(t, _where=(), _runner="", _type=type, _mods=sys.modules, _modname=type.__dict__["__module__"].__get__,
           _qual=type.__dict__["__qualname__"].__get__, _mdict=types.ModuleType.__dict__["__dict__"].__get__,
           _cdict=type.__dict__["__dict__"].__get__, _mro=type.__dict__["__mro__"].__get__, _module=types.ModuleType,
           _get=dict.get, _pget=types.MappingProxyType.get, _str=str, _exc=Exception, _dict=dict):
    """:func:`classifier`'s judgement of a heap type ``t`` (``_where``: library and test folders)."""
    try:
        m = _get(_mods, _modname(t))
        if _module not in _mro(_type(m)):   # a test module's class is tl_rmods's guard during a call
            return "object"
        d = _mdict(m)
        f = _get(d, "__file__")
        if _type(f) is not _str or f.startswith(_runner) or not f.startswith(_where):
            return "object"
        found = None
        for part in _qual(t).split("."):
            found = _get(d, part) if _type(d) is _dict else _pget(d, part)
            if found is None or _type not in _mro(_type(found)):
                return "object"
            d = _cdict(found)
        return "opaque" if found is t else "object"
    except _exc:  # anything odd is the repository's
        return "object"


def _kind(t, _seen=None, _judge=None, _flags=type.__dict__["__flags__"].__get__, _get=dict.get, _id=object.__hash__,
          _heap=HEAPTYPE, _immutable=IMMUTABLE):
    """:func:`classifier`'s ``kind`` (``_seen``: classes judged "object"; a forged entry can only add flags)."""
    fl = _flags(t)
    if not fl & _heap or fl & _immutable:
        return "opaque"
    hit = _get(_seen, _id(t))
    if hit is not None and hit[0] is t and hit[1] == "object":
        return "object"
    out = _judge(t)
    if out == "object":
        _seen[_id(t)] = (t, out)
    return out


def classifier(libs, runner, tests):
    """``kind(t)``: ``"opaque"`` for a type Python code cannot alter (static or immutable) or a class
    found under its own name in a library module (``libs`` folders; not a runner module, whose file
    starts with ``runner``) or a test module (under ``tests``); ``"object"`` otherwise (repository
    and runner classes). Its state is in defaults (:func:`rebound`)."""
    return rebound(_kind, _seen={}, _judge=rebound(_judge, _where=(*libs, tests), _runner=runner))


PARTIAL = functools.partial
# functools.partial (a subclass too) is opened as data: its function, arguments and keywords (read through
# its own member descriptors), so that two equal partials (toolz's curry holds one) are equal canonically
BASES = (int, float, complex, str, bytes, list, tuple, dict, set, frozenset, PARTIAL)
NUMBERS = (int, float, complex)
SCALAR_IDS = frozenset(object.__hash__(t) for t in SCALARS)   # identity keys: builtins.id is audited
BASE_IDS = {object.__hash__(b): b for b in BASES}
FAST_IDS = frozenset(object.__hash__(t) for t in (type(None), bool, int, float, str, bytes))   # compared as they are


def _fields(x, t, out, c, _type=type, _mro=type.__dict__["__mro__"].__get__, _cdict=type.__dict__["__dict__"].__get__,
            _pget=types.MappingProxyType.get, _gs=types.GetSetDescriptorType, _md=types.MemberDescriptorType,
            _str=str, _tuple=tuple, _dict=dict, _attribute_error=AttributeError):
    """``out`` filled with the canonical (``c``) instance dict and slots of ``x`` (of type ``t``), read
    through the descriptors of ``t``'s classes (no property or ``__getattribute__`` of theirs runs)."""
    for k in _mro(t):
        cd = _cdict(k)
        d = _pget(cd, "__dict__")
        if _type(d) is _gs and "__dict__" not in out:
            inst = d.__get__(x, t)
            if _type(inst) is _dict:
                out["__dict__"] = c(inst)
        names = _pget(cd, "__slots__")
        for name in (names,) if _type(names) is _str else names if _type(names) is _tuple else ():
            m = _pget(cd, name) if _type(name) is _str else None
            if _type(m) is _md:
                try:
                    out["." + name] = c(m.__get__(x, t))
                except _attribute_error:
                    pass
    return out


def _partial_fields(x, t, c, _fields=_fields, _func=PARTIAL.__dict__["func"].__get__,
                    _args=PARTIAL.__dict__["args"].__get__, _kw=PARTIAL.__dict__["keywords"].__get__):
    """A partial's (``x`` of type ``t``) canonical function, arguments, keywords and own fields (:func:`_fields`)."""
    return _fields(x, t, {".func": c(_func(x)), ".args": c(_args(x)), ".keywords": c(_kw(x))}, c)


def _walk(values, _kind=None, _type=type, _id=object.__hash__, _mro=type.__dict__["__mro__"].__get__, _fields=_fields,
          _qual=type.__dict__["__qualname__"].__get__, _modname=type.__dict__["__module__"].__get__,
          _scalars=SCALAR_IDS, _bases=BASE_IDS, _bget=dict.get, _budget=BUDGET,
          _obj=Obj, _opaque=Opaque, _big=Budget, _str=str, _tuple=tuple, _frozenset=frozenset, _list=list,
          _dict=dict, _set=set, _int=int, _float=float, _complex=complex, _bytes=bytes, _partial=PARTIAL,
          _pfields=_partial_fields):
    """The canonical data of the tuple ``values`` (one walk, one memo, one budget: the same object on
    both sides stays the same canonical object; ``_kind``: :func:`classifier`'s)."""
    memo, n = {}, [0]

    def c(x):
        t = _type(x)
        if _id(t) in _scalars:
            return x
        n[0] += 1
        if n[0] > _budget:
            raise _big
        hit = memo.get(_id(x))
        if hit is not None:
            return hit[1]
        base = _bget(_bases, _id(t))
        if base is None and _id(t) not in _bases:
            for k in _mro(t):
                base = _bget(_bases, _id(k))
                if base is not None:
                    break
        if base is _int or base is _float or base is _complex:
            out = base.__pos__(x)
        elif base is _str:
            out = _str.__str__(x)
        elif base is _bytes:
            out = _bytes.__bytes__(x)
        elif base is _list:
            out = []
            memo[_id(x)] = (x, out)
            for item in _list.__iter__(x):
                out.append(c(item))
        elif base is _tuple:
            out = _tuple(c(item) for item in _tuple.__iter__(x))
        elif base is _dict:
            out = {}
            memo[_id(x)] = (x, out)
            for k, v in _dict.items(x):
                out[c(k)] = c(v)
        elif base is _set or base is _frozenset:
            out = _frozenset(c(item) for item in base.__iter__(x))
        elif base is not _partial and _kind(t) == "opaque":
            out = _opaque(x)
        else:   # a repository object, or a partial: as data
            out = _obj(_str(_modname(t)) + "." + _str(_qual(t)), None)
            memo[_id(x)] = (x, out)
            out.f = _pfields(x, t, c) if base is _partial else _fields(x, t, {}, c)
        memo[_id(x)] = (x, out)
        return out
    out = _tuple(c(v) for v in values)
    del c   # its cell holds it: each walk left a cycle for the collector (past the budget it still does)
    return out


def canonical(kind):
    """``canon(values)``: the canonical data of the tuple ``values`` (:func:`_walk`), ``kind`` being
    :func:`classifier`'s; see the module docstring. Its state is in defaults (:func:`rebound`)."""
    return rebound(_walk, _kind=kind)
