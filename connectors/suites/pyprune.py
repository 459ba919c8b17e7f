"""Pruned test modules: one test file cut down to the tests of one task, still importable.

Used by :mod:`connectors.suites.pytest_suite` through :class:`TestModule` (re-exported by
:mod:`connectors.suites.pysource`). The kept text is the company's own, byte for byte; the only
additions are single lines that keep pytest from collecting what was kept for another reason
(issue 13, item 1):

* **inherited test classes**: ``class TestDefaultDict(TestDict)`` keeps ``TestDict`` (and its
  ancestors in the module) with the methods its kept tests resolve to; a base kept only as a
  base gets ``__test__ = False`` and the kept subclasses ``__test__ = True``;
* **inherited tests not asked for**: a kept class that inherits a collected test it should not
  run gets ``name = None`` in its body (pytest and unittest skip non-callables);
* **test functions used as helpers**: a collected ``test_*`` function that a kept test (or the
  module's other code) refers to by name is kept, followed by ``name.__test__ = False``;
* a test class left without any kept test or subclass is cut whole; helpers, fixtures,
  constants and non-test classes are always kept.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

_FUNC = (ast.FunctionDef, ast.AsyncFunctionDef)
Key = tuple[str | None, str]  # (class name or None, function name)


def _start(node: ast.AST) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])


def _refs(node: ast.AST) -> set[str]:
    """Every bare name and attribute name ``node`` mentions (a superset of what it calls)."""
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
    return out


@dataclass
class _Class:
    name: str
    span: tuple[int, int]
    bases: list[str]
    methods: dict[str, tuple[int, int]] = field(default_factory=dict)
    refs: dict[str, set[str]] = field(default_factory=dict)
    insert_at: int = 0          # 1-based line before which added lines go (0: cannot insert)
    indent: str = "    "
    n_body: int = 0             # statements in the class body


class TestModule:
    """A test module indexed once, then pruned many times (one call per task).

    Args:
        source: the test module's text.
        collected: every ``(class name or None, function name)`` pytest collected from it
            (inherited tests appear under the subclass's name); anything else (imports,
            fixtures, helpers, constants, non-test classes) is kept.
    Raises:
        SyntaxError: the module does not parse.
    """

    __test__ = False

    def __init__(self, source: str, collected: set[Key]) -> None:
        self.lines = source.splitlines(keepends=True)
        self.collected = set(collected)
        self.functions: dict[str, tuple[int, int]] = {}
        self.func_refs: dict[str, set[str]] = {}
        self.classes: dict[str, _Class] = {}
        self.other_refs: set[str] = set()
        test_classes = {c for c, _ in collected if c is not None}
        for node in ast.parse(source).body:
            if isinstance(node, _FUNC) and (None, node.name) in collected:
                self.functions[node.name] = (_start(node), node.end_lineno or node.lineno)
                self.func_refs[node.name] = _refs(node)
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = self._class(node)
                if node.name not in test_classes:
                    self.other_refs |= _refs(node)
            else:
                self.other_refs |= _refs(node)
        self.test_classes = {c for c in test_classes if c in self.classes}

    @staticmethod
    def _class(node: ast.ClassDef) -> _Class:
        info = _Class(node.name, (_start(node), node.end_lineno or node.lineno),
                      [b.id for b in node.bases if isinstance(b, ast.Name)], n_body=len(node.body))
        for sub in node.body:
            if isinstance(sub, _FUNC):
                info.methods[sub.name] = (_start(sub), sub.end_lineno or sub.lineno)
                info.refs[sub.name] = _refs(sub)
        first = node.body[0]
        is_doc = isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) \
            and isinstance(first.value.value, str)
        if first.lineno > node.lineno:
            info.insert_at = (first.end_lineno + 1) if is_doc else _start(first)
            info.indent = " " * first.col_offset
        return info

    def _mro(self, cls: str) -> list[str]:
        """``cls`` and its ancestors defined in this module, depth first in base order."""
        out, todo = [], [cls]
        while todo:
            name = todo.pop(0)
            if name in self.classes and name not in out:
                out.append(name)
                todo[:0] = self.classes[name].bases
        return out

    def _owner(self, cls: str, name: str) -> str | None:
        return next((c for c in self._mro(cls) if name in self.classes[c].methods), None)

    def keep(self, keep: set[Key]) -> str:
        """The module with the collected tests not in ``keep`` cut out (decorators included)."""
        kept_classes = {c for c, _ in keep if c is not None and c in self.classes}
        needed_classes = {a for c in kept_classes for a in self._mro(c)}
        methods = {(self._owner(c, n), n) for c, n in keep if c is not None and c in self.classes}
        functions = {n for c, n in keep if c is None and n in self.functions}
        helpers = self._helpers(functions, methods, needed_classes)
        cuts: list[tuple[int, int]] = []
        inserts: list[tuple[int, str]] = []
        for name, span in self.functions.items():
            if name in helpers:
                inserts.append((span[1] + 1, f"{name}.__test__ = False  # tuneloop: kept as a helper of other tests\n"))
            elif name not in functions:
                cuts.append(span)
        base_only = needed_classes - kept_classes
        dropped = {(name, m) for name in needed_classes for m in self.classes[name].methods
                   if (name, m) in self.collected or (name in base_only and self._is_test(name, m))
                   if (name, m) not in methods and (name, m) not in helpers}
        for name, info in self.classes.items():
            if name not in needed_classes:
                if name in self.test_classes:
                    cuts.append(info.span)
                continue
            cut = [span for m, span in info.methods.items() if (name, m) in dropped]
            lines = self._class_lines(info, keep, base_only, dropped)
            if len(cut) == info.n_body and not lines and info.insert_at:
                lines = [(info.insert_at, info.indent + "pass  # tuneloop: every test of this class was cut\n")]
            cuts += cut
            inserts += lines
        return self._apply(cuts, inserts)

    def _is_test(self, cls: str, name: str) -> bool:
        """A method some collected subclass runs under this name (so it is a test, not a helper)."""
        return any((c, name) in self.collected for c in self.test_classes if cls in self._mro(c))

    def _helpers(self, functions: set[str], methods: set[tuple[str | None, str]], classes: set[str]) -> set:
        """Collected functions (names) and methods (``(class, name)``) that kept code refers to."""
        refs = set(self.other_refs) | {r for n in functions for r in self.func_refs[n]}
        refs |= {r for c, m in methods if c for r in self.classes[c].refs.get(m, ())}
        refs |= {r for c in classes for m, rs in self.classes[c].refs.items()
                 if (c, m) not in self.collected and not self._is_test(c, m) for r in rs}
        out: set = set()
        while True:
            new = {n for n in self.functions if n in refs and n not in functions and n not in out}
            new |= {(c, m) for c in classes for m in self.classes[c].methods
                    if m in refs and (c, m) not in methods and (c, m) not in out}
            if not new:
                return out
            out |= new
            for item in new:
                refs |= self.func_refs[item] if isinstance(item, str) else self.classes[item[0]].refs[item[1]]

    def _class_lines(self, info: _Class, keep: set[Key], base_only: set[str], dropped: set) -> list[tuple[int, str]]:
        if not info.insert_at:
            return []
        lines = []
        if info.name in base_only:
            lines.append("__test__ = False  # tuneloop: kept only as a base of the kept tests\n")
        elif any(a in base_only for a in self._mro(info.name)[1:]):
            lines.append("__test__ = True  # tuneloop: its base is kept uncollected\n")
        if info.name not in base_only:
            for cls, name in sorted(self.collected, key=lambda k: k[1]):
                if cls == info.name and (cls, name) not in keep and name not in info.methods \
                        and (self._owner(cls, name), name) not in dropped:
                    lines.append(f"{name} = None  # tuneloop: inherited test not part of this task\n")
        return [(info.insert_at, info.indent + text) for text in lines]

    def _apply(self, cuts: list[tuple[int, int]], inserts: list[tuple[int, str]]) -> str:
        out = list(self.lines)
        edits = [(start, 1, end, "") for start, end in cuts] + [(at, 0, 0, text) for at, text in inserts]
        for start, kind, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
            if kind == 1:
                while end < len(out) and not out[end].strip():
                    end += 1  # the blank lines after a cut definition go with it
                del out[start - 1: end]
            else:
                out.insert(start - 1, text)
        return "".join(out)


def prune_tests(source: str, keep: set[Key], collected: set[Key]) -> str:
    """``TestModule(source, collected).keep(keep)``: cut the collected tests not in ``keep``."""
    return TestModule(source, collected).keep(keep)
