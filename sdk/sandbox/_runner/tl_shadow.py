"""Shadow comparisons of a change task's test files (issue 14; stdlib only).

The test files come from the commit (pristine, trusted) and the runner compiles them itself
(:func:`tl_rguard.module_codes`, as pytest's assertion rewriting does). After pytest's rewrite (whose
failure messages keep their diff: they are built from the operands pytest stored), :func:`transform`
replaces, inside every function and lambda of a test file or conftest (helpers,
nested functions and comprehensions included), each single comparison (``==``, ``!=``, ``<``,
``<=``, ``>``, ``>=``, ``in``, ``not in``) and each ``+``, ``-``, ``*``, ``/`` by a call to the
helper ``__tl_shadow__`` (:func:`helper`), and each ``self.assertEqual``-like call
(:data:`ASSERTS`) by a call to ``__tl_assert__``. The calls are of constants that :func:`bind`
replaces, in the compiled code, by the helpers themselves: no name is looked up, so rebinding one
changes nothing (they are also bound in ``builtins``, a tripwire checked at each test's return).
Every builtin they use is captured at arm time as a default (a write to their
``__code__``/``__defaults__`` or to this module's classes is flagged by the witness's hook). The helper

1. computes the real result with the real operator (honest semantics are unchanged);
2. reduces the operands, without calling any repository-written Python code, to canonical data
   (:func:`tl_canon.canonical`): a builtin subclass to its base value (read through the base type's slots), lists,
   tuples, dicts and sets item by item, an object of a Python class defined outside the library
   folders (the repository, the runner) to ``(qualified class name, fields)`` (its ``__dict__`` and
   slots read through the type's own descriptors), an object of a library or test class, or of a
   type Python code cannot alter, to an :class:`Opaque` compared with the real operator (trusted);
   at most :data:`tl_canon.BUDGET` nodes per comparison (past it, the shadow gives no opinion);
3. when the real answer says equal/ordered/contained (or, for a non-bool answer such as an
   array's, says so for one element) and the same operator on the canonical data says otherwise,
   flags ``always_equal`` through ``tl.flag`` (its detail names the site, ``file:line:col``); for
   ``+ - * /``, when the canonical result of the real operator differs from the operator applied to
   the canonical operands. Never the other way (an identity ``==`` saying "different" is honest).

Sites listed in the task's ``shadow_exempt`` (those where the reference's own values disagree with
their shadow: an honest ``__eq__`` over some fields, a value equal to an int) are not flagged.

Not covered: a chained comparison (``a < b < c``), ``is``, augmented assignment, a bare truth test
(``assert x``), comparisons at a test module's top level or in a helper module that is not a test
file or conftest; a comparison whose canonical operands exceed :data:`tl_canon.BUDGET` nodes or cannot be
ordered or hashed (no opinion); a repository value inside a library container the shadow does not
open (``deque``, ``SimpleNamespace``, an object of a library class), compared with the real
operator; a library class whose methods the repository rebinds (only the runner's, pytest's,
pluggy's and unittest's are flagged) and a repository class planted in a library module under that
module's name. The helpers and every function they use hold their state in defaults, no closure
cell (:func:`tl_canon.rebound`; a default or code rebound is flagged): the objects in those defaults
that are mutable (``sys.modules``, the classifier's memo, whose forged entries can only add flags)
are not checked.
"""

import ast
import builtins
import operator
import sys
import types
import warnings

from tl_canon import BUDGET, FAST_IDS, NUMBERS, Obj, Opaque, canonical, classifier, rebound  # noqa: F401

NAMES = ("__tl_shadow__", "__tl_assert__")
# what the rewritten test code calls: constants that :func:`bind` replaces by the helpers themselves
SLOTS = ("\x00tl_shadow\x00", "\x00tl_assert\x00")
CALLED_CONSTANT = r"'str' object is not callable"   # compile's SyntaxWarning for a slot's call, silenced
OPS = (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge,
       lambda a, b: a in b, lambda a, b: a not in b, operator.add, operator.sub, operator.mul, operator.truediv)
CMP = {ast.Eq: 0, ast.NotEq: 1, ast.Lt: 2, ast.LtE: 3, ast.Gt: 4, ast.GtE: 5, ast.In: 6, ast.NotIn: 7}
ARITH = {ast.Add: 8, ast.Sub: 9, ast.Mult: 10, ast.Div: 11}
SIGNS = ("==", "!=", "<", "<=", ">", ">=", "in", "not in", "+", "-", "*", "/", "~=")   # by op, for the flag's text
POSITIVE = frozenset({0, 2, 3, 4, 5, 6})   # the real answer True means "equal/ordered/contained"
# unittest methods: name -> the shadow operator on their first two arguments (12: almost equal)
ASSERTS = {"assertEqual": 0, "assertEquals": 0, "assertListEqual": 0, "assertTupleEqual": 0, "assertDictEqual": 0,
           "assertSetEqual": 0, "assertSequenceEqual": 0, "assertMultiLineEqual": 0, "assertNotEqual": 1,
           "assertLess": 2, "assertLessEqual": 3, "assertGreater": 4, "assertGreaterEqual": 5, "assertIn": 6,
           "assertNotIn": 7, "assertAlmostEqual": 12}


class Shadowing(ast.NodeTransformer):
    """The AST pass of :func:`transform` (sites are ``rel:line:col``)."""

    def __init__(self, rel):
        self.rel, self.depth = rel, 0

    def _site(self, node):
        return ast.Constant(f"{self.rel}:{node.lineno}:{node.col_offset}")

    def _scope(self, node):
        self.depth += 1
        try:
            return self.generic_visit(node)
        finally:
            self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _scope

    def _call(self, name, node, args, keywords=()):
        call = ast.Call(ast.Constant(SLOTS[NAMES.index(name)]), [self._site(node), *args], list(keywords))
        for new in (call, call.func, *call.args):   # only the nodes made here: never fix_missing_locations,
            if getattr(new, "lineno", None) is None:   # whose root default end line 1 breaks pytest's own
                ast.copy_location(new, node)           # imports placed after a docstring (end_lineno None)
        return call

    def visit_Compare(self, node):
        """``a OP b`` -> ``__tl_shadow__(site, op, a, b)`` (single comparisons inside functions)."""
        node = self.generic_visit(node)
        if self.depth and len(node.ops) == 1 and type(node.ops[0]) in CMP:
            return self._call(NAMES[0], node, [ast.Constant(CMP[type(node.ops[0])]), node.left, node.comparators[0]])
        return node

    def visit_BinOp(self, node):
        """``a + b`` (``-``, ``*``, ``/``) -> ``__tl_shadow__(site, op, a, b)`` inside functions."""
        node = self.generic_visit(node)
        if self.depth and type(node.op) in ARITH:
            return self._call(NAMES[0], node, [ast.Constant(ARITH[type(node.op)]), node.left, node.right])
        return node

    def visit_Call(self, node):
        """``self.assertEqual(a, b, *r, **k)`` -> ``__tl_assert__(site, op, self.assertEqual, a, b, r, k)``."""
        node = self.generic_visit(node)
        f = node.func
        if self.depth and type(f) is ast.Attribute and type(f.value) is ast.Name and f.value.id == "self" \
                and f.attr in ASSERTS and len(node.args) >= 2 \
                and not any(type(a) is ast.Starred for a in node.args) and all(k.arg for k in node.keywords):
            rest = ast.copy_location(ast.Tuple(node.args[2:], ast.Load()), node)   # (site, op, method, a, b, rest, kw)
            kw = ast.copy_location(ast.Dict([ast.copy_location(ast.Constant(k.arg), node) for k in node.keywords],
                                            [k.value for k in node.keywords]), node)
            return self._call(NAMES[1], node, [ast.Constant(ASSERTS[f.attr]), f, *node.args[:2], rest, kw])
        return node


def transform(tree, rel):
    """Rewrite the module ``tree`` of test file ``rel`` in place (see the module docstring); returns it.
    Its calls are of :data:`SLOTS` constants: compile it with :func:`compiled` (or :func:`bind` the code)."""
    Shadowing(rel).visit(tree)
    return tree


def bind(code, helpers, _code=types.CodeType, _type=type, _str=str, _slots=SLOTS):
    """``code`` with each :data:`SLOTS` constant, in it and in the code objects it holds, replaced by
    its helper (``helpers``: :func:`install`'s two): the test code reaches the helpers as constants of
    its own (immutable) code, so rebinding a name (``builtins.__tl_shadow__``) changes nothing."""
    consts = []
    for c in code.co_consts:
        if _type(c) is _code:
            c = bind(c, helpers)
        elif _type(c) is _str and c in _slots:
            c = helpers[_slots.index(c)]
        consts.append(c)
    return code.replace(co_consts=tuple(consts))


def compiled(source, path, helpers):
    """``compile(source, path, "exec")`` of a :func:`transform`-ed tree, :func:`bind`-ed to ``helpers``."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", CALLED_CONSTANT, SyntaxWarning)
        return bind(compile(source, path, "exec", dont_inherit=True), helpers)



def _almost(ca, cb, rest, kw, _type=type, _abs=abs, _round=round, _numbers=NUMBERS):
    """False when canonical numbers ``ca`` and ``cb`` are not equal to ``assertAlmostEqual``'s
    ``places`` (7) or ``delta`` (``rest``, ``kw``: its other arguments); True otherwise (no opinion)."""
    if _type(ca) not in _numbers or _type(cb) not in _numbers or ca == cb:
        return True
    delta, places = kw.get("delta"), kw.get("places", rest[0] if rest else None)
    return _abs(ca - cb) <= delta if delta is not None else _round(_abs(ca - cb), 7 if places is None else places) == 0


def _truth(r, cr, _type=type, _bool=bool, _opaque=Opaque, _obj=Obj):
    """An answer's truth value from its canonical data ``cr`` (a library object's own; ``None`` for a
    repository object)."""
    t = _type(cr)
    return _bool(r) if t is _opaque else None if t is _obj else _bool(cr)


def _flat(x, _type=type, _id=object.__hash__, _fast=FAST_IDS, _len=len, _list=list, _tuple=tuple):
    """True for an exact scalar, or a list or tuple of at most 64 exact scalars (checked inline)."""
    t = _type(x)
    if _id(t) in _fast:
        return True
    if t is not _list and t is not _tuple or _len(x) > 64:
        return False
    for item in x:
        if _id(_type(item)) not in _fast:
            return False
    return True


def _say(site, a, op, b, _flag=None, _qual=type.__dict__["__qualname__"].__get__, _type=type, _signs=SIGNS):
    """Flag ``always_equal`` at ``site`` through ``_flag`` (``sys.audit``)."""
    _flag("tl.flag", "always_equal", f"shadow {site}: {_qual(_type(a))} {_signs[op]} {_qual(_type(b))} says yes, "
                                     "their canonical values say no")


def _check(site, op, a, b, r, _canon=None, _say=None, _ops=OPS, _type=type, _bool=bool, _len=len, _seq=(list, tuple),
           _positive=POSITIVE, _numbers=NUMBERS, _truth=_truth, _opaque=Opaque, _enumerate=enumerate, _str=str):
    """Say when the real answer ``r`` of ``a OP b`` is contradicted by the canonical data (module docstring)."""
    ca, cb, cr = _canon((a, b, r))
    if op >= 8:
        want = _ops[op](ca, cb)
        if (_type(cr) in _numbers or _type(cr) in _seq or _type(cr) is _str) and _type(want) is _type(cr) \
                and not (cr == want or cr != cr and want != want):   # noqa: PLR0124 - NaN
            _say(site, a, op, b)
        return
    if _type(r) is not _bool and _type(cr) in _seq and _type(ca) in _seq and _len(cr) == _len(ca):
        other = cb if _type(cb) in _seq and _len(cb) == _len(ca) else None
        for i, x in _enumerate(ca):
            got = _truth(cr[i].v if _type(cr[i]) is _opaque else None, cr[i])
            want = _ops[op](x, cb if other is None else other[i])
            if _type(want) is _bool and got is not None and got != want and (got if op in _positive else want):
                return _say(site, a, op, b)
        return
    got = r if _type(r) is _bool else _truth(r, cr)
    want = _ops[op](ca, cb)
    if got is not None and _type(want) is _bool and got != want and (got if op in _positive else want):
        _say(site, a, op, b)


def _shadow(site, op, a, b, _check=None, _exempt=frozenset(), _ops=OPS, _type=type, _bool=bool, _id=object.__hash__,
            _fast=FAST_IDS, _flat=_flat, _exc=Exception):
    """``__tl_shadow__``: the real ``a OP b``, checked (:func:`_check`) unless flat or exempt."""
    r = _ops[op](a, b)
    if (_id(_type(a)) in _fast and _id(_type(b)) in _fast) or site in _exempt:
        return r
    if _type(r) is _bool and _flat(a) and _flat(b):   # flat builtin values: nothing to shadow, no call
        return r
    try:
        _check(site, op, a, b, r)
    except _exc:  # past the budget, unorderable, unhashable: no opinion
        pass
    return r


def _check_assert(site, op, method, a, b, rest, kw, _canon=None, _say=None, _exempt=frozenset(), _ops=OPS,
                  _type=type, _id=object.__hash__, _fast=FAST_IDS, _almost=_almost, _exc=Exception):
    """``__tl_assert__``: the real ``method(a, b, *rest, **kw)``, then its canonical check."""
    r = method(a, b, *rest, **kw)   # the real assertion: a failure raises here
    if site in _exempt or op in (1, 7) or (_id(_type(a)) in _fast and _id(_type(b)) in _fast):
        return r
    try:
        ca, cb = _canon((a, b))
        if op == 12:
            if not _almost(ca, cb, rest, kw):
                _say(site, a, op, b)
        elif _ops[op](ca, cb) is False:
            _say(site, a, op, b)
    except _exc:  # no opinion
        pass
    return r


def helper(kind, exempt, flag=sys.audit):
    """``(shadow, check_assert)``: the helpers ``__tl_shadow__`` and ``__tl_assert__`` (see the
    module docstring); ``kind`` is :func:`classifier`'s, ``exempt`` a frozenset of sites. Their state
    is in defaults (:func:`tl_canon.rebound`): no closure cell to rewrite."""
    canon, say = canonical(kind), rebound(_say, _flag=flag)
    check = rebound(_check, _canon=canon, _say=say)
    return (rebound(_shadow, _check=check, _exempt=exempt),
            rebound(_check_assert, _canon=canon, _say=say, _exempt=exempt))


def install(folder, libs, runner, exempt=(), _builtins=builtins):
    """Bind the helpers in ``builtins`` and make pytest's assertion rewriting (and
    :func:`tl_rguard.module_codes`) shadow the files under ``folder``; returns the two helpers. Call
    before any repository code runs and before the test files are fingerprinted."""
    import os

    from _pytest.assertion import rewrite
    root, libs = folder.rstrip(os.sep) + os.sep, tuple(libs)
    raw = [p.rstrip(os.sep) + os.sep for p in [os.path.dirname(os.__file__), *sys.path] if type(p) is str and p]
    libs += tuple(p for p in dict.fromkeys(raw) if os.path.realpath(p).rstrip(os.sep) + os.sep in libs)
    kind = classifier(libs, runner.rstrip(os.sep) + os.sep + "tl_", root)   # pytest may share the runner's folder
    shadow, check_assert = helper(kind, frozenset(str(s) for s in exempt))
    setattr(_builtins, NAMES[0], shadow)
    setattr(_builtins, NAMES[1], check_assert)

    def rewrite_asserts(mod, source, module_path=None, config=None, _real=rewrite.rewrite_asserts, _root=root,
                        _type=type, _str=str):
        _real(mod, source, module_path, config)   # first: pytest's diff is built from its own operands
        if _type(module_path) is _str and module_path.startswith(_root):
            transform(mod, module_path[len(_root):])
    def rewrite_test(fn, config, _real=rewrite._rewrite_test, _root=root, _helpers=(shadow, check_assert)):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", CALLED_CONSTANT, SyntaxWarning)
            out = _real(fn, config)
        return (*out[:-1], bind(out[-1], _helpers)) if str(fn).startswith(_root) else out
    rewrite.rewrite_asserts, rewrite._rewrite_test = rewrite_asserts, rewrite_test
    sys.dont_write_bytecode = True   # code holding the helpers cannot be marshalled into a .pyc
    SHADOWED[:] = [root, (shadow, check_assert)]
    return shadow, check_assert


SHADOWED = []   # the tests folder and the helpers once installed: tl_rguard.module_codes shadows its plain compile too


def plain_code(path, source):
    """The module code of test file ``path`` (its ``source``) compiled plainly, shadowed and bound as
    pytest's rewrite is once :func:`install`-ed (:func:`tl_rguard.module_codes`)."""
    if SHADOWED and path.startswith(SHADOWED[0]):
        return compiled(transform(ast.parse(source, filename=path), path[len(SHADOWED[0]):]), path, SHADOWED[1])
    return compile(source, path, "exec", dont_inherit=True)


def intact(frame, want, _get=dict.get, _type=type, _names=NAMES, _dict=dict):
    """True when neither helper name is shadowed by ``frame``'s globals and its builtins hold ``want``
    (the two helpers, in :data:`NAMES` order)."""
    g, b = frame.f_globals, frame.f_builtins
    if _type(g) is not _dict or _type(b) is not _dict:
        return False
    return _get(g, _names[0]) is None and _get(g, _names[1]) is None and _get(b, _names[0]) is want[0] \
        and _get(b, _names[1]) is want[1]


def guarded(shadow, probe, _audit=sys.audit, _intact=intact):
    """What the armed trace function (:func:`tl_witness.local`) runs before a comparison mark of a
    test's frame (:func:`tl_rguard.marks`): with the helpers ``shadow`` (:func:`install`'s; ``None``:
    not shadowed), flag ``runner_tampering`` when the frame would not reach them by their names
    (:func:`intact`) before a helper's name (mark 3); ``probe`` (:func:`tl_rguard.probe`) before a
    comparison (mark 2). Called as ``check(frame, kind)``."""
    def check(frame, kind, _want=tuple(shadow) if shadow is not None else None, _probe=probe):
        if kind != 3:
            _probe(frame)
        elif _want is not None and not _intact(frame, _want):
            _audit("tl.flag", "runner_tampering", "the shadow helpers were rebound while a test ran")
    return check
