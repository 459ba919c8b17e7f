"""Put a solution's definition of the entry point into an existing source file.

When ``ExecRequest.target_path`` names one of ``ExecRequest.files``, the task is "rewrite this
function of this module": the solution's top-level ``def``/``async def``/``class`` named
``entry_point`` (decorators included, located with ``ast`` line ranges) replaces the one in the
file. The solution's top-level imports that the file lacks are added after the file's
docstring and ``__future__`` imports; helper functions/classes the solution defines under names
the file does not define are inserted just before the spliced definition, and one the file
also defines replaces the file's (Python's last-definition-wins, as if the solution followed
the module: the module's own body is never silently kept over the model's, field case P3).
Nothing of the solution is executed here: this only parses.
"""

from __future__ import annotations

import ast


class SpliceError(ValueError):
    """The solution cannot be spliced: it does not parse, or lacks the entry point."""

    def __init__(self, message: str, syntax: bool = False) -> None:
        super().__init__(message)
        self.syntax = syntax


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _span(node: ast.stmt) -> tuple[int, int]:
    """0-based [start, end) line range of a statement, decorators included."""
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return start - 1, node.end_lineno


def parse_python(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse``, retried when CPython 3.11 raises ``SystemError: AST constructor recursion depth mismatch``.

    That error is a race in CPython 3.11 (gh-106905): the AST constructor's recursion counter is shared by the
    interpreter, and two threads building trees at once (the sandbox pool plans requests in threads) can leave it
    off by a few; the source itself is fine. Seen once in a clean-clone ``.ci/run`` (a trusted task file, stop 34).
    Raises what ``ast.parse`` raises otherwise (``SyntaxError``, ``ValueError``, ...), and the ``SystemError``
    after three tries."""
    for attempt in range(3):
        try:
            return ast.parse(source, filename=filename)
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc) or attempt == 2:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def parse_solution(source: str, filename: str = "solution.py") -> ast.Module:
    """``ast.parse`` that turns every parser failure into :class:`SpliceError` (syntax=True)."""
    try:
        return parse_python(source, filename=filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise SpliceError(f"{type(exc).__name__}: {exc}", syntax=True) from exc


def splice(original: str, solution: str, entry_point: str, filename: str = "target.py") -> str:
    """Return ``original`` with ``entry_point``'s definition taken from ``solution``.

    Args:
        original: source of the file being edited (trusted, from the task).
        solution: the model's code; may hold imports, helpers and the definition.
        entry_point: the top-level name to replace.
    Raises:
        SpliceError: the solution does not parse (``syntax=True``) or does not define
            ``entry_point`` at top level; or ``original`` does not parse.

    A dotted ``entry_point`` ``Class.method`` replaces that method inside ``Class``: the
    solution may give it as a top-level ``def method`` or inside a ``class Class``; it is
    re-indented to the original method's column (see :func:`_splice_method`).
    """
    sol_tree = parse_solution(solution)
    try:
        orig_tree = parse_python(original, filename=filename)
    except SyntaxError as exc:
        raise SpliceError(f"{filename} does not parse: {exc}") from exc
    if "." in entry_point:
        return _splice_method(original, orig_tree, solution, sol_tree, entry_point)
    sol_lines, orig_lines = solution.splitlines(), original.splitlines()
    defs = [n for n in sol_tree.body if isinstance(n, _DEFS) and n.name == entry_point]
    if not defs:
        raise SpliceError(f"the solution does not define `{entry_point}` at top level")
    s0, s1 = _span(defs[-1])
    new_def = sol_lines[s0:s1]

    orig_names = {n.name for n in orig_tree.body if isinstance(n, _DEFS)}
    helpers: list[str] = []
    replaced: dict[str, list[str]] = {}
    for node in sol_tree.body:
        if isinstance(node, _DEFS) and node.name != entry_point:
            a, b = _span(node)
            if node.name in orig_names:
                replaced[node.name] = sol_lines[a:b]
            else:
                helpers += sol_lines[a:b] + [""]
    for node in sorted((n for n in orig_tree.body if isinstance(n, _DEFS) and n.name in replaced),
                       key=lambda n: -n.lineno):
        o0, o1 = _span(node)
        orig_lines[o0:o1] = replaced[node.name] if node is _last_def(orig_tree, node.name) else []
    if replaced:
        orig_tree = parse_python("\n".join(orig_lines), filename=filename)
    present = {ast.unparse(n) for n in orig_tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    imports = [ast.unparse(n) for n in sol_tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
               and ast.unparse(n) not in present and not (isinstance(n, ast.ImportFrom) and n.module == "__future__")]

    targets = [n for n in orig_tree.body if isinstance(n, _DEFS) and n.name == entry_point]
    if targets:
        o0, o1 = _span(targets[-1])
        body = orig_lines[:o0] + helpers + new_def + orig_lines[o1:]
    else:
        body = orig_lines + [""] + helpers + new_def
    at = _import_insertion_line(orig_tree)
    return "\n".join(body[:at] + imports + body[at:]) + "\n"


def _last_def(tree: ast.Module, name: str) -> ast.stmt:
    return [n for n in tree.body if isinstance(n, _DEFS) and n.name == name][-1]


def _import_insertion_line(tree: ast.Module) -> int:
    """Line index after the module docstring and any ``from __future__`` imports."""
    at = 0
    for node in tree.body:
        is_doc = (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                  and isinstance(node.value.value, str) and at == 0 and node is tree.body[0])
        is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if is_doc or is_future:
            at = node.end_lineno
        else:
            break
    return at


def _splice_method(original: str, orig_tree: ast.Module, solution: str, sol_tree: ast.Module,
                   entry_point: str) -> str:
    """Replace method ``Class.method`` of ``original`` with the solution's ``method``."""
    cls_name, _, meth = entry_point.rpartition(".")
    cls = next((n for n in orig_tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name), None)
    target = next((n for n in (cls.body if cls else []) if isinstance(n, _DEFS[:2]) and n.name == meth), None)
    if target is None:
        raise SpliceError(f"the task file has no method `{entry_point}`")
    candidates = [n for n in sol_tree.body if isinstance(n, _DEFS[:2]) and n.name == meth]
    for node in sol_tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls_name:
            candidates += [n for n in node.body if isinstance(n, _DEFS[:2]) and n.name == meth]
    if not candidates:
        raise SpliceError(f"the solution does not define `{meth}` (top level or inside `class {cls_name}`)")
    node = max(candidates, key=lambda n: n.lineno)  # the last definition in the solution wins
    s0, s1 = _span(node)
    sol_lines = solution.splitlines()[s0:s1]
    strip = len(sol_lines[0]) - len(sol_lines[0].lstrip())
    indent = " " * target.col_offset
    new_def = [indent + line[strip:] if line.strip() else "" for line in sol_lines]
    o0, o1 = _span(target)
    orig_lines = original.splitlines()
    return "\n".join(orig_lines[:o0] + new_def + orig_lines[o1:]) + "\n"
