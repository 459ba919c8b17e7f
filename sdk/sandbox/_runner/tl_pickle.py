"""Values of trusted classes across the harness/candidate boundary (stdlib only, Python >= 3.8).

Plain data (exact builtin types) travels as tagged JSON (:mod:`tl_wire`). A value with other
parts travels as a pickle (``{"p": base64}``) under these rules:

- *trusted* classes cross by value: classes defined in the repository's own modules (a module
  whose file lies under the working folder or a test-dependency folder, already imported in the
  receiving process, and never the module that holds the candidate's code), a short list of
  standard classes (:data:`SAFE_STDLIB`: datetime, decimal, fractions, collections, uuid,
  pathlib, SimpleNamespace, inspect's Signature and Parameter) and the builtin containers/exceptions of :data:`SAFE_BUILTINS`;
  and, under the solution module's name, only the value classes both sides agreed on
  (``Trust.pristine``: in the harness the task's own classes, :mod:`tl_pristine`);
- everything else is a *persistent id*: a handle to an object that stays in the candidate
  (``("h", id, type)``: the solution's own classes, functions, anything unknown) or a *reverse
  handle* to an object that stays in the harness (``("r", id, type)``: a lambda key function,
  a callback, an instance of a class defined in a test file), used through calls back.

The harness decodes the candidate's pickles only through :func:`loads_restricted` (a checked dry
run, then the C unpickler; :class:`Restricted`, the pure-Python checked loader, for a broken
one), whose ``find_class`` resolves exactly the classes above (never ``os.system``,
``builtins.eval``/``getattr``, the solution's module, a function of any module) and raises
:class:`Refused` for the rest; nothing a candidate writes can make the harness call anything
else. The candidate decodes the harness's pickles with the plain unpickler (the harness is trusted).
"""

import base64
import io
import os
import pickle
import sys
import types

PROTOCOL = 4
EXACT = frozenset({type(None), bool, int, float, str, bytes, complex, list, tuple, dict, set, frozenset})
SAFE_BUILTINS = frozenset({"object", "set", "frozenset", "list", "dict", "tuple", "int", "float", "complex", "str",
                           "bytes", "bytearray", "bool", "range", "slice"})
NEVER_RAISED = frozenset({"SystemExit", "KeyboardInterrupt", "GeneratorExit", "StopAsyncIteration"})
SAFE_STDLIB = {
    "copyreg": {"_reconstructor"},
    "datetime": {"date", "time", "datetime", "timedelta", "timezone"},
    "decimal": {"Decimal"},
    "fractions": {"Fraction"},
    "collections": {"OrderedDict", "defaultdict", "deque", "Counter"},
    "uuid": {"UUID", "SafeUUID"},
    "pathlib": {"PurePath", "PurePosixPath", "PosixPath", "Path"},
    "types": {"SimpleNamespace"},
    "inspect": {"Signature", "Parameter", "_ParameterKind", "_empty"},
}
STDLIB_DIR = os.path.dirname(os.__file__)
_STDLIB_NAMES = getattr(sys, "stdlib_module_names", frozenset({
    "os", "posix", "nt", "sys", "subprocess", "builtins", "shutil", "importlib", "ctypes", "pickle", "socket",
    "pty", "runpy", "code", "codecs", "io", "signal", "multiprocessing", "threading", "functools", "operator"}))


class Refused(pickle.UnpicklingError):
    """A pickle named something outside the trusted classes. ``hostile``: a standard-library
    callable, the solution's own module or the runner's (only a subverted encoder writes
    those); otherwise a module the receiving side has not imported (an honest mismatch)."""

    def __init__(self, module, name, hostile):
        super().__init__("%s.%s may not cross the process boundary by value" % (module, name))
        self.module, self.name, self.hostile = module, name, hostile


def is_stdlib_module(name):
    """True for a module of the standard library (by name, or by file location)."""
    top = name.split(".", 1)[0]
    if top in sys.builtin_module_names or top in _STDLIB_NAMES:
        return True
    mod = sys.modules.get(name)
    path = getattr(mod, "__file__", None) or ""
    return path.startswith(STDLIB_DIR + os.sep) and "-packages" not in path


def std_iterator(t):
    """True for an iterator type of the standard library (``iter(xs)``, generators, ``itertools``):
    such a value crosses by reference, never as a copy, so its position is shared."""
    return hasattr(t, "__next__") and is_stdlib_module(str(getattr(t, "__module__", None) or ""))


class Trust:
    """Which modules are the repository's own (see the module docstring).

    ``roots``: folders whose modules are trusted (the working folder, test dependencies);
    ``target``: the module name that holds the candidate's code (never trusted); ``real``:
    ``{root: its real path}`` resolved ahead (the warm server's, before any task ran: a fresh
    candidate's first ``realpath`` cost ~55 copied pages, issue 14); other roots are resolved here."""

    def __init__(self, roots, target, real=None):
        real = real or {}
        self.roots = tuple((real.get(r) or os.path.realpath(r)) + os.sep for r in roots if r)
        self.target = target
        self._known = {}
        self.pristine = {}   # name -> value class of the target module, both sides agree (tl_pristine)

    def repo_module(self, name):
        """The already-imported repository module ``name``, or None."""
        mod = sys.modules.get(name)
        seen = self._known.get(name)
        if seen is not None and seen[0] is mod:
            return mod if seen[1] else None
        ok = (type(mod) is type(sys) and name != self.target and not name.startswith("tl_") and bool(self.roots)
              and os.path.realpath(getattr(mod, "__file__", None) or "/nonexistent").startswith(self.roots))
        self._known[name] = (mod, ok)
        return mod if ok else None

    def allowed_class(self, cls):
        """True when instances of ``cls`` (a type) may cross by value."""
        module, qual = getattr(cls, "__module__", None), getattr(cls, "__qualname__", None)
        if type(module) is not str or type(qual) is not str:
            return False
        try:
            return self.find(module, qual) is cls
        except Refused:
            return False

    def find(self, module, name):
        """What ``find_class(module, name)`` may return; raises :class:`Refused` otherwise."""
        if module == "builtins":
            obj = _builtin(name)
            if obj is not None:
                return obj
            raise Refused(module, name, True)
        if name in SAFE_STDLIB.get(module, ()):
            __import__(module)
            return getattr(sys.modules[module], name)
        if module == self.target and name in self.pristine:   # the task's own class (tl_pristine)
            return self.pristine[name]
        mod = self.repo_module(module)
        if mod is None:
            hostile = module == self.target or module.startswith(("tl_", "pytest", "_pytest", "pluggy")) \
                or is_stdlib_module(module)
            raise Refused(module, name, hostile)
        obj = mod
        for part in name.split("."):
            if part.startswith("__") or part == "<locals>":
                raise Refused(module, name, False)
            obj = getattr(obj, part, None)
        if isinstance(obj, type) and obj.__module__ == module:
            return obj
        kind = type(obj)
        if _is_enum_member(obj) and kind.__module__ == module:
            return obj
        if "." not in name and not name.startswith("_") and kind.__module__ == module and not callable(obj) \
                and self.allowed_class(kind):
            return obj   # a module-level instance of the module's own class (``UTC = Utc()``): this side's own
        raise Refused(module, name, False)


def _builtin(name):
    import builtins
    obj = getattr(builtins, name, None)
    if name in SAFE_BUILTINS:
        return obj
    if isinstance(obj, type) and issubclass(obj, BaseException) and name not in NEVER_RAISED:
        return obj
    return None


def _is_enum_member(obj):
    enum = sys.modules.get("enum")
    return enum is not None and isinstance(obj, enum.Enum)


class _Pickler(pickle.Pickler):
    """Enum members as ``(cls, (value,))`` (some Pythons reduce them to ``getattr(cls, name)``,
    and ``getattr`` never crosses); every other by-value object through ``guard`` if set."""

    guard = None

    def reducer_override(self, obj):
        """Enum members by value; everything else as the guard decides (untrusted values become handles)."""
        if _is_enum_member(obj):
            return type(obj), (obj._value_,)
        if self.guard is None or isinstance(obj, type):
            return NotImplemented
        return self.guard(obj)


def dumps(value, persistent_id, guard=None):
    """Pickle ``value`` (protocol 4) with ``persistent_id(obj) -> None | tuple``; base64 text.
    ``guard(obj)``: the reduce tuple of a by-value object, or NotImplemented, or raises
    ``pickle.PicklingError`` (the candidate's check that a value rebuilds from trusted classes)."""
    buf = io.BytesIO()
    pickler = _Pickler(buf, PROTOCOL)
    pickler.guard = guard
    pickler.persistent_id = persistent_id
    pickler.dump(value)
    return base64.b64encode(buf.getvalue()).decode("ascii")


class Restricted(pickle._Unpickler):
    """The harness's unpickler: only :meth:`Trust.find` classes, persistent ids via ``load_id``;
    and it changes only objects this pickle made. ``BUILD`` (which ``setattr``s its state's slot
    part on its target), ``SETITEM(S)``, ``APPEND(S)`` and ``ADDITEMS`` on a class, an enum member,
    or anything named (``find_class``) or held by id (``persistent_load``) is refused as hostile:
    ``(None, {"__eq__": bool})`` built on a kept class made every instance equal to anything, in
    the harness, for the rest of the run (the candidate writes its own frames; no encoder of its
    makes such a pickle). The pure-Python unpickler, so each of those opcodes is checked."""

    dispatch = dict(pickle._Unpickler.dispatch)  # noqa: RUF012 - the opcode table, per class

    def __init__(self, data, trust, load_id):
        super().__init__(io.BytesIO(data))
        self.trust, self.load_id, self.named = trust, load_id, {}

    def find_class(self, module, name):
        """Resolve only trusted classes; anything else is refused."""
        obj = self.trust.find(module, name)
        self.named[id(obj)] = obj
        return obj

    def persistent_load(self, pid):
        """Resolve a persistent id through the caller's ``load_id``."""
        obj = self.load_id(pid)
        self.named[id(obj)] = obj
        return obj

    def refuse_existing(self, target, op):
        """Raise :class:`Refused` (hostile) when ``op`` would change an object this pickle did not make."""
        if isinstance(target, (type, types.ModuleType)) or id(target) in self.named or _is_enum_member(target):
            raise Refused("pickle", f"{op} on a {type(target).__name__} that existed before", True)


def _checked(name, where):
    """The loader of opcode ``name``, refusing a target that existed before the pickle
    (``where``: its stack index, or None for the object below the mark)."""
    load = pickle._Unpickler.dispatch[getattr(pickle, name)[0]]

    def checked(self):
        self.refuse_existing(self.metastack[-1][-1] if where is None else self.stack[where], name)
        return load(self)
    return checked


for _name, _where in (("BUILD", -2), ("SETITEM", -3), ("APPEND", -2), ("SETITEMS", None), ("APPENDS", None),
                      ("ADDITEMS", None)):
    Restricted.dispatch[getattr(pickle, _name)[0]] = _checked(_name, _where)


def loads_restricted(text, trust, load_id):
    """Decode a candidate's pickle (base64 text) in the harness; raises :class:`Refused` or
    ``pickle.UnpicklingError``/``ValueError`` for a broken one. The same guarantee as
    :class:`Restricted` at C speed: a dry run (:class:`_DryRun`) first, then the C unpickler."""
    if type(text) is not str:
        raise pickle.UnpicklingError("a pickle must be text")
    data = base64.b64decode(text.encode("ascii"), validate=True)
    try:
        _DryRun(io.BytesIO(data), trust).load()
    except _Changed as exc:
        raise Refused("pickle", "%s on an object that existed before" % exc, True) from None
    except Refused:
        raise
    except Exception:  # noqa: BLE001 - a broken pickle: the checked loader gives the exact error
        return Restricted(data, trust, load_id).load()
    return _Fast(io.BytesIO(data), trust, load_id).load()


# -- the fast path (issue 14): measured on 10,000 dataclass instances, the pure-Python Restricted
# took 124 ms against 11 ms for the C unpickler. A pickle's stack effects are fixed by its opcodes,
# so which object each BUILD/SETITEM(S)/APPEND(S)/ADDITEMS changes is known from a run with
# stand-ins: _DryRun gives every object the pickle names (find_class, persistent_load) as a
# stand-in that raises _Changed when one of those opcodes reaches it, and every object the
# pickle makes as a _Fresh that takes anything; a trusted class whose call can return an object
# that existed before (an Enum, a metaclass, a module type) makes a named stand-in too. Only
# when that run passes does the C unpickler decode the same bytes with the real classes. A
# mark-based opcode with no items changes nothing in C and is not refused there (Restricted
# refuses it).

class _Changed(Exception):
    """A dry-run opcode reached an object the pickle did not make (not an AttributeError, which
    the unpickler's attribute lookups would swallow)."""


def _changed(obj, *args):
    raise _Changed("BUILD, SETITEM(S), APPEND(S) or ADDITEMS")


class _Fresh:
    """Dry run: an object the pickle made. Takes any state (C-level no-ops where possible)."""

    __setstate__ = append = extend = add = id

    def __init__(self, *args, **kwargs):
        pass

    def __setitem__(self, key, value):
        pass

    def __call__(self, *args, **kwargs):
        return _Fresh()


class _NamedMeta(type):
    """Dry run: the class of a stand-in for a named class; each mutating opcode on the class raises."""

    __setstate__ = append = extend = add = property(_changed)
    __setitem__ = _changed


class _Named:
    """Dry run: a named object that is no class (a persistent id, an enum member, a function)."""

    __setstate__ = append = extend = add = property(_changed)
    __setitem__ = _changed

    def __call__(self, *args, **kwargs):
        return _Fresh()


def _named_new(cls, *args, **kwargs):
    return _Named()


class _DryRun(pickle.Unpickler):
    """The C unpickler over stand-ins (see above); :meth:`find_class` refuses as the real run does."""

    def __init__(self, file, trust):
        super().__init__(file)
        self.trust, self.standins = trust, {}

    def find_class(self, module, name):
        """The stand-in of the trusted class (or enum member, function) ``module.name``."""
        real = self.trust.find(module, name)
        got = self.standins.get(id(real))
        if got is None:
            enum = sys.modules.get("enum")
            if not isinstance(real, type):
                got = _Named()
            elif issubclass(real, (type, types.ModuleType)) or (enum is not None and issubclass(real, enum.Enum)):
                got = _NamedMeta("standin", (_Fresh,), {"__new__": _named_new})
            else:
                got = _NamedMeta("standin", (_Fresh,), {})
            self.standins[id(real)] = (got, real)
            return got
        return got[0]

    def persistent_load(self, pid):
        """Every persistent id stands for an object that existed before."""
        return _Named()


class _Fast(pickle.Unpickler):
    """The C unpickler with :meth:`Trust.find` and the caller's ``load_id`` (after a dry run passed)."""

    def __init__(self, file, trust, load_id):
        super().__init__(file)
        self.trust, self.load_id = trust, load_id

    def find_class(self, module, name):
        """Resolve only trusted classes."""
        return self.trust.find(module, name)

    def persistent_load(self, pid):
        """Resolve a persistent id through the caller's ``load_id``."""
        return self.load_id(pid)


def loads_trusted(text, load_id):
    """Decode the harness's pickle in the candidate (the harness is trusted)."""
    unpickler = pickle.Unpickler(io.BytesIO(base64.b64decode(text.encode("ascii"))))
    unpickler.persistent_load = load_id
    return unpickler.load()


def apply_state(orig, new):
    """Copy the state of ``new`` (the candidate's copy of an argument after a call) onto the
    harness's original ``orig``: list/dict/set/bytearray/deque contents, instance ``__dict__``
    (names without dunders) and slots. Nothing happens when the types differ. Returns True
    when something was applied."""
    if type(new) is not type(orig) or isinstance(orig, type):
        return False
    if isinstance(orig, (list, bytearray)):
        orig[:] = new
    elif isinstance(orig, dict):
        orig.clear()
        orig.update(new)
    elif isinstance(orig, set):
        orig.clear()
        orig |= new
    elif type(orig).__name__ == "deque" and type(orig).__module__ == "collections":
        orig.clear()
        orig.extend(new)
    state = getattr(new, "__dict__", None)
    if type(state) is dict and type(getattr(orig, "__dict__", None)) is dict:
        keep = {k: v for k, v in state.items() if type(k) is str and not k.startswith("__")}
        orig.__dict__.clear()
        orig.__dict__.update(keep)
    for cls in type(orig).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if type(slot) is str and not slot.startswith("__"):
                try:
                    object.__setattr__(orig, slot, object.__getattribute__(new, slot))
                except AttributeError:
                    pass
    return True
