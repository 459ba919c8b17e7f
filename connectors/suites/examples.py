"""Visible tests shown as examples where they are the only spec (as MBPP shows its tests).

Used by :mod:`connectors.suites.context` when the target's docstring shows no example. Two
shapes, tried in order for the target's name, then (a private helper tested only through its callers)
for each caller's name:

1. ``assert`` lines of the visible tests that call the name (``assert f(2) == 4``);
2. else whole test functions that mention it, those whose names share the target's words first, then
   shortest first: suites that write ``result = f(x)`` then ``assert_equal(expected, result)`` have no
   one-line assertion to show.

Last, when neither the target nor a caller is named in the visible tests (a row formatter reached only
through ``tabulate(..., tablefmt="textile")``), the visible tests whose own names share most of the
target's words (``test_textile`` for ``_textile_row_with_attrs``) are shown.

A parametrised test that calls a name with its parameters shows its cases (``("-0%", "0%")``) and
that call, before whole tests are tried; a test parametrised over the target itself
(``parametrize("get", [get_in, get_lax])``) has its calls of the parameter read as calls of the target. For a target with a docstring (no ``>>>`` in it), only ``assert`` lines that hold a literal are shown
(``literal``); one-line ``with pytest.raises(E): f(...)`` lines are added to the lines shown. Only the task's *visible* tests are read: hidden tests never reach a prompt.
"""

from __future__ import annotations

import ast
import re


_LITERAL = re.compile(r"[\"']|(?<![\w.])\d")  # ``assert f(dt, fmt) == expected`` (a parametrised test) shows no example


def _assert_lines(tests: dict[str, str], name: str, limit: int, literal: bool = False) -> list[str]:
    call = re.compile(rf"(?<![\w]){re.escape(name)}\(")
    lines = [ln.strip() for text in tests.values() for ln in text.splitlines()
             if ln.strip().startswith("assert") and call.search(ln) and (not literal or _LITERAL.search(ln))]
    return list(dict.fromkeys(lines))[:limit]


_RAISES = re.compile(r"with (?:pytest\.)?raises\(.*\):\s*\S")  # ``with pytest.raises(TypeError): f()``


def _raises_lines(tests: dict[str, str], name: str, limit: int) -> list[str]:
    """One-line ``with pytest.raises(E): ...name(...)`` lines: the error contract a docstring rarely
    states (funcy's ``zip_values()`` with no dict raises ``TypeError``), added to the lines picked."""
    call = re.compile(rf"(?<![\w]){re.escape(name)}\(")
    lines = [ln.strip() for text in tests.values() for ln in text.splitlines()
             if call.search(ln) and _RAISES.match(ln.strip())]
    return list(dict.fromkeys(lines))[:limit]


def _param_cases(tests: dict[str, str], name: str, limit: int) -> list[str]:
    """For a parametrised test whose body calls ``name`` with its parameters (``assert out ==
    f(raw)``): its argument names, its first ``limit`` cases (a literal list, or a module-level name
    bound to one) and the lines that call ``name``; the first such test only."""
    call = re.compile(rf"(?<![\w]){re.escape(name)}\(")
    for text in tests.values():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        lines = text.splitlines()
        consts = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                  if isinstance(t, ast.Name) and isinstance(n.value, (ast.List, ast.Tuple))}
        for fn in [*tree.body, *(m for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body)]:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.name.startswith("test"):
                continue
            uses = [ln.strip() for ln in lines[fn.body[0].lineno - 1: fn.end_lineno] if call.search(ln)]
            for deco in fn.decorator_list if uses else ():
                if isinstance(deco, ast.Call) and ast.unparse(deco.func).endswith("parametrize") and len(deco.args) >= 2:
                    cases = consts.get(getattr(deco.args[1], "id", ""), deco.args[1])
                    if isinstance(cases, (ast.List, ast.Tuple)) and cases.elts:
                        head = f"# {fn.name}: cases ({ast.unparse(deco.args[0])})"
                        return [head, *(ast.unparse(e) for e in cases.elts[:limit]), *uses[:2]]
    return []


def _aliased(tests: dict[str, str], name: str) -> dict[str, str]:
    """``tests`` with the calls of a parameter that a test is parametrised over ``name`` with (funcy's
    ``@pytest.mark.parametrize("get", [get_in, get_lax])`` then ``assert get(d, ["i"]) == "j"``)
    written as calls of ``name``: such a test never names its target in its body."""
    out = dict(tests)
    for path, text in tests.items():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        lines = text.splitlines()
        for fn in [*tree.body, *(m for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body)]:
            for deco in getattr(fn, "decorator_list", ()) if isinstance(fn, ast.FunctionDef) else ():
                if not (isinstance(deco, ast.Call) and ast.unparse(deco.func).endswith("parametrize")
                        and len(deco.args) >= 2 and isinstance(deco.args[0], ast.Constant)
                        and isinstance(deco.args[1], (ast.List, ast.Tuple))
                        and any(isinstance(e, ast.Name) and e.id == name for e in deco.args[1].elts)):
                    continue
                alias = re.compile(rf"(?<![\w.]){re.escape(str(deco.args[0].value).strip())}\(")
                for i in range(fn.body[0].lineno - 1, fn.end_lineno):
                    lines[i] = alias.sub(f"{name}(", lines[i])
        out[path] = "\n".join(lines)
    return out


_COMMON = {"with", "for", "the", "and", "from", "into", "get", "set", "row", "rows", "value", "values", "test"}


def name_words(name: str) -> set[str]:
    """The telling words of an identifier (``_textile_row_with_attrs`` → ``{"textile", "attrs"}``)."""
    return {w for w in name.lower().split("_") if len(w) >= 3 and w not in _COMMON}


def _test_functions(tests: dict[str, str], name: str, words: set[str], by_words: bool = False) -> list[str]:
    """Source of each ``test*`` function (module level or in a class) whose body mentions ``name`` (with
    ``by_words``: whose own name shares the most of ``words``), those whose names share more of
    ``words`` first, then shortest first."""
    word = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")
    found = []
    for text in tests.values():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        lines = text.splitlines()
        nodes = [*tree.body, *(m for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body)]
        for fn in nodes:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name.startswith("test"):
                src = lines[fn.lineno - 1: fn.end_lineno]
                shared = sum(w in fn.name.lower() for w in words)  # test_moinmoin shares "moin"
                if shared if by_words else word.search("\n".join(src)):
                    pad = min((len(x) - len(x.lstrip()) for x in src if x.strip()), default=0)
                    found.append((-shared, "\n".join(x[pad:] for x in src)))
    top = min((k for k, _ in found), default=0)
    picked = [(k, src) for k, src in found if not by_words or k == top]
    return [src for _, src in sorted(set(picked), key=lambda p: (p[0], p[1].count("\n"), p[1]))]


def example_block(tests: dict[str, str], name: str, callers: list[str] = (), max_lines: int = 6,
                  max_test_lines: int = 24, literal: bool = False) -> str:
    """The examples block for target ``name`` from the visible ``tests`` (``path -> source``); empty
    when nothing in them mentions the target or, failing that, one of its ``callers``. With
    ``literal``, only ``assert`` lines holding a literal count (``assert f(dt, fmt) == expected``, the
    body of a parametrised test, shows nothing the docstring does not)."""
    tests = _aliased(tests, name)
    for who in [name, *callers, ""]:  # "": tests whose names share the target's words (test_textile)
        lines = (_assert_lines(tests, who, max_lines, True) or _param_cases(tests, who, 2 * max_lines)
                 or (_assert_lines(tests, who, max_lines) if not literal else [])) if who else []
        lines += [ln for ln in _raises_lines(tests, who, 3) if lines and ln not in lines] if who else []
        if not lines:
            picked: list[str] = []
            used = 0
            for src in _test_functions(tests, who or name, name_words(name), by_words=not who):
                n = src.count("\n") + 1
                if used + n <= max_test_lines:
                    picked.append(src)
                    used += n
            lines = ["\n\n".join(picked)] if picked else []
        if lines:
            via = "" if who == name else f" (they test it through `{who}`)" if who else " (tests of the same feature)"
            return f"\n\nExamples from the tests{via}:\n```python\n" + "\n".join(lines) + "\n```"
    return ""


__all__ = ["example_block", "name_words"]
