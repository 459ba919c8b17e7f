"""Run-time defences of the repository test process beyond the witness (change tasks, issue 14; stdlib only).

A change task's tests run in the candidate's process (:mod:`tl_repo`), so these are layers, never a
boundary: each closes a route a red-team cheat took (``tests/rewards/test_redteam_round4.py``) and
says what it leaves open. Their state is bound as default arguments (replacing a runner function's
``__defaults__`` or ``__code__`` is flagged by the witness's hook), never read from module globals.

- Comparisons: decided by the shadow of :mod:`tl_shadow` (the test files' comparisons, ``+ - * /``
  and ``self.assertEqual``-like calls recomputed on canonical data; what it leaves open is said
  there). Before each use of its helpers' names in a genuine test function's frame (:func:`marks`,
  :data:`SHADOW`), within the first :data:`BUDGET` opcodes of that frame, the trace function checks
  they are still the helpers (:func:`tl_shadow.guarded`: ``runner_tampering``), as the witness's hook
  does when the test returns. The older probe (:func:`probe`) stays for the ``==``/``!=``/``in``
  left in a test's frame (none after the shadow, but for code the shadow does not rewrite): each
  local of the frame, and each item of a local container, whose class's ``__eq__`` (or ``__ne__``)
  is neither a builtin type's nor genuine library or test code (``tl.lib``), is asked whether it
  equals a fresh :class:`Probe` and, for a builtin subclass, a plain value one step from its own;
  an answer that does not depend on its operand is ``always_equal``. Not covered by the probe
  (covered by the shadow where it rewrites): an ``__eq__`` that answers the probe honestly and lies
  later, comparisons outside the test's own frame, and those past the opcode budget (the cost stays
  bounded, measured by ``bench/repo_guard.py``).
- Runner names (:func:`marks`): before the test's frame loads a public name of pytest's or
  unittest's modules (``pytest.raises``...), the hook compares those modules with their state when
  armed (:func:`tl_proof.rebinding`, ``tl.step``), and the test module's own names bound to them at
  its top level (``from pytest import raises``: :func:`with_globals`): a liar swapped in and put
  back within the test is seen while it is in place (within the same budget; at the test's return
  in any case).
- Signals and pytest's objects (:func:`signals`, :func:`hide`, :class:`Withheld`): in :mod:`tl_rhide`,
  re-exported here.
"""

import os
import sys
import types

from tl_rhide import Trusted, Withheld, hide, signals  # noqa: F401 - re-exported (tl_repo, tests, bench)

LOADS = frozenset({"LOAD_ATTR", "LOAD_METHOD", "LOAD_GLOBAL", "LOAD_NAME", "IMPORT_FROM"})
PLAIN = frozenset({type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset, type,
                   types.FunctionType, types.ModuleType, types.BuiltinFunctionType, types.MethodType})
HEAPTYPE = 1 << 9
SHADOW = frozenset({"__tl_shadow__", "__tl_assert__"})   # tl_shadow.NAMES: checked before each use (guarded)


class Probe:
    """A fresh object of a class no repository code has seen: no honest ``__eq__`` equals it."""

    __slots__ = ()


EVENTS = frozenset({"tl.lib", "tl.step", "tl.flag"})


def events(emit, moved, lib, said, _type=type):
    """``guard(event, args)``, called by the witness's hook (whose closure alone holds it) for
    :data:`EVENTS`: ``tl.lib`` answers True when ``lib`` (:func:`tl_proof.trusted_code`) trusts the
    function (the hook then raises :class:`Trusted`); ``tl.step`` flags a runner name rebound
    (``moved``, :func:`tl_proof.rebinding`); ``tl.flag`` emits a probe's finding (a flag can only
    hurt the candidate that raises it). ``said`` holds the details already emitted."""
    def guard(event, args):
        if _type(args) is not tuple:
            return False
        if event == "tl.lib":
            return len(args) == 1 and lib(args[0]) is True
        if event == "tl.step":
            lie = moved()
            if lie and lie not in said:
                said.add(lie)
                emit(event="flag", flag="runner_tampering", detail="%s was rebound while a test ran" % lie)
        elif len(args) == 2 and _type(args[0]) is str and _type(args[1]) is str \
                and args[0] in ("always_equal", "runner_tampering") and args[1] not in said:
            said.add(args[1])
            emit(event="flag", flag=args[0], detail=args[1][:200])
        return False
    return guard


def imports(folder, modules, _runner=("pytest", "_pytest", "unittest", "pluggy")):
    """``{absolute test file: ((global name, module, attribute or None), ...)}``: the names the test
    modules ``modules`` (relative to ``folder``) bind at top level to a runner module (``import
    pytest``) or to one of its names (``from pytest import raises``), read from their source."""
    import ast
    out = {}
    for rel in modules:
        path = os.path.join(folder, rel)
        try:
            with open(path, "rb") as fh:
                tree = ast.parse(fh.read())
        except Exception:  # noqa: BLE001 - a module that does not parse fails at collection
            continue
        todo, got = list(tree.body), []
        while todo:   # module level, inside if/try blocks too (never inside a function or class)
            node = todo.pop()
            if isinstance(node, ast.Import):
                got += [(a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0], None)
                        for a in node.names if a.name.split(".")[0] in _runner]
            elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in _runner:
                got += [(a.asname or a.name, node.module, a.name) for a in node.names if a.name != "*"]
            elif isinstance(node, (ast.If, ast.Try)):
                todo += [*node.body, *node.orelse, *getattr(node, "finalbody", []),
                         *[x for h in getattr(node, "handlers", []) for x in h.body]]
        if got:
            out[path] = tuple(got)
    return types.MappingProxyType(out)


def with_globals(moved, bound, _getframe=sys._getframe, _type=type, _get=dict.get, _mods=sys.modules):
    """``moved()`` (:func:`tl_proof.rebinding`'s) that also checks, in the innermost test module's
    frame, that each name :func:`imports` found (``bound``) still is what the runner module holds:
    a test module's ``raises`` rebound to a liar from repository code is named too."""
    files = bound.get   # bound is a read-only mapping of ours

    def check():
        lie = moved()
        if lie:
            return lie
        f, depth = _getframe(1), 0
        while f is not None and depth < 8:
            g = f.f_globals
            file = _get(g, "__file__") if _type(g) is dict else None
            names = files(file) if _type(file) is str else None
            if names:
                for name, mod, attr in names:
                    m = _get(_mods, mod)
                    want = m if attr is None or _type(m) is not types.ModuleType else _get(vars(m), attr, _get(g, name))
                    if m is not None and _get(g, name) is not want:
                        return "the test module's %s" % name
                return None
            f, depth = f.f_back, depth + 1
        return None
    return check


def names():
    """The public names (functions and classes) of pytest's and unittest's loaded modules: a test
    frame loading one of them triggers the rebinding check."""
    out = set()
    for name, mod in list(sys.modules.items()):
        if type(mod) is types.ModuleType and name.split(".")[0] in ("pytest", "_pytest", "unittest", "pluggy"):
            out.update(k for k, v in list(vars(mod).items())
                       if k[:1] != "_" and isinstance(v, (types.FunctionType, types.BuiltinFunctionType, type)))
    return frozenset(out)


BUDGET = 20000   # opcode events traced per test frame: a loop in the test's own frame stays cheap after that
COMPARE, LOAD, HELPER = 2, 1, 3


def module_codes(path):
    """The module code objects of the test file ``path``: as pytest's assertion rewriting compiles it
    and plainly (a list of 0-2; a file that does not compile is left out: it fails at collection)."""
    from pathlib import Path

    from _pytest.assertion.rewrite import _rewrite_test
    codes = []
    try:
        codes.append(_rewrite_test(Path(path), None)[1])
    except Exception:  # noqa: BLE001 - a module that does not compile fails at collection
        pass
    try:
        with open(path, "rb") as fh:
            source = fh.read()
        from tl_shadow import plain_code
        codes.append(plain_code(path, source))   # shadowed as the rewrite shadows it, once installed
    except Exception:  # noqa: BLE001
        pass
    return codes


def marks(folder, modules, runner_names):
    """``{(file, first line, qualified name, bytecode length): {offset: kind}}`` (read-only): where each
    function of the test modules ``modules`` (paths relative to ``folder``), compiled as pytest's
    assertion rewriting compiles it and plainly (as :func:`tl_witness.test_codes` does), makes an
    ``==``/``!=``/``in`` (:data:`COMPARE`) or loads a name in ``runner_names`` (:data:`LOAD`)."""
    import dis

    out = {}
    for rel in modules:
        todo = module_codes(os.path.join(folder, rel))
        while todo:
            code = todo.pop()
            todo.extend(c for c in code.co_consts if type(c) is types.CodeType)
            at = out.setdefault((code.co_filename, code.co_firstlineno, code.co_qualname, len(code.co_code)), {})
            for ins in dis.get_instructions(code):
                if ins.opname == "CONTAINS_OP" or ins.opname == "COMPARE_OP" and ins.argval in ("==", "!="):
                    at[ins.offset] = COMPARE
                elif ins.opname in LOADS and ins.argval in SHADOW:
                    at[ins.offset] = HELPER
                elif ins.opname in LOADS and ins.argval in runner_names:
                    at[ins.offset] = LOAD
    return types.MappingProxyType({k: types.MappingProxyType(v) for k, v in out.items() if v})


def _lookup(t, name, _mro=type.__dict__["__mro__"].__get__, _dict=type.__dict__["__dict__"].__get__,
            _flags=type.__dict__["__flags__"].__get__, _heap=HEAPTYPE):
    """``(owner, value)`` of ``name`` found on ``t``'s MRO as the interpreter looks it up, or
    ``None`` when the owner is a builtin (static) type."""
    for k in _mro(t):
        d = _dict(k)
        if name in d:
            return (k, d[name]) if _flags(k) & _heap else None
    return None


def _says(t, v, name, other, _lookup=_lookup, _ni=NotImplemented, _bool=bool, _type=type, _base=BaseException,
          _getattr=getattr):
    """What ``v.<name>(other)`` answers (True/False), ``None`` when it declines or raises."""
    try:
        fn = _lookup(t, name)[1]
        get = _getattr(_type(fn), "__get__", None)
        r = (get(fn, v, t) if get is not None else fn)(other)
        return None if r is _ni else _bool(r)
    except _base:  # a method that raises on a stranger is no liar
        return None


NEAR = ((int, 1), (float, 1.0), (complex, 1j), (str, "\x00"), (bytes, b"\x00"), (tuple, ("\x00",)))


def _liar(v, _type=type, _plain=PLAIN, _lookup=_lookup, _says=_says, _probe=Probe, _near=NEAR, _audit=sys.audit,
          _trusted=Trusted, _isinstance=isinstance, _qual=type.__dict__["__qualname__"].__get__):
    """A short text when ``v``'s ``==``/``!=`` answers without looking at its operand, else ``None``."""
    t = _type(v)
    if t in _plain or t is _probe:
        return None
    for name, lie in (("__eq__", True), ("__ne__", False)):
        found = _lookup(t, name)
        if found is None:
            continue
        try:
            _audit("tl.lib", found[1])   # the hook raises Trusted for genuine library or test code
        except _trusted:
            continue
        others = [_probe()] + [base.__add__(v, step) for base, step in _near if _isinstance(v, base)][:1]
        for other in others:
            if _says(t, v, name, other) is lie:
                return "%s.%s answers %s to a %s" % (_qual(t), name, lie, _qual(_type(other)))
    return None


def probe(frame, _liar=_liar, _type=type, _audit=sys.audit, _list=list, _dict=dict, _containers=(list, tuple, set,
          frozenset)):
    """Before a comparison of a genuine test's frame: flag (``tl.flag always_equal``) the first local
    (or item of a local container) whose ``==`` does not depend on its operand."""
    try:
        values = _list(_dict.values(frame.f_locals))
    except Exception:  # noqa: BLE001 - no locals to read: nothing to probe
        return
    for v in values:
        t = _type(v)
        items = _list(v)[:50] if t in _containers else _list(_dict.values(v))[:50] if t is _dict else ()
        for x in (v, *items):
            why = _liar(x)
            if why:
                _audit("tl.flag", "always_equal", why)
                return
