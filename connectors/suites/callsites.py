"""Call sites of a target inside its package: what uses it, for prompts whose contract its callers set.

The repository context (:mod:`connectors.suites.context`) lists what a reference *uses*. A private
helper (``_port_regex``) or a function with a one-line docstring is often specified only by how its
callers use it: the regex must start with a colon because the caller glues it after a host, the
named groups are what the caller reads from the match. This module indexes, for every simple name,
the package functions and methods that load it, and renders each caller as its signature, the first
line of its docstring, and the lines that mention the target (``...`` between them). A module-level
assignment that names it (a table of formats: ``"textile": TableFormat(datarow=_textile_row)``) is a
caller too: its first line and each mention with the two lines before it.

Ranking: callers in the target's own module first, then public callers before private ones, then
fewer lines first (a short caller shows the contract more plainly); at most ``max_callers``.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass

MAX_LINES_PER_CALLER = 8


@dataclass(frozen=True)
class CallSite:
    """One package function or method that mentions a name, rendered for a prompt."""

    caller: str
    path: str
    text: str

    @property
    def private(self) -> bool:
        """The caller's own name starts with an underscore."""
        return self.caller.split(".")[-1].startswith("_")


def _mentions(node: ast.AST) -> dict[str, list[tuple[int, int]]]:
    """``name -> [(first line, last line)]`` of each load of ``name`` (or ``x.name``) in ``node``."""
    out: dict[str, list[tuple[int, int]]] = defaultdict(list)
    calls = {id(n.func): n for n in ast.walk(node) if isinstance(n, ast.Call)}
    for n in ast.walk(node):
        name = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
        if name is None:
            continue
        span = calls.get(id(n), n)
        out[name].append((n.lineno, min(span.end_lineno or n.lineno, n.lineno + 2)))
    return out


def _render(lines: list[str], fn: ast.FunctionDef | ast.AsyncFunctionDef, spans: list[tuple[int, int]],
            owner: str) -> str:
    head_end = fn.body[0].lineno - 1
    head = lines[fn.lineno - 1: max(head_end, fn.lineno)]
    if len(head) > 4:  # a long signature on one line, so the docstring below it stays valid Python
        head = [" " * fn.col_offset + f"def {fn.name}({ast.unparse(fn.args)}):"]
    doc = ast.get_docstring(fn)
    out = [*head]
    pad = " " * (fn.col_offset + 4)
    if doc:
        out.append(f'{pad}"""{doc.strip().splitlines()[0]} ..."""' if "\n" in doc.strip() else f'{pad}"""{doc.strip()}"""')
    last = head_end
    for first, end in sorted(set(spans)):
        if first <= last or len(out) >= MAX_LINES_PER_CALLER + len(head):
            continue
        if first > last + 1:
            out.append(pad + "...")
        out += lines[first - 1: end]
        last = end
    pad_n = min((len(x) - len(x.lstrip()) for x in out if x.strip()), default=0)
    text = "\n".join(x[pad_n:] for x in out)
    return (f"# method of {owner}\n" if owner else "") + text


class CallSiteIndex:
    """Who mentions each simple name, over a package's top-level functions and methods.

    Args:
        files: ``relative path -> source`` (non-Python and unparsable files are skipped).
        pkg_rel: the package folder relative to the repository (only files under it are read).
    """

    def __init__(self, files: dict[str, str], pkg_rel: str = "") -> None:
        self.by_name: dict[str, list[CallSite]] = defaultdict(list)
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
            if isinstance(node, (ast.Assign, ast.AnnAssign)):  # _table_formats = {"textile": TableFormat(datarow=f)}
                self._scan_assignment(path, lines, node)
                continue
            fns = [(node, "")] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
            if isinstance(node, ast.ClassDef):
                fns = [(m, node.name) for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for fn, owner in fns:
                qual = f"{owner}.{fn.name}" if owner else fn.name
                for name, spans in _mentions(fn).items():
                    if name != fn.name:
                        self.by_name[name].append(CallSite(qual, path, _render(lines, fn, spans, owner)))

    def _scan_assignment(self, path: str, lines: list[str], node: ast.Assign | ast.AnnAssign) -> None:
        """A module-level assignment that names a function (a registry, a table of formats) uses it too:
        its first line, then each mention with the two lines before it (the entry's key)."""
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        owner = next((t.id for t in targets if isinstance(t, ast.Name)), "")
        if not owner or node.value is None:
            return
        for name, spans in _mentions(node.value).items():
            out, last = [lines[node.lineno - 1]], node.lineno
            for first, end in sorted(set(spans))[:2]:
                start = max(first - 2, last + 1)
                if start > last + 1:
                    out.append("    ...")
                out += lines[start - 1: end]
                last = max(last, end)
            self.by_name[name].append(CallSite(owner, path, "\n".join(out)))

    def callers(self, name: str, path: str, qualname: str, max_callers: int = 2) -> list[CallSite]:
        """The ranked callers of ``name`` (the target at ``path::qualname`` itself excluded)."""
        found = [c for c in self.by_name.get(name, []) if (c.path, c.caller) != (path, qualname)]
        found.sort(key=lambda c: (c.path != path, c.private, c.text.count("\n")))
        return found[:max_callers]


def doc_lines(reference: str, qualname: str) -> int | None:
    """Non-blank lines of the target's docstring in ``reference`` (0: none); None when the reference
    does not parse or does not define the target."""
    name = qualname.split(".")[-1]
    try:
        body = ast.parse(reference).body
    except SyntaxError:
        return None
    fn = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None)
    if fn is None:
        return None
    return len([ln for ln in (ast.get_docstring(fn) or "").splitlines() if ln.strip()])


def needs_callers(reference: str, qualname: str) -> bool:
    """Its callers set the contract: the target is private, or has no docstring or a one-line one."""
    name = qualname.split(".")[-1]
    if name.startswith("_") and not name.startswith("__"):
        return True
    n = doc_lines(reference, qualname)
    return n is not None and n <= 1


def render_callers(sites: list[CallSite]) -> str:
    """The prompt block for ``sites`` (empty when there are none)."""
    if not sites:
        return ""
    parts = [f"# {c.path}: {c.caller}\n{c.text.rstrip()}" for c in sites]
    return "\n\nWhere the repository uses it (callers; other lines omitted):\n```python\n" + "\n\n".join(parts) + "\n```"


__all__ = ["CallSite", "CallSiteIndex", "doc_lines", "needs_callers", "render_callers"]
