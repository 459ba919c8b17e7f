"""String keys a reference reads or defines, and the repository lines that set them (issue 13).

A parser's contract often lives in names that no signature or docstring shows: ``parse_date``
reads ``groups["century"]`` from a match of a regex that its helper ``build_date_regexps``
compiles with ``(?P<century>...)``; the helper's own contract, in turn, is the group names its
caller reads. On isodate 0.7.2 both prompts were unsolvable for that reason alone.

Two directions, both found with :mod:`ast` and plain text search:

- **keys read** by the reference (``x["k"]``, ``x.get("k")``, ``m.group("k")``, ``"k" in x``): the
  lines of the package functions it uses (and of the module constants those load, one hop: a
  ``TZ_REGEX`` glued into every time pattern) that name them (``(?P<k>``, ``"k"``, ``'k'``);
- **keys defined** by the reference (regex group names, string keys of dict literals): the lines of
  its callers in the package that read them.

Each distinct line is shown once (a helper that repeats ``(?P<sign>[+-])`` in ten patterns shows it
once), at most :data:`MAX_LINES` per definition, within the repository-context token budget.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

GROUP = re.compile(r"\(\?P<(\w+)>")
MAX_LINES = 12
MAX_DOC_LINES = 24
_READERS = {"get", "group", "pop", "setdefault", "groupdict"}


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def keys_read(reference: str) -> list[str]:
    """The string keys ``reference`` reads, in order of first use (identifier-like ones only)."""
    try:
        tree = ast.parse(reference)
    except SyntaxError:
        return []
    found: list[tuple[int, int, str]] = []
    for n in ast.walk(tree):
        key = None
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load):
            key = _str(n.slice)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _READERS and n.args:
            key = _str(n.args[0])
        elif isinstance(n, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in n.ops):
            key = _str(n.left)
        if key and key.isidentifier():
            found.append((n.lineno, n.col_offset, key))
    return list(dict.fromkeys(k for *_, k in sorted(found)))


def keys_defined(reference: str) -> list[str]:
    """Regex group names and string keys of dict literals that ``reference`` defines."""
    try:
        tree = ast.parse(reference)
    except SyntaxError:
        return []
    keys: list[str] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            keys += GROUP.findall(n.value)
        elif isinstance(n, ast.Dict):
            keys += [k for k in map(_str, n.keys) if k and k.isidentifier()]
    return list(dict.fromkeys(keys))


def _marks(line: str, keys: list[str], groups: bool) -> bool:
    if groups and any(k in GROUP.findall(line) for k in keys):
        return True
    return any(f'"{k}"' in line or f"'{k}'" in line for k in keys)


@dataclass(frozen=True)
class _Unit:
    path: str
    qualname: str
    lines: list[str]
    loads: frozenset[str]
    mentions: frozenset[str]
    doc: str = ""


@dataclass(frozen=True)
class KeySnippet:
    """Lines of one package definition that name some of the keys (``lines``: those lines alone)."""

    path: str
    qualname: str
    text: str
    lines: tuple[str, ...] = ()


class KeyIndex:
    """Top-level functions, methods and assignments of a package, with their lines.

    Args:
        files: ``relative path -> source`` (non-Python and unparsable files are skipped).
        pkg_rel: the package folder relative to the repository.
    """

    def __init__(self, files: dict[str, str], pkg_rel: str = "") -> None:
        self.units: dict[tuple[str, str], _Unit] = {}
        self.by_name: dict[str, list[_Unit]] = {}
        for path, text in sorted(files.items()):
            if path.endswith(".py") and path.startswith(pkg_rel):
                self._scan(path, text)

    def _scan(self, path: str, text: str) -> None:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return
        lines = text.splitlines()
        for node in tree.body:
            items = [(node, node.name)] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
            if isinstance(node, ast.ClassDef):
                items = [(m, f"{node.name}.{m.name}") for m in node.body
                         if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                items = [(node, t.id) for t in targets if isinstance(t, ast.Name)][:1]
            for item, qual in items:
                names = {n.id for n in ast.walk(item) if isinstance(n, ast.Name)}
                attrs = {n.attr for n in ast.walk(item) if isinstance(n, ast.Attribute)}
                doc = ast.get_docstring(item) if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
                unit = _Unit(path, qual, lines[item.lineno - 1: item.end_lineno], frozenset(names),
                             frozenset(names | attrs), doc or "")
                self.units[(path, qual)] = unit
                self.by_name.setdefault(qual.split(".")[-1], []).append(unit)

    def defining(self, used: list[tuple[str, str]], keys: list[str]) -> list[KeySnippet]:
        """Lines of the ``used`` definitions ``(path, qualname)``, and of the module constants they
        load, that name ``keys``."""
        if not keys:
            return []
        units, seen = [], set()
        for key in used:
            unit = self.units.get(key)
            if unit is None:
                continue
            hop = [u for n in sorted(unit.loads) for u in self.by_name.get(n, [])[:1]
                   if "." not in u.qualname and u.lines and not u.lines[0].lstrip().startswith(("def", "async", "@"))]
            for u in [unit, *hop]:
                if (u.path, u.qualname) not in seen:
                    seen.add((u.path, u.qualname))
                    units.append(u)
        return [s for s in (_snippet(u, keys, groups=True) for u in units) if s]

    def reading(self, name: str, path: str, qualname: str, keys: list[str], most: int = 2) -> list[KeySnippet]:
        """Lines of the package functions that mention ``name`` (not the target itself) and read ``keys``."""
        if not keys:
            return []
        callers = [u for u in self.units.values() if name in u.mentions and (u.path, u.qualname) != (path, qualname)]
        callers.sort(key=lambda u: (u.path != path, u.qualname.startswith("_")))
        return [s for s in (_snippet(u, keys, groups=False, doc=True) for u in callers) if s][:most]


def _snippet(unit: _Unit, keys: list[str], groups: bool, doc: bool = False) -> KeySnippet | None:
    """The distinct lines of ``unit`` that name ``keys``, under its ``def`` line (a function; with
    ``doc``, and its docstring: a caller's docstring often lists the formats the keys come from) or
    its first line (an assignment)."""
    is_def = unit.lines[0].lstrip().startswith(("def ", "async "))
    marked: dict[str, tuple[int, str]] = {}
    for i, line in enumerate(unit.lines[1:] if is_def else unit.lines):
        if _marks(line, keys, groups):
            marked.setdefault(line.strip(), (i, line))
    if not marked:
        return None
    chosen, covered = [], set()   # first the lines that name a key not named yet, then the others, in order
    for i, line in marked.values():
        new = {k for k in keys if _marks(line, [k], groups)} - covered
        if new:
            chosen.append((i, line))
            covered |= new
    chosen += [x for x in marked.values() if x not in chosen][:max(0, MAX_LINES - len(chosen))]
    picked = [line for _, line in sorted(chosen)]
    head = unit.lines[0].strip()
    rest = [x for x in picked if x.strip() != head]
    pad = min((len(x) - len(x.lstrip()) for x in rest), default=0)
    body = ["    ...", *("    " + x[pad:] for x in rest)] if rest else []
    if doc and unit.doc:
        body = ['    """' + "\n    ".join(unit.doc.strip().splitlines()[:MAX_DOC_LINES]) + '\n    """', *body]
    return KeySnippet(unit.path, unit.qualname, "\n".join([head, *body]), tuple(x.strip() for x in picked))


def render_keys(snippets: list[KeySnippet], keys: list[str], reading: bool) -> str:
    """The prompt block for ``snippets`` (empty when there are none)."""
    if not snippets:
        return ""
    named = ", ".join(f"`{k}`" for k in keys[:12])
    head = (f"Where the repository reads the keys it defines ({named}; other lines omitted):" if reading else
            f"Lines of the repository that set the keys it reads ({named}; other lines omitted):")
    parts = [f"# {s.path}: {s.qualname}\n{s.text}" for s in snippets]
    return f"\n\n{head}\n```python\n" + "\n\n".join(parts) + "\n```"


__all__ = ["KeyIndex", "KeySnippet", "keys_defined", "keys_read", "render_keys"]
