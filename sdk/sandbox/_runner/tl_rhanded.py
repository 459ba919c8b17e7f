"""What a handed test class may hold, and the copies of its functions for a call (issue 14; stdlib only).

:func:`tl_rmods.harmless` hands a test module's class to any reader during a call when it encodes no
test; :func:`code_like` says which class attributes count as no data there, and :func:`handed` swaps the
class's functions for copies whose ``__globals__`` is :func:`tl_rmods.globals_view`'s guarded dict (moved
here from :mod:`tl_rmods`, which re-exports it).

Round 10 (``tests/rewards/test_redteam_round10.py``): before, a handed class let repository code read the test
module's constants through what D's swap did not reach: a library decorator's wrapper
(``contextlib.contextmanager``: its ``__wrapped__`` and closure held the test module's function with the real
globals), a ``singledispatchmethod``, a ``functools.partial`` kept as a class attribute (its ``func`` and its
``args``), an instance of the module's class kept as a class attribute (its data, its methods), a nested class
holding data, a decorator's argument in a method's closure (``@returns(EXPECTED)``) (each 1.0 unflagged). Now: a
wrapper of another module whose closure or ``__wrapped__`` holds such a function is copied too (its own globals
kept); a class attribute that is neither code (a function, a descriptor of one: static/class methods, properties,
``cached_property``, ``partialmethod``, an ``lru_cache`` wrapper, builtins, slot and namedtuple field descriptors),
a class of the same module that is itself harmless (a nested one), a module, a ``typing`` construct nor
``None``/``bool`` is data, so the class is withheld like ``class Cases: expected = 6`` (an instance, a ``partial``,
a ``singledispatchmethod``, a ``SimpleNamespace``). A wrapper of another module with attributes of its own besides
``__wrapped__`` (``functools.singledispatch``'s ``registry``) is data too, and so is a function of the module whose
closure holds a :data:`DATA` value. A handed method's ``__defaults__``/``__kwdefaults__`` read from repository code
is judged by the witness's hook (``tl_witness._layer``). Round 11 (``tests/rewards/test_redteam_round11.py``): the
values a ``partialmethod`` binds (``partialmethod(f, 1, 6)``: ``.args`` read, or the bound call) and a :data:`DATA`
default of a method of the module (``check(self, got, want=EXPECTED)``: an oracle repository code called with
guesses) are data too (1.0 unflagged before; D's honest ``Scale.third = partialmethod(times, 3)`` is then withheld
and still scores 1.0: the test calls it, repository code gets the instance). Left open: a value in a library
function's closure (``@retry(times=6)``) or of another type in a closure cell (an instance), a dataclass field's
default (``tl_rmods.SHAPE``), a handed method whose code computes the answer (``return 2 * 3``), called by
repository code that fetched the class (only the call's provenance, the test's object or a class repository code
fetched, tells it from honest use: not built).
"""

import functools
import types

CODE = (types.FunctionType, staticmethod, classmethod, property, functools.cached_property, functools.partialmethod,
        functools._lru_cache_wrapper, types.BuiltinFunctionType, types.MethodDescriptorType,
        types.WrapperDescriptorType, types.ClassMethodDescriptorType, types.GetSetDescriptorType,
        types.MemberDescriptorType, types.ModuleType, types.GenericAlias, types.UnionType, type(None), bool,
        type(__import__("collections").namedtuple("P", "x").x))
WRAPPER_KEYS = frozenset({"__wrapped__"})
DATA = (int, float, complex, str, bytes, bytearray, tuple, list, dict, set, frozenset)   # a class's own data


def code_like(item, module, stack, harmless, _type=type, _mro=type.__dict__["__mro__"].__get__,
              _modname=type.__dict__["__module__"].__get__, _fvars=types.FunctionType.__dict__["__dict__"].__get__,
              _glob=types.FunctionType.__dict__["__globals__"].__get__):
    """True when class attribute ``item`` of a class of test module ``module`` (its name) holds no data: see
    the module docstring. ``stack``: the classes being judged (a class naming itself counts as code);
    ``harmless``: :func:`tl_rmods.harmless`, called for a nested class of ``module``."""
    kind = _type(item)
    if kind is types.FunctionType:
        own = dict.get(_glob(item), "__name__") == module
        if own and not viewed(item) and _data_defaults(item):   # round 11: an oracle through a default
            return False
        for cell in item.__closure__ if own and item.__closure__ else ():   # a decorator's argument is data (round 10)
            try:
                inner = cell.cell_contents
            except ValueError:   # an empty cell
                continue
            if _type(inner) in DATA or (_type(inner) is types.FunctionType and inner is not item and item not in stack
                                        and not code_like(inner, module, (*stack, item), harmless)):
                return False
        return own or set(_fvars(item)) <= WRAPPER_KEYS
    if kind in (staticmethod, classmethod):
        return code_like(item.__func__, module, stack, harmless)
    if kind is property:
        return all(f is None or code_like(f, module, stack, harmless) for f in (item.fget, item.fset, item.fdel))
    if kind is functools.partialmethod:   # the values it binds are data (round 11: partialmethod(f, 1, 6))
        return code_like(item.func, module, stack, harmless) and all(
            code_like(v, module, stack, harmless) for v in (*item.args, *item.keywords.values()))
    if kind is functools.cached_property:
        return code_like(item.func, module, stack, harmless)
    if kind in CODE or _modname(kind) == "typing":
        return True
    if type in _mro(kind):
        return item in stack or _modname(item) != module or harmless(item, _stack=stack)
    return False


def _data_defaults(fn, _type=type):
    """True when function ``fn``'s ``__defaults__`` or ``__kwdefaults__`` hold a :data:`DATA` value: the class's data
    (round 11: ``def check(self, got, want=EXPECTED)`` on a handed class answered repository code's guesses). Never
    asked of a :func:`viewed` copy (its read during the call is the judged one)."""
    kw = fn.__kwdefaults__
    return any(_type(v) in DATA for v in (*(fn.__defaults__ or ()), *(kw.values() if kw else ())))


def viewed(fn, _type=type, _func=types.FunctionType, _glob=types.FunctionType.__dict__["__globals__"].__get__,
           _modname=type.__dict__["__module__"].__get__, _qual=type.__dict__["__qualname__"].__get__):
    """True when ``fn`` is a copy :func:`handed` made (its globals a :func:`tl_rmods.globals_view`): reading its
    ``__defaults__``/``__kwdefaults__`` (a test's constant as a default) is then judged like the module's attribute."""
    if _type(fn) is not _func:
        return False
    kind = _type(_glob(fn))
    return _modname(kind) == "tl_rmods" and _qual(kind) == "globals_view.<locals>.Globals"


def _copy(fn, real, glb, memo, depth=0, _func=types.FunctionType, _type=type, _cell=types.CellType,
          _glob=types.FunctionType.__dict__["__globals__"].__get__):
    """``fn`` when it is no function, else its copy (cached in ``memo``) whose globals are ``glb`` when they were
    ``real``; a function of another module (a library decorator's wrapper) is copied, its own globals kept, only
    when its closure or ``__wrapped__`` holds a function copied so (up to 4 deep); other cells are shared."""
    if _type(fn) is not _func or depth > 4:
        return fn
    hit = memo.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    own, cells = _glob(fn) is real, []
    for c in fn.__closure__ or ():
        try:
            inner = c.cell_contents
        except ValueError:   # an empty cell
            cells.append(c)
            continue
        other = _copy(inner, real, glb, memo, depth + 1)
        cells.append(c if other is inner else _cell(other))
    extra = {k: _copy(v, real, glb, memo, depth + 1) if k == "__wrapped__" else v for k, v in fn.__dict__.items()}
    changed = any(a is not b for a, b in zip(cells, fn.__closure__ or ())) or any(
        extra[k] is not v for k, v in fn.__dict__.items())
    if not own and not changed:
        memo[id(fn)] = (fn, fn)
        return fn
    new = _func(fn.__code__, glb if own else _glob(fn), fn.__name__, fn.__defaults__, tuple(cells) or None)
    new.__kwdefaults__, new.__qualname__, new.__doc__ = fn.__kwdefaults__, fn.__qualname__, fn.__doc__
    new.__module__, new.__annotations__ = fn.__module__, fn.__annotations__
    new.__dict__.update(extra)
    memo[id(fn)] = (fn, new)
    return new


def handed(real, glb, memo, harmless, _type=type, _mro=type.__dict__["__mro__"].__get__,
           _vars=type.__dict__["__dict__"].__get__, _modname=type.__dict__["__module__"].__get__,
           _set=type.__setattr__, _get=dict.get):
    """Swap, for one call, the functions of the classes a reader is handed from the test module dict
    ``real`` (``harmless`` ones, with their bases, metaclass and nested classes defined in that module)
    whose ``__globals__`` is ``real``, for copies whose globals are ``glb`` (:func:`tl_rmods.globals_view`): plain
    functions, static and class methods, property accessors, wrappers of other modules holding them.
    Returns ``[(class, name, old value)]``."""
    name, values = _get(real, "__name__"), list(real.items())
    glb.update({k: v for k, v in values if _type(k) is str and _type(v) is types.ModuleType})   # no lookup cost
    todo = [v for _, v in values if type in _mro(_type(v)) and _modname(v) == name and harmless(v)]
    seen, swaps = set(), []
    while todo:
        cls = todo.pop()
        if id(cls) in seen or type not in _mro(_type(cls)) or _modname(cls) != name:
            continue
        seen.add(id(cls))
        todo += [*_mro(cls)[1:], _type(cls), *(v for v in _vars(cls).values() if type in _mro(_type(v)))]
        for key, value in list(_vars(cls).items()):
            new = _rewrapped(value, real, glb, memo)
            if new is not value:
                swaps.append((cls, key, value))
                _set(cls, key, new)
    return swaps


def _rewrapped(value, real, glb, memo, _type=type):
    """A class attribute ``value`` with its functions copied by :func:`_copy` (``value`` itself when none is):
    a function, a static or class method, a property, ``functools.cached_property``, ``partialmethod``
    and an ``lru_cache`` wrapper (a new cache for the copy); the new wrapper is cached in ``memo``."""
    kind = _type(value)
    if kind is types.FunctionType:
        return _copy(value, real, glb, memo)
    hit = memo.get(id(value))
    if hit is not None and hit[0] is value:
        return hit[1]
    new = value
    if kind is staticmethod or kind is classmethod:
        inner = _copy(value.__func__, real, glb, memo)
        new = value if inner is value.__func__ else kind(inner)
    elif kind is property:
        parts = [_copy(f, real, glb, memo) for f in (value.fget, value.fset, value.fdel)]
        same = all(a is b for a, b in zip(parts, (value.fget, value.fset, value.fdel)))
        new = value if same else property(*parts, value.__doc__)
    elif kind is functools.cached_property or kind is functools.partialmethod:
        inner = _copy(value.func, real, glb, memo)
        if inner is not value.func and kind is functools.cached_property:
            new = functools.cached_property(inner)
            new.attrname, new.__doc__ = value.attrname, value.__doc__
        elif inner is not value.func:
            new = functools.partialmethod(inner, *value.args, **value.keywords)
    elif kind is functools._lru_cache_wrapper:
        inner = _copy(value.__wrapped__, real, glb, memo)
        if inner is not value.__wrapped__:
            new = functools.update_wrapper(functools.lru_cache(**value.cache_parameters())(inner), inner)
    memo[id(value)] = (value, new)
    return new
