"""connectors.suites.pysource: targets, stubs, import cutting, test pruning, broken bodies."""

from __future__ import annotations

import pytest

from connectors.suites.pysource import TestModule, module_context, replace_body, scan_module

MODULE = '''"""Doc."""
from __future__ import annotations

import math
from os import path, sep as SEP


def long_header(
    a: int,
    b: int = 2,
) -> float:
    """Multi-line header."""
    return math.sqrt(a * b)


def one_line(x): return x + 1


async def fetch(p):
    return path.join(p, SEP)


class Box:
    def size(self):
        return 1

    @property
    def twice(self):
        return 2

    @twice.setter
    def twice(self, value):
        pass
'''


def _fns():
    return {f.qualname: f for f in scan_module(MODULE, "pkg/m.py").functions}


def test_targets_and_ambiguous_names():
    fns = _fns()
    assert list(fns) == ["long_header", "one_line", "fetch", "Box.size", "Box.twice"]
    assert fns["Box.twice"].ambiguous and not fns["Box.size"].ambiguous
    assert fns["Box.size"].class_header == "class Box:"
    assert fns["long_header"].reference.startswith("def long_header(\n    a: int,")


def test_stubs_keep_header_and_docstring_only():
    fns = _fns()
    assert fns["long_header"].stub == 'def long_header(\n    a: int,\n    b: int = 2,\n) -> float:\n    """Multi-line header."""\n    ...\n'
    assert fns["one_line"].stub == "def one_line(x):\n    ...\n"
    assert fns["fetch"].stub.startswith("async def fetch(p):") and "join" not in fns["fetch"].stub


def test_imports_cut_to_used_names():
    info = scan_module(MODULE, "pkg/m.py")
    fns = _fns()
    assert info.imports_for(fns["long_header"]) == "import math\n"
    assert info.imports_for(fns["fetch"]) == "from os import path, sep as SEP\n"
    assert info.imports_for(fns["one_line"]) == ""
    assert "__future__" not in info.imports


def test_module_context_removes_only_the_body():
    text = module_context(MODULE, _fns()["Box.size"])
    assert "    def size(self):\n        ...\n" in text and "return 1" not in text
    assert "return math.sqrt(a * b)" in text


def test_test_module_pruning():
    source = '''import pytest

K = 3


@pytest.fixture
def f():
    return 1


def test_a(f):
    assert f


@pytest.mark.parametrize("x", [1, 2])
def test_b(x):
    assert x


class TestC:
    def helper(self):
        return K

    def test_c1(self):
        assert self.helper()

    def test_c2(self):
        assert True


class TestD:
    def test_d(self):
        assert True
'''
    collected = {(None, "test_a"), (None, "test_b"), ("TestC", "test_c1"), ("TestC", "test_c2"), ("TestD", "test_d")}
    module = TestModule(source, collected)
    kept = module.keep({(None, "test_b"), ("TestC", "test_c2")})
    assert "def test_b" in kept and "@pytest.mark.parametrize" in kept and "def test_c2" in kept
    assert "def test_a" not in kept and "def test_c1" not in kept and "TestD" not in kept
    assert "def helper" in kept and "K = 3" in kept and "def f():" in kept
    compile(kept, "kept.py", "exec")
    assert "\n\n\n\n" not in kept


def test_replace_body_makes_broken_solutions():
    ref = "@cache\ndef f(x):\n    '''Doc.'''\n    return x\n"
    assert replace_body(ref, "f", "return None") == "@cache\ndef f(x):\n    return None\n"
    assert "raise NotImplementedError" in replace_body("def m(self):\n    return 1\n", "Box.m", "raise NotImplementedError")
    with pytest.raises(ValueError):
        replace_body(ref, "g", "return None")
