"""What ``import <solution module>`` gives the tests in the harness: a module of names that
are looked up in the candidate process on first use (split from :mod:`tl_remote`).

Exception classes the solution's module defines are *mirrored* (:func:`mirrors`): read from its
source with :mod:`ast` (never run), each ``class E(ValueError)`` whose bases are builtin
exceptions or classes mirrored before it becomes a real, empty class of the same name, module
and bases here, so ``pytest.raises(mod.E)`` and ``except mod.E`` work; an exception of that
class raised in the candidate is raised here as the mirror (with its plain ``args``), and the
mirror crosses to the candidate as a handle to the solution's own class.
"""

import ast
import builtins
import os

from tl_remote import RemoteObject, _meta


class RemoteName(RemoteObject):
    """A name of the solution's module, looked up in the candidate on first use."""

    __doc__ = _meta("__doc__", __doc__)   # on a name: the remote object's (tl_remote._Meta)
    __module__ = _meta("__module__", __name__)

    def __init__(self, remote, name):
        super().__init__(remote, None, name)

    def _tl_target(self):
        ref = object.__getattribute__(self, "_tl_ref")
        if ref is None:
            got = self._tl_remote.result(self._tl_remote.ask({"op": "get", "name": self._tl_type}))
            ref = got._tl_target() if isinstance(got, RemoteObject) else ("v", got)
            object.__setattr__(self, "_tl_ref", ref)
            if ref[0] == "h":   # this name is the proxy of that object from now on (interned)
                self._tl_remote.codec.interned[ref[1]] = self
        return ref

    def __getattr__(self, name):
        """A changing method of a module-level set, dict or list (``mod.UNCOUNTABLES.add(w)``) is
        applied to the copy the tests read and mirrored to the solution's own (:func:`_mirrored`)."""
        got = RemoteObject.__getattr__(self, name)
        kind, x = self._tl_target()
        if kind == "v" and name in MUTATORS.get(type(x), ()):
            return _mirrored(self, x, name, got)
        return got

    def __setitem__(self, key, value):
        """``mod.REGISTRY[key] = value`` on a module-level dict or list: set in the solution's own
        (as in one process), and in the copy the tests read."""
        kind, x = self._tl_target()
        if kind == "h":
            self._tl_remote.op("setitem", self, key, value)
            return
        if type(x) not in (dict, list):
            raise TypeError("'%s' object does not support item assignment" % type(x).__name__)
        self._tl_remote.result(self._tl_remote.ask({"op": "gset", "name": self._tl_type,
                                                    "args": self._tl_remote.codec.to_wire([key, value])}))
        x[key] = value

    def __delitem__(self, key):
        """``del mod.REGISTRY[key]``: as :meth:`__setitem__`."""
        kind, x = self._tl_target()
        if kind == "h":
            self._tl_remote.op("delitem", self, key)
            return
        if type(x) not in (dict, list):
            raise TypeError("'%s' object doesn't support item deletion" % type(x).__name__)
        self._tl_remote.result(self._tl_remote.ask({"op": "gset", "name": self._tl_type,
                                                    "args": self._tl_remote.codec.to_wire([key])}))
        del x[key]


MUTATORS = {set: frozenset({"add", "discard", "remove", "update", "clear", "pop", "difference_update",
                             "intersection_update", "symmetric_difference_update"}),
            dict: frozenset({"update", "pop", "popitem", "clear", "setdefault"}),
            list: frozenset({"append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse"})}
ORDERLESS = frozenset({"sort", "reverse", "insert", "pop"})   # a list's change sent as its new contents


def _mirrored(name, copy, method, bound):
    """``bound`` (``copy.method``) that, once it returned, makes the same change to the solution's
    module-level object (op ``gset``). The tests' copy decides the outcome (its result, its error);
    the candidate's answer is never read, so nothing of the solution's comes back. A change whose
    replay could differ there is sent as what it did: ``set.pop()`` as ``discard(x)``,
    ``dict.popitem()`` as ``pop(key)``, a list reordered or popped as its new contents."""
    def method_(*args, **kwargs):
        args = tuple(a if isinstance(a, (str, bytes, tuple, list, dict, set, frozenset)) or not hasattr(a, "__iter__")
                     else list(a) for a in args)   # an iterator is read once, here
        result = bound(*args, **kwargs)
        op, sent = method, list(args)
        if type(copy) is set and method == "pop":
            op, sent = "discard", [result]
        elif type(copy) is dict and method in ("popitem", "update"):
            op, sent = ("pop", [result[0]]) if method == "popitem" else ("update", [dict(*args, **kwargs)])
        elif type(copy) is list and (method in ORDERLESS or kwargs):
            op, sent = "__replace__", [list(copy)]
        remote = name._tl_remote
        remote.ask({"op": "gset", "name": name._tl_type, "method": op, "args": remote.codec.to_wire(sent)})
        return result
    return method_


def _base_exception(node, made):
    """The class a base expression of an exception class names: a builtin exception, or one
    mirrored before it; None otherwise."""
    if isinstance(node, ast.Name):
        if node.id in made:
            return made[node.id]
        obj = getattr(builtins, node.id, None)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            return obj
    return None


class _Mirror(type):
    """The metaclass of a mirrored exception class: ``isinstance(x, mod.E)`` also holds for a handle of
    an instance of the solution's own ``E`` (one returned, not raised: validators' ``ValidationError``),
    asked in the candidate by the MRO (``isa``; the mirror crosses as the solution's class)."""

    def __instancecheck__(cls, instance):
        if type.__instancecheck__(cls, instance):
            return True
        remote = cls.__dict__.get("_tl_remote")
        if remote is None or not isinstance(instance, RemoteObject) or instance._tl_target()[0] != "h":
            return False
        return remote.op("isa", instance, cls) is True


def mirrors(source, module, remote=None):
    """``{name: class}``: the exception classes defined at the top of ``source`` (the
    solution's file, parsed, never run) whose bases all resolve (see :func:`_base_exception`);
    ``remote`` (a :class:`tl_remote.Remote`) answers ``isinstance`` for its handles (:class:`_Mirror`)."""
    try:
        tree = ast.parse(source or "")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    made = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.keywords or not node.bases:
            continue
        bases = [_base_exception(b, made) for b in node.bases]
        if all(bases):
            try:
                made[node.name] = _Mirror(node.name, tuple(bases), {
                    "__module__": module, "__qualname__": node.name, "__doc__": ast.get_docstring(node),
                    "_tl_mirror": True, "_tl_remote": remote})
            except TypeError:   # bases that cannot be combined (a layout conflict)
                continue
    return made


def top_names(source):
    """Every name bound at the top of ``source`` (definitions, assignments, imports), in order."""
    try:
        tree = ast.parse(source or "")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            names += [t.id for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                      if isinstance(t, ast.Name)]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
    return [n for n in dict.fromkeys(names) if not (n.startswith("__") and n.endswith("__"))]


class RemoteModule(type(os)):
    """What ``import solution`` gives the tests: every attribute a :class:`RemoteName`, but
    the mirrored exception classes (see the module docstring)."""

    def __init__(self, name, remote, public=(), source=None):
        super().__init__(name)
        object.__setattr__(self, "_tl_remote", remote)
        object.__setattr__(self, "_tl_names", {})
        object.__setattr__(self, "_tl_all", list(public))
        object.__setattr__(self, "_tl_top", top_names(source))
        found = mirrors(source, name, remote)
        object.__setattr__(self, "_tl_mirrors", found)
        remote.codec.mirrors = {cls: n for n, cls in found.items()}
        remote.mirrors = (name, found)

    @property
    def __dict__(self):
        """``vars(mod)``: the module's own attributes and a name for each top-level name of the
        solution's source (read with :mod:`ast`), as the module's namespace would hold them."""
        own = dict(type(os).__dict__["__dict__"].__get__(self))
        out = {k: v for k, v in own.items() if k.startswith("__")}
        for name in object.__getattribute__(self, "_tl_top"):
            out[name] = self.__getattr__(name)
        return out

    def __getattr__(self, name):
        if name == "__all__":   # ``from <solution> import *``: the names read from its source
            return list(object.__getattribute__(self, "_tl_all"))
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        found = object.__getattribute__(self, "_tl_mirrors")
        if name in found:
            return found[name]
        names = object.__getattribute__(self, "_tl_names")
        if name not in names:
            names[name] = RemoteName(object.__getattribute__(self, "_tl_remote"), name)
        return names[name]
