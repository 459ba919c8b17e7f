"""Small helpers of the static Python scan (:mod:`sdk.rewards.integrity`): dotted names,
expressions whose truth does not depend on their names, and patches of standard-library
modules (issue 14's red team: ``return o == o``, ``unittest.TestCase.assertEqual = ...``)."""

from __future__ import annotations

import ast
import operator
import sys

_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
            ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not}
STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"unittest", "doctest", "operator", "inspect", "types"}


def dotted(node: ast.AST) -> str:
    """``a.b.c`` of an attribute chain (``__import__("m").x`` gives ``m.x``); "" for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__" \
            and node.args and isinstance(node.args[0], ast.Constant):
        parts.append(str(node.args[0].value))
    return ".".join(reversed(parts))


def stdlib_patches(tree: ast.Module) -> list[str]:
    """Attributes of standard-library modules or their classes set or deleted by the solution
    (``unittest.TestCase.assertEqual = ...``, ``setattr(operator, "eq", ...)``): the tests'
    machinery, never the solution's to change. ``decimal.getcontext().prec = 50`` is a call's
    result, not a module's attribute, and is left alone."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in STDLIB}
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in STDLIB:
            names |= {a.asname or a.name for a in node.names}

    def rooted(t: ast.AST) -> bool:
        if not isinstance(t, ast.Attribute):
            return False
        while isinstance(t, ast.Attribute):
            t = t.value
        return isinstance(t, ast.Name) and t.id in names

    hits = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        hits += [f"patches {dotted(t)}" for t in targets if rooted(t)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") \
                and node.args and (rooted(node.args[0]) or (isinstance(node.args[0], ast.Name) and node.args[0].id in names)):
            hits.append(f"{node.func.id}({dotted(node.args[0])}, ...)")
    return hits


def constant_truth(e: ast.AST | None) -> bool | None:
    """True/False when expression ``e`` has that truth value whatever its names hold (``True``,
    ``1 > 0``, ``o == o``, ``x or True``, ``not False``); None when it depends on them."""
    if isinstance(e, ast.Constant):
        return bool(e.value)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        inner = constant_truth(e.operand)
        return None if inner is None else not inner
    if isinstance(e, ast.BoolOp):
        parts = [constant_truth(v) for v in e.values]
        decisive = isinstance(e.op, ast.Or)   # any True decides an `or`, any False an `and`
        return decisive if decisive in parts else (not decisive if all(p is not None for p in parts) else None)
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "bool" and len(e.args) == 1:
        return constant_truth(e.args[0])
    if isinstance(e, ast.Compare) and len(e.ops) == 1:
        left, right, op = e.left, e.comparators[0], e.ops[0]
        if isinstance(left, ast.Constant) and isinstance(right, ast.Constant):
            fn = _COMPARE.get(type(op))
            try:
                return None if fn is None else bool(fn(left.value, right.value))   # two literals: 1 > 0
            except Exception:  # noqa: BLE001 - e.g. 1 < "a"
                return None
        if ast.dump(left) == ast.dump(right):   # o == o, self is self
            return True if isinstance(op, (ast.Eq, ast.Is, ast.LtE, ast.GtE)) else \
                False if isinstance(op, (ast.NotEq, ast.IsNot, ast.Lt, ast.Gt)) else None
    return None


def returns_constant(fn: ast.AST, value: bool) -> bool:
    """True when function or lambda ``fn`` only ever returns something whose truth is ``value``."""
    if isinstance(fn, ast.Lambda):
        return constant_truth(fn.body) is value
    body = [s for s in getattr(fn, "body", []) if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return len(body) == 1 and isinstance(body[0], ast.Return) and constant_truth(body[0].value) is value
