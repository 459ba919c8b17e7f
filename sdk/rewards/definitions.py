"""One duplicate-definition policy for every task kind, and demo code left out (field case P3).

Python's rule is the policy everywhere: when a completion defines the same name twice, the
*last* definition wins and earlier copies are removed before anything runs, each noted as
``duplicate_definition:<name>`` (a warning surfaced as the ``duplicate_definition`` flag and the
``duplicate_definitions`` component, never a penalty by itself). Python is handled with
:mod:`ast` in :mod:`sdk.rewards.extract`; here the brace languages (C, C++, Java, Go, JavaScript,
TypeScript, Rust) are scanned for top-level function definitions (Java: methods of a top-level
class), skipping strings, character literals and comments. C++ and Java overloads (same name,
other parameter types) are different definitions and both stay.

Demo code: a completion's top-level ``print(...)``, calls of its own functions, ``assert``
statements and ``if __name__ == "__main__":`` blocks are examples, not the answer; they are
removed (note ``demo_code_removed``) so that they can neither crash the import nor print into
the run. Other top-level statements (imports, constants, ``sys.setrecursionlimit``) stay.
"""

from __future__ import annotations

import ast
import re

from sdk.types import Language

_CHAR = re.compile(r"'(?:\\.|[^\\'\n]){1,8}'")
_KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "else", "do", "try", "synchronized"}
_HEADERS = {
    Language.GO: re.compile(r"^func\s+(?:\(\s*\w*\s*\*?\s*(\w+)[^)]*\)\s*)?(\w+)\s*[\[(]"),
    Language.JAVASCRIPT: re.compile(r"^(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:function\s*\*?\s*(\w+)|class\s+(\w+))"),
    Language.RUST: re.compile(r"^(?:pub(?:\([^)]*\))?\s+)?(?:const\s+|async\s+|unsafe\s+|extern\s+\"[^\"]*\"\s+)*fn\s+(\w+)"),
}
_HEADERS[Language.TYPESCRIPT] = _HEADERS[Language.JAVASCRIPT]
_C_LIKE = re.compile(r"([\w:~]+)\s*\(([^;{}]*)\)\s*(?:const|noexcept|override|final|throws\s+[\w.,\s]+)*\s*$", re.DOTALL)


def dedupe_braced(code: str, language: Language, notes: list[str]) -> str:
    """``code`` with every earlier copy of a function defined twice removed (last wins)."""
    if language not in (*_HEADERS, Language.C, Language.CPP, Language.JAVA):
        return code
    found = _definitions(code, language)
    last: dict[str, tuple[int, int]] = {}
    for key, span in found:
        last[key] = span
    drop = [(key, span) for key, span in found if last[key] != span]
    if not drop:
        return code
    for key, (a, b) in sorted(drop, key=lambda d: -d[1][0]):
        code = code[:a] + code[b:]
        notes.append(f"duplicate_definition:{key.split('(')[0]}")
    return code


def _definitions(code: str, language: Language) -> list[tuple[str, tuple[int, int]]]:
    """``(key, (start, end))`` of each function defined at the language's top level."""
    base = 1 if language == Language.JAVA else 0
    out, depth, i, boundary, opened = [], 0, 0, 0, []
    while i < len(code):
        c = code[i]
        if code.startswith("//", i) or code.startswith("/*", i):
            end = code.find("\n" if code[i + 1] == "/" else "*/", i + 2)
            i = len(code) if end < 0 else end + (1 if code[i + 1] == "/" else 2)
            continue
        if c in "\"`":
            i = _string_end(code, i)
            continue
        if c == "'" and (m := _CHAR.match(code, i)):
            i = m.end()
            continue
        if c == "{":
            if depth == base:
                opened.append((code[boundary:i], boundary))
            depth += 1
            if depth <= base:
                boundary = i + 1
        elif c == "}":
            depth -= 1
            if depth == base and opened:
                header, start = opened.pop()
                lead = _definition_start(header)
                key = _key(header[lead:].strip(), language)
                if key:
                    out.append((key, (start + lead, i + 1)))
            if depth <= base:
                boundary = i + 1
        elif c == ";" and depth <= base:
            boundary = i + 1
        i += 1
    return out


_PREAMBLE = ("#", "//", "/*", "*", "package ", "import ", "use ", "using ", "extern crate ")


def _definition_start(header: str) -> int:
    """Offset in ``header`` of its first line that is not blank, a comment, a preprocessor line
    or an import/package statement (those belong to the file, not to the definition)."""
    at = 0
    for line in header.splitlines(keepends=True):
        if line.strip() and not line.lstrip().startswith(_PREAMBLE):
            return at + len(line) - len(line.lstrip())
        at += len(line)
    return at


def _string_end(code: str, i: int) -> int:
    quote, j = code[i], i + 1
    while j < len(code) and code[j] != quote:
        j += 2 if code[j] == "\\" else 1
    return j + 1


def _key(header: str, language: Language) -> str | None:
    header = re.sub(r"^(?:\s*@\w+(?:\([^)]*\))?\s*\n)+", "", header).strip()
    if language in _HEADERS:
        m = _HEADERS[language].match(header)
        if not m:
            return None
        groups = [g for g in m.groups() if g]
        return ".".join(groups) if language == Language.GO else groups[-1]
    m = _C_LIKE.search(header)
    if not m or m.group(1) in _KEYWORDS or "=" in header.split("(")[0]:
        return None
    if language == Language.C:
        return m.group(1)
    types = [re.sub(r"\s*\b\w+\s*$", "", p.strip()) if len(p.split()) > 1 else p.strip()
             for p in m.group(2).split(",")]
    return f"{m.group(1)}({','.join(' '.join(t.split()) for t in types)})"


def drop_demo_code(code: str, notes: list[str]) -> str:
    """``code`` without top-level demo statements (see the module docstring); unchanged when
    it does not parse."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    spans = [(n.lineno, n.end_lineno or n.lineno) for n in tree.body if _is_demo(n, defined)]
    if not spans or not defined:
        return code
    notes.append("demo_code_removed")
    lines = code.splitlines()
    return "\n".join(ln for i, ln in enumerate(lines, 1) if not any(a <= i <= b for a, b in spans))


def _is_demo(node: ast.stmt, defined: set[str]) -> bool:
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.If):
        t = node.test
        return (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__"
                and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in t.comparators))
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        names = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        func = node.value.func
        return (isinstance(func, ast.Name) and func.id in {"print", "pprint"}) or bool(names & defined)
    return False
