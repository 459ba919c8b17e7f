"""Splicing a solution's definition into an existing module (no execution involved)."""

from __future__ import annotations

import ast

import pytest

from sdk.sandbox.splice import SpliceError, splice

ORIGINAL = '''"""Billing helpers."""
from __future__ import annotations

import math

RATE = 2


def untouched():
    return 1


@staticmethod
def price(x):
    raise NotImplementedError


def tail():
    return price(3)
'''


def test_replaces_definition_with_decorators_and_keeps_the_rest():
    sol = "import functools\n\n@functools.cache\ndef price(x):\n    return x * RATE\n"
    out = splice(ORIGINAL, sol, "price")
    tree = ast.parse(out)
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert names == ["untouched", "price", "tail"]
    assert "NotImplementedError" not in out and "@staticmethod" not in out
    assert "@functools.cache" in out
    # the new import goes after the docstring and the __future__ import
    lines = out.splitlines()
    assert lines.index("import functools") == 2
    ns: dict = {}
    exec(compile(out, "billing.py", "exec"), ns)
    assert ns["tail"]() == 6


def test_helpers_are_inserted_before_the_entry_point():
    sol = "def _double(v):\n    return 2 * v\n\ndef price(x):\n    return _double(x)\n"
    ns: dict = {}
    exec(compile(splice(ORIGINAL, sol, "price"), "b.py", "exec"), ns)
    assert ns["price"](5) == 10


def test_class_entry_point():
    orig = "class Box:\n    pass\n\nX = Box\n"
    out = splice(orig, "class Box:\n    size = 3\n", "Box")
    ns: dict = {}
    exec(out, ns)
    assert ns["X"].size == 3


def test_missing_entry_point_is_an_error_not_a_syntax_error():
    with pytest.raises(SpliceError) as err:
        splice(ORIGINAL, "def other():\n    return 1\n", "price")
    assert not err.value.syntax and "price" in str(err.value)


def test_syntax_error_is_flagged():
    with pytest.raises(SpliceError) as err:
        splice(ORIGINAL, "def price(x:\n", "price")
    assert err.value.syntax


def test_missing_in_original_is_appended():
    out = splice("A = 1\n", "def f():\n    return A\n", "f")
    ns: dict = {}
    exec(out, ns)
    assert ns["f"]() == 1


def test_parse_python_retries_cpython_ast_depth_race_and_raises_other_errors(monkeypatch):
    """CPython 3.11's ``AST constructor recursion depth mismatch`` (gh-106905, a race between threads) failed a
    clean-clone CI run while the pool planned requests; the same source parses on a retry. Other errors pass through."""
    import ast

    from sdk.sandbox import splice as splice_mod

    real, calls = ast.parse, []

    def racy(source, filename="<unknown>"):
        calls.append(filename)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=33, after=30)")
        return real(source, filename=filename)

    monkeypatch.setattr(splice_mod.ast, "parse", racy)
    tree = splice_mod.parse_python("def f():\n    return 1\n", "target.py")
    assert [n.name for n in tree.body] == ["f"] and calls == ["target.py", "target.py"]
    monkeypatch.setattr(splice_mod.ast, "parse", lambda s, filename="": (_ for _ in ()).throw(SystemError("other")))
    with pytest.raises(SystemError, match="other"):
        splice_mod.parse_python("x = 1\n")
