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

Its class put back during the call (``object.__setattr__(module, '__class__', ...)``) by untrusted code
is flagged by the witness's hook. Not covered: the base class's own lookup (``object.__getattribute__(
module, name)``, ``types.ModuleType.__dict__['__dict__'].__get__(module)``: no audit event); what was taken before the call (the globals dict, a test function
or value kept while the test module was imported, at collection); objects the test hands to repository
code (a callback's ``__globals__``: no audit event).
Repository code that, during a test, pickles a test's object, resolves the type hints of a class of a
test module (``typing.get_type_hints`` reads its module's ``__dict__``: attrs/pydantic-like libraries) or
scans modules' non-dunder attributes is flagged even if honest. Cost: one scan of ``sys.modules`` per
call (about 0.2 ms with 380 modules, under load).
"""

import sys
import types

OPEN = frozenset({"__name__", "__file__", "__package__", "__path__", "__spec__", "__loader__", "__cached__",
                  "__class__", "__builtins__"})


def guard_class(real, _audit=sys.audit, _mget=types.ModuleType.__getattribute__,
                _mset=types.ModuleType.__setattr__, _mdel=types.ModuleType.__delattr__):
    """A ``types.ModuleType`` subclass for module ``real`` (its class during a call): reading, setting or deleting an
    attribute outside :data:`OPEN` raises ``tl.mod`` (args: ``("get"|"set"|"del", name)``) and goes to
    ``real`` only when the witness's hook raises :class:`tl_rhide.Trusted`, else AttributeError. Its
    state is bound as default arguments (reading a runner function's ``__defaults__`` is flagged)."""
    from tl_rhide import Trusted

    def ask(what, name, _audit=_audit, _trusted=Trusted, _type=type, _str=str):
        if _type(name) is _str and what == "get" and name in OPEN:
            return True
        try:
            _audit("tl.mod", what, name if _type(name) is _str else "?")
        except _trusted:
            return True
        return False

    def __getattribute__(self, name, _real=real, _ask=ask, _get=_mget):   # noqa: N807
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


def withhold(folder, _cache={}, _mods=sys.modules, _type=type, _module=types.ModuleType, _get=dict.get,   # noqa: B006
             _mdict=types.ModuleType.__dict__["__dict__"].__get__, _mro=type.__dict__["__mro__"].__get__,
             _setclass=object.__setattr__):
    """Guard the modules whose file lies under ``folder`` (a str ending in a separator; ``None``: none)
    for one test's call (see the module docstring); returns ``undo()``. ``_cache`` keeps each module's
    class across calls (reachable through this function's defaults only, whose read is flagged)."""
    if _type(folder) is not str or not folder:
        return lambda: None
    done = []
    for mod in list(_mods.values()):
        if _module not in _mro(_type(mod)):
            continue
        f = _get(_mdict(mod), "__file__")
        if _type(f) is not str or not f.startswith(folder):
            continue
        hit = _cache.get(id(mod))
        if hit is None or hit[0] is not mod:
            hit = _cache[id(mod)] = (mod, guard_class(mod))
        if _type(mod) is not hit[1]:
            done.append((mod, _type(mod)))
            _setclass(mod, "__class__", hit[1])

    def undo():
        for mod, old in done:
            _setclass(mod, "__class__", old)
    return undo


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
        f, depth = frame, 0
        while f is not None and depth < 400:
            code = f.f_code
            if code.co_filename in test_files and fp_of(code) in test_fps:
                return None
            if not (trusted(f) or library(code)):
                name = code.co_filename
                return name[-150:] if _type(name) is str else "?"
            f, depth = f.f_back, depth + 1
        return None if f is None and ident() == main_ident else "runner and library frames only (a thread?)"
    return reader
