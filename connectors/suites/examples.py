"""Visible tests shown as examples where they are the only spec (as MBPP shows its tests).

Used by :mod:`connectors.suites.context` when the target has no docstring or a one-line one. Two
shapes, tried in order for the target's name, then (a private helper tested only through its callers)
for each caller's name:

1. ``assert`` lines of the visible tests that call the name (``assert f(2) == 4``);
2. else whole test functions that mention it, shortest first: suites that write
   ``result = f(x)`` then ``assert_equal(expected, result)`` have no one-line assertion to show.

Only the task's *visible* tests are read: hidden tests never reach a prompt.
"""

from __future__ import annotations

import ast
import re


def _assert_lines(tests: dict[str, str], name: str, limit: int) -> list[str]:
    call = re.compile(rf"(?<![\w]){re.escape(name)}\(")
    lines = [ln.strip() for text in tests.values() for ln in text.splitlines()
             if ln.strip().startswith("assert") and call.search(ln)]
    return list(dict.fromkeys(lines))[:limit]


def _test_functions(tests: dict[str, str], name: str) -> list[str]:
    """Source of each ``test*`` function (module level or in a class) whose body mentions ``name``."""
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
                if word.search("\n".join(src)):
                    pad = min((len(x) - len(x.lstrip()) for x in src if x.strip()), default=0)
                    found.append("\n".join(x[pad:] for x in src))
    return sorted(dict.fromkeys(found), key=lambda s: (s.count("\n"), s))


def example_block(tests: dict[str, str], name: str, callers: list[str] = (), max_lines: int = 6,
                  max_test_lines: int = 24) -> str:
    """The examples block for target ``name`` from the visible ``tests`` (``path -> source``); empty
    when nothing in them mentions the target or, failing that, one of its ``callers``."""
    for who in [name, *callers]:
        lines = _assert_lines(tests, who, max_lines)
        if not lines:
            picked: list[str] = []
            used = 0
            for src in _test_functions(tests, who):
                n = src.count("\n") + 1
                if used + n <= max_test_lines:
                    picked.append(src)
                    used += n
            lines = ["\n\n".join(picked)] if picked else []
        if lines:
            via = "" if who == name else f" (they test it through `{who}`)"
            return f"\n\nExamples from the tests{via}:\n```python\n" + "\n".join(lines) + "\n```"
    return ""


__all__ = ["example_block"]
