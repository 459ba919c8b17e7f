"""The repository's own value classes of the solution's module, in the harness (issue 13; stdlib only).

A function under test often returns instances of classes defined *in its own module*: tabulate's
``TableFormat``/``Line`` namedtuples and its ``JupyterHTMLStr(str)``, a module's dataclass or enum.
The solution's module is the candidate's, so such an instance used to arrive as its base value (a
plain ``tuple``, ``str``) or as a handle. Here the harness builds those classes from the task's
*original* file (``payload["original"]``: the file as the task shipped it, from the request, never
the solution's file): :func:`install` executes that source in a module object of the same name that
is never put in ``sys.modules``, keeps only the *value classes* (:func:`value_classes`: namedtuples,
subclasses of ``str``/``int``/``float``/``tuple``/``bytes``, dataclasses, ``IntEnum``/``StrEnum``/
``IntFlag``, plain classes defining ``__eq__`` and an arithmetic operator (:func:`_arithmetic`); a
plain ``Enum`` member crosses by reference, as before, keeping its identity) whose definition
the solution left unchanged, whose comparison methods reach no top-level function the solution
changed (:func:`_judged_by_changed`), and that are not the entry point (or the entry point's class), and
rebinds every other function and class of that namespace to the solution's (the
:class:`tl_rmodule.RemoteModule`'s names), so a method of a kept class that calls a module function
calls the solution's, as in one process. The candidate is told the kept names (``op: values``);
their instances then cross by value (:mod:`tl_pickle`, ``Trust.pristine``): the harness's
restricted unpickler rebuilds them as the kept classes, and sends them back the same way. No
solution code runs here: only the task's own source.
"""

import ast
import importlib
import os
import re
import types

# a plain ``Enum``/``Flag`` member stays a handle: its identity already holds (``f() is mod.NOTHING``
# for ``NOTHING = _Nothing.NOTHING``, which the tests hold as a name of the solution's module)
VALUE_BASES = frozenset({"str", "int", "float", "tuple", "bytes", "NamedTuple", "IntEnum", "StrEnum", "IntFlag"})
FACTORIES = frozenset({"namedtuple", "NamedTuple", "IntEnum", "StrEnum", "IntFlag"})
CHEAP = re.compile(r"\b(namedtuple|NamedTuple|dataclass|IntEnum|StrEnum|IntFlag)\b|"
                   r"class\s+\w+\s*\(\s*(str|int|float|tuple|bytes)\b|def\s+__(r?add|r?sub)__\b")
ARITHMETIC = frozenset({"__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__"})


def _arithmetic(node):
    """A plain class (no base, or ``object``) of numbers-like values: it defines ``__eq__`` and an
    arithmetic operator (isodate's ``Duration``: ``date + Duration`` must run the task's operator
    here, where the solution cannot change it, calling the solution's functions)."""
    if any(_name(b) != "object" for b in node.bases) or node.keywords:
        return False
    defined = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    defined |= {t.id for n in node.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    return "__eq__" in defined and bool(defined & ARITHMETIC)


def _name(node):
    """The last name of ``a.b.c`` or ``c`` (``Call`` nodes: of the called function); else ""."""
    node = node.func if isinstance(node, ast.Call) else node
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _bindings(source, name):
    """How many top-level lines of ``source`` bind ``name`` (class, def, assignment, import)."""
    n = re.escape(name)
    return len(re.findall(r"^(?:class\s+%s\b|(?:async\s+)?def\s+%s\b|%s\s*(?::|=(?!=))|(?:from\s+\S+\s+)?import\b.*\b%s\b)"
                          % (n, n, n, n), source, re.M))


def _unchanged(lines, node, name, original, solution):
    """True when ``solution`` (the spliced file: the task's lines with the solution's definitions
    put in) holds the original definition ``node`` of ``name`` verbatim and binds ``name`` at the
    top as often as the original does (no definition of the solution replaced or rebound it)."""
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
    text = "\n" + "\n".join(lines[start:node.end_lineno]) + "\n"
    return text in "\n" + solution + "\n" and _bindings(solution, name) == _bindings(original, name)


COMPARE = frozenset({"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__", "__len__"})


def _judged_by_changed(node, defs, lines, original, solution):
    """True when a comparison method of class ``node`` (``__eq__``... defined or assigned in its body)
    reaches, by global name and through the module's other top-level functions, a top-level function
    or class that ``solution`` changed: kept, it would run here with the solution's helper deciding
    ``==`` (``def _same(a, b): return True``: anything equal)."""
    todo = [m.value if isinstance(m, ast.Assign) else m for m in node.body
            if (isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name in COMPARE)
            or (isinstance(m, ast.Assign) and any(isinstance(t, ast.Name) and t.id in COMPARE for t in m.targets))]
    seen = {node.name}
    while todo:
        for n in ast.walk(todo.pop()):
            if isinstance(n, ast.Name) and n.id in defs and n.id not in seen:
                seen.add(n.id)
                if not _unchanged(lines, defs[n.id], n.id, original, solution):
                    return True
                if not isinstance(defs[n.id], ast.ClassDef):
                    todo.append(defs[n.id])
    return False


def value_classes(original, solution, entry):
    """Top-level names of ``original`` that define value classes (see the module docstring) and
    whose definition ``solution`` (the spliced file) repeats unchanged; never ``entry``'s top name,
    nor a class with a base of the module that is not kept (its methods: the entry point's, or changed).
    Only ``original`` is parsed (once, and only when a cheap text search finds a candidate)."""
    if not CHEAP.search(original):   # most modules: no parse at all
        return []
    try:
        tree = ast.parse(original)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    lines, kept = original.splitlines(), []
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            dataclass = any(_name(d) == "dataclass" for d in node.decorator_list)
            valued = dataclass or _arithmetic(node) or any(_name(b) in VALUE_BASES or _name(b) in kept
                                                           or (isinstance(b, ast.Call) and _name(b) in FACTORIES)
                                                           for b in node.bases)
            # a base of this module that is not kept is the solution's (its methods may be the entry point)
            valued = valued and not any(_name(b) in classes and _name(b) not in kept for b in node.bases)
            valued = valued and not _judged_by_changed(node, defs, lines, original, solution)
            name = node.name
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            valued, name = _name(node.value) in FACTORIES, node.targets[0].id
        else:
            continue
        if valued and name != (entry or "").split(".")[0] and _unchanged(lines, node, name, original, solution):
            kept.append(name)
    return kept


def _execute(original, payload, name, cwd, solution=None, kept=()):
    """The task's original file run as a module named ``name`` that is not in ``sys.modules``.
    ``solution`` (the tests' module of proxies): each top-level function and class other than
    ``kept`` is never defined here, its name is bound to the solution's in its place, so nothing
    captures the task's own (``RENDER = {"a": fmt}``, ``style = staticmethod(fmt)``, ``def
    render(self, f=fmt)``, a registering decorator): the reference's code would decide a test."""
    path = os.path.join(cwd, payload["target"])
    mod = types.ModuleType(name)
    mod.__file__ = path
    if payload["target"].endswith("__init__.py"):
        mod.__path__, mod.__package__ = [os.path.dirname(path)], name
    else:
        mod.__package__ = name.rpartition(".")[0]
    tree = ast.parse(original)
    if solution is not None:
        for i, node in enumerate(tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name not in kept:
                bind = ast.parse(f"{node.name} = __tl_solutions__({node.name!r})").body[0]
                tree.body[i] = ast.increment_lineno(bind, node.lineno - 1)
        mod.__dict__["__tl_solutions__"] = lambda key: getattr(solution, key)
    exec(compile(tree, path, "exec"), mod.__dict__)
    mod.__dict__.pop("__tl_solutions__", None)
    return mod


def install(payload, remote, module, source, cwd):
    """Build the kept classes (see the module docstring) and tell the candidate their names;
    ``module`` is the tests' :class:`tl_rmodule.RemoteModule`, ``source`` the solution's file.
    Returns ``{name: class}`` (empty when there is none, or the original does not run here)."""
    original = payload.get("original")
    if type(original) is not str or source is None:
        return {}
    names = value_classes(original, source, payload.get("entry"))
    if not names:
        return {}
    name = module.__name__
    try:
        importlib.import_module(name)   # the tests' module of proxies, in sys.modules (dataclasses reads it)
        mod = _execute(original, payload, name, cwd, module, names)
    except BaseException:  # noqa: BLE001 - the classes then cross as before (base values, handles)
        return {}
    kept = {n: mod.__dict__.get(n) for n in names}
    kept = {n: c for n, c in kept.items() if isinstance(c, type) and c.__module__ == name and c.__qualname__ == n}
    for key, value in list(mod.__dict__.items()):
        if key not in kept and isinstance(value, (type, types.FunctionType)) and getattr(value, "__module__", None) == name:
            mod.__dict__[key] = getattr(module, key)   # the solution's: a kept class's method calls it
    if not kept:
        return {}
    try:
        got = remote.result(remote.ask({"op": "values", "names": sorted(kept)}))
    except Exception:  # noqa: BLE001 - the candidate did not take them: they cross as before
        return {}
    kept = {n: c for n, c in kept.items() if type(got) is list and n in got}
    remote.codec.trust.pristine = kept
    return kept
