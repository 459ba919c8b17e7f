"""The test modules withheld during a change task's test call (issue 14, round 4); stdlib only.

A test module's globals hold what its tests expect: constants, a test function's ``pytestmark`` with its
parametrize table, the test functions themselves. Repository code reaches them without a frame through
the module object: ``sys.modules`` (by name, a scan of its values, ``importlib.import_module``,
``pkgutil.resolve_name``, ``inspect.getmodule``, a pickle's global), a package's attribute, or a
reference kept since the module was imported (collection runs repository code). During each test's
call phase (:func:`withhold`, from :func:`tl_rhide.hide`) every module whose file lies in the tests
folder is guarded: its class is swapped for a module class of its own (:func:`guard_class`) whose
attribute reads and writes, other than :data:`OPEN` (name, file, spec: what the import system and
``inspect`` read), raise the ``tl.mod`` audit event, so that any reference to the module, however
obtained, asks first (``vars(module)`` and ``module.__dict__`` too).

The witness's hook answers ``tl.mod`` with :func:`judge`: the real attribute for the tests (walking out
from the reader through library, runner and pytest frames, a pristine test or conftest frame is met
before any other code, or the main thread's outermost frame is reached: ``mock.patch('test_x.f')``, a
pickle of a test's class, ``from test_x import f`` inside a test), else ``runner_tampering`` (once per
reader and name) and AttributeError. Everything is put back when the call ends.

What encodes no test is handed to any reader without asking (issue 14, honest references): a
repository's code meets a test's objects during the call (it pickles a test's dataclass, and pickle
looks the class up by module and name; ``typing.get_type_hints``, attrs' ``resolve_types`` or
pydantic's ``model_rebuild`` of a test module's class read ``vars(module)``; ``inspect.getmembers`` or a
plugin registry scans modules). So the guard narrows what an untrusted reader gets instead of trusting
more readers: a module, a ``typing`` construct, or a class that is no test class and holds no data of
its own (:func:`harmless`) is returned without the ``tl.mod`` event, and ``vars(module)`` is a new
dict of those and the :data:`OPEN` names (:func:`shown`), whose lookup of a withheld name asks (and
flags) like the attribute. A constant, a list or dict (a parametrize table, ``pytestmark``), a test
function or any other function, a ``unittest.TestCase`` class or a ``Test*`` class (their constants,
their methods' code), a class holding data (``class Cases: expected = 6``, also through a base) stay
withheld. A dataclass field's default, pydantic's ``model_config`` and a namedtuple's ``_fields`` and
``_field_defaults`` (:data:`SHAPE`) do not count as data (they are the class's shape; a test that keeps
its expected values there is an oracle: not covered); an ``Enum`` of a test module holds its values
(``_member_map_``) and stays withheld (pickling one of its members from repository code is flagged).
Measured (tests/sandbox/test_rmods_honest.py): the honest references score 1.0 unflagged, 0.0 with
runner_tampering before; the cheats above stay 0.0 with runner_tampering.

Its class put back during the call (``object.__setattr__(module, '__class__', ...)``) by untrusted code
is flagged by the witness's hook. Not covered: the base class's own lookup (``object.__getattribute__(
module, name)``, ``types.ModuleType.__dict__['__dict__'].__get__(module)``: no audit event); what was
taken before the call (the globals dict, a test function or value kept while the test module was
imported, at collection); objects the test hands to repository code (a callback's ``__globals__``: no
audit event). Cost: one scan of ``sys.modules`` per call (about 0.2 ms with 380 modules, under load); a
harmless check per untrusted read of a name.

A handed class's functions' ``__globals__`` (:func:`handed`): CPython raises no audit event for it, and
it was the test module's real dict, so a candidate that guessed a class of the test module read every
constant through a method (strict xfail until then). During the call each function of a handed class
(its bases, metaclass and nested classes of the same module; methods, static and class methods,
property accessors, ``cached_property``, ``partialmethod``, an ``lru_cache`` wrapper, and functions of
that module in their closures or ``__wrapped__``) is swapped for a
copy sharing its code, whose globals are :func:`globals_view`'s dict: the open names, and every other
name looked up through ``__missing__`` and so asked for like the module's attribute (a method's own
frame reading ``FACTOR`` is a pristine test frame: allowed; repository code reading the view: flagged).
Put back by ``undo``. Round 10 (:mod:`tl_rhanded`, where this now lives): a class holding an instance, a
``partial``, a ``singledispatchmethod`` or a data-holding nested class is withheld, a library decorator's wrapper
is copied, a copy's defaults read is judged. Left open: a function held by a class attribute of another module's
class; a ``global`` a handed
method assigns during the call lands in the view and is dropped when the call ends (not seen by the module; no honest test measured does that). Measured
(tests/sandbox/test_rmods_honest.py, ``GLOBALS``): 11 routes (a method, ``.get``, ``dict.__getitem__``, a
static method, a property's getter, a decorated method's closure and ``__wrapped__``, a dataclass's
``__init__``, a ``cached_property``, an ``lru_cache`` wrapper, a ``partialmethod``) scored 1.0 unflagged
before, 0.0 with runner_tampering now; the honest task (a decorated method, a static method, a property,
a cached property, an lru_cache'd method and a partialmethod reading a module constant, also called
from repository code) 1.0 unflagged. Cost (``bench/rmods_globals.py``, in-process, load 10): withhold + undo 20 -> 66 us per call
with 5 handed classes of 4 methods; a handed method's call 2.1x (LOAD_GLOBAL's slow path: globals not
an exact dict); a withheld name read by a handed method also runs the hook's judge, as a module read does.
"""

import sys
import types

from tl_rhanded import DATA, code_like, handed

OPEN = frozenset({"__name__", "__file__", "__package__", "__path__", "__spec__", "__loader__", "__cached__",
                  "__class__", "__builtins__"})


MISS = object()   # no such name
SHAPE = frozenset({"model_config", "_fields", "_field_defaults", "_abc_impl"})   # pydantic's config, a namedtuple's fields: no data


def harmless(value, _type=type, _mro=type.__dict__["__mro__"].__get__, _vars=type.__dict__["__dict__"].__get__,
             _name=type.__dict__["__name__"].__get__, _modname=type.__dict__["__module__"].__get__, _stack=(),
             _code=code_like):
    """True when a test module's attribute ``value`` encodes no test and is handed to any reader during the call
    without asking: a module, a ``typing`` construct, or a class that is no test class (no
    ``unittest.TestCase`` subclass, its name not ``Test*``, pytest's default ``python_classes``, no own
    ``test*`` attribute) and whose classes in its MRO defined outside the stdlib's ``builtins`` hold no
    data of their own (a non-dunder attribute of a :data:`DATA` type, or anything :func:`tl_rhanded.code_like`
    does not count as code in a class of the value's own module: an instance, a ``partial``, a nested class holding
    data) but a dataclass field's default or
    a :data:`SHAPE` name. Read through ``type``'s own descriptors (a metaclass cannot answer)."""
    kind = _type(value)
    if types.ModuleType in _mro(kind) or _modname(kind) == "typing" or kind in (types.GenericAlias, types.UnionType):
        return True
    if type not in _mro(kind) or _name(value)[:4] == "Test":
        return False
    for cls in _mro(value):
        if _modname(cls) == "builtins":
            continue
        if _modname(cls) == "unittest.case" and _name(cls) == "TestCase":
            return False
        own = _vars(cls)
        fields = own.get("__dataclass_fields__", ())
        for key, item in own.items():
            if _type(key) is not str or key[:4] == "test":
                return False
            if key[:2] != "__" and key not in fields and key not in SHAPE and (
                    _type(item) in DATA or _modname(cls) == _modname(value)   # the module's own classes: code only
                    and not _code(item, _modname(value), (*_stack, value), harmless)):
                return False
    return True


def shown(real, ask, _type=type, _get=dict.get):
    """What a reader the tests do not trust gets for ``vars(module)`` (``module.__dict__``): a new
    :class:`Shown` holding the :data:`OPEN` names and the :func:`harmless` values of ``real`` (the
    module's dict), enough for ``typing.get_type_hints``, ``inspect.getmembers`` and ``dir``; looking up
    a name it withholds asks ``ask("get", name)`` (flagged unless trusted) and gives the real value only
    when trusted."""
    keep = {k: v for k, v in list(real.items()) if _type(k) is str and (k in OPEN or harmless(v))}

    class Shown(dict):
        """A test module's names fit to show a reader the tests do not trust (see :func:`shown`)."""

        __slots__ = ()

        def __missing__(self, key, _real=real, _ask=ask):
            if key in _real and _ask("get", key):
                return _real[key]
            raise KeyError(key)

        def get(self, key, default=None, _real=real, _ask=ask, _get=_get):
            """``dict.get``: a handed name as it is, a withheld one only when the hook allows it."""
            if dict.__contains__(self, key):
                return _get(self, key)
            return _real[key] if key in _real and _ask("get", key) else default
    return Shown(keep)


def asker(_audit=sys.audit):
    """``ask(what, name)``: True for an :data:`OPEN` name read, else whether the witness's hook raised
    :class:`tl_rhide.Trusted` on the ``tl.mod`` event ``(what, name)`` (a read for the tests)."""
    from tl_rhide import Trusted

    def ask(what, name, _audit=_audit, _trusted=Trusted, _type=type, _str=str):
        if _type(name) is _str and what == "get" and name in OPEN:
            return True
        try:
            _audit("tl.mod", what, name if _type(name) is _str else "?")
        except _trusted:
            return True
        return False
    return ask


def guard_class(real, _audit=sys.audit, _mget=types.ModuleType.__getattribute__,
                _mset=types.ModuleType.__setattr__, _mdel=types.ModuleType.__delattr__,
                _mdict=types.ModuleType.__dict__["__dict__"].__get__):
    """A ``types.ModuleType`` subclass for module ``real`` (its class during a call): reading, setting or deleting an
    attribute outside :data:`OPEN` raises ``tl.mod`` (args: ``("get"|"set"|"del", name)``) and goes to
    ``real`` only when the witness's hook raises :class:`tl_rhide.Trusted`, else AttributeError; but a
    :func:`harmless` value is read without asking, and ``__dict__`` asks ``("peek", "__dict__")`` (never
    flagged: :func:`judge`) and gives the untrusted reader :func:`shown`'s dict. Its state is bound as
    default arguments (reading a runner function's ``__defaults__`` is flagged)."""
    ask = asker(_audit)

    def __getattribute__(self, name, _real=real, _ask=ask, _get=_mget, _own=_mdict, _harmless=harmless,   # noqa: N807
                         _shown=shown, _type=type, _str=str, _miss=MISS):
        if _type(name) is _str and name == "__dict__":
            return _own(_real) if _ask("peek", name) else _shown(_own(_real), _ask)
        value = _own(_real).get(name, _miss) if _type(name) is _str else _miss
        if value is not _miss and _harmless(value):
            return value
        if _ask("get", name):
            return _get(_real, name)
        raise AttributeError(name)

    def __setattr__(self, name, value, _real=real, _ask=ask, _set=_mset):   # noqa: N807
        if not _ask("set", name):
            raise AttributeError(name)
        _set(_real, name, value)

    def __delattr__(self, name, _real=real, _ask=ask, _del=_mdel):   # noqa: N807
        if not _ask("del", name):
            raise AttributeError(name)
        _del(_real, name)
    return type("module", (types.ModuleType,), {"__getattribute__": __getattribute__, "__setattr__": __setattr__,
                                                "__delattr__": __delattr__, "__slots__": ()})


ASK = [c for c in asker.__code__.co_consts if type(c) is types.CodeType and c.co_name == "ask"]


def withhold(folder, _cache={}, _mods=sys.modules, _type=type, _module=types.ModuleType, _get=dict.get,   # noqa: B006
             _mdict=types.ModuleType.__dict__["__dict__"].__get__, _mro=type.__dict__["__mro__"].__get__,
             _setclass=object.__setattr__):
    """Guard the modules whose file lies under ``folder`` (a str ending in a separator; ``None``: none)
    for one test's call (see the module docstring); returns ``undo()``. ``_cache`` keeps each module's
    class across calls (reachable through this function's defaults only, whose read is flagged)."""
    if _type(folder) is not str or not folder:
        return lambda: None
    done, swaps = [], []
    for mod in list(_mods.values()):
        if _module not in _mro(_type(mod)):
            continue
        f = _get(_mdict(mod), "__file__")
        if _type(f) is not str or not f.startswith(folder):
            continue
        hit = _cache.get(id(mod))
        if hit is None or hit[0] is not mod:
            real = _mdict(mod)
            glb = globals_view(real, asker())
            hit = _cache[id(mod)] = (mod, guard_class(mod), real, glb, {}, dict(glb))
        if _type(mod) is not hit[1]:
            done.append((mod, _type(mod), hit[3], hit[5]))
            _setclass(mod, "__class__", hit[1])
            swaps += handed(hit[2], hit[3], hit[4], harmless)

    def undo(_set=type.__setattr__, _clear=dict.clear, _update=dict.update, _items=dict.items):
        for cls, name, old in reversed(swaps):
            _set(cls, name, old)
        for mod, old, glb, base in done:
            _setclass(mod, "__class__", old)
            _clear(glb)   # a global a handed method assigned during the call (or the reader wrote) goes
            _update(glb, base)
    return undo


def globals_view(real, ask, _get=dict.get, _has=dict.__contains__, _miss=MISS):
    """The ``__globals__`` of a handed class's functions during a call (:func:`handed`), for the test
    module dict ``real``: a dict holding ``real``'s :data:`OPEN` names and the builtins ``real`` does not
    shadow (a builtin's lookup then costs no ``__missing__`` call); a name it lacks is ``real``'s when
    :func:`harmless` or when ``ask("get", name)`` allows it (a pristine test frame, the method's own,
    met first: the judge), else KeyError (the reader flagged); ``get`` alike. ``LOAD_GLOBAL`` of a
    function whose globals are a dict subclass looks names up through ``__missing__`` (CPython 3.11)."""

    class Globals(dict):
        """A test module's globals as a handed class's functions see them during a call."""

        __slots__ = ()

        def __missing__(self, key, _real=real, _ask=ask, _get=_get, _harmless=harmless, _miss=_miss):
            value = _get(_real, key, _miss)
            if value is not _miss and (_harmless(value) or _ask("get", key)):
                return value
            raise KeyError(key)

        def get(self, key, default=None, _has=_has, _get=_get):
            """``dict.get``: a name it holds as it is, another one as :meth:`__missing__` answers."""
            if _has(self, key):
                return _get(self, key)
            try:
                return self.__missing__(key)
            except KeyError:
                return default
    import builtins
    return Globals({**{k: v for k, v in vars(builtins).items() if k not in real and k[:2] != "__"},
                    **{k: real[k] for k in OPEN if k in real}})


def judge(trusted, test_fps, test_files, fingerprint, libs, main_ident, _type=type):
    """``reader(frame)``: ``None`` when a withheld module's attribute read (or write) raised from ``frame``
    is for the tests, else a short text naming the reader. Walking out from ``frame``: a pristine test or
    conftest function (its file one of ``test_files``, its fingerprint one of ``test_fps``) says yes; a
    frame neither ``trusted`` (:func:`tl_proof.prover`'s: the runner, pytest, pluggy) nor genuine library
    code under ``libs`` says no; the outermost frame reached in the main thread (``main_ident``) says yes."""
    import _thread

    from tl_proof import _lib_fps
    fps, files, ident = {}, {}, _thread.get_ident

    def fp_of(code):
        hit = fps.get(id(code))
        if hit is None or hit[0] is not code:
            hit = fps[id(code)] = (code, fingerprint(code))
        return hit[1]

    def library(code):
        name = code.co_filename
        if _type(name) is not str or not name.startswith("/"):
            return False
        known = files.get(name)
        if known is None:
            known = files[name] = _lib_fps(name, libs, fingerprint)
        return fp_of(code) in known

    def reader(frame):
        peek = frame.f_code is ASK[0] and frame.f_locals.get("what") == "peek"
        f, depth = frame, 0
        while f is not None and depth < 400:
            code = f.f_code
            if code.co_filename in test_files and fp_of(code) in test_fps:
                return None
            if not (trusted(f) or library(code)):
                name = code.co_filename
                return "" if peek else name[-150:] if _type(name) is str else "?"
            f, depth = f.f_back, depth + 1
        return None if f is None and ident() == main_ident else "runner and library frames only (a thread?)"
    return reader
