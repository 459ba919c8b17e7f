"""A visible test's one-line ``with pytest.raises(E): f(...)`` joins the examples: the error contract
a docstring rarely states (new-user trial, funcy 2.1: ``zip_values()`` with no dict raises
``TypeError``; the prompt showed only the assert line, so a natural body failed the test)."""

from __future__ import annotations

from connectors.suites.examples import example_block

TESTS = {"tests/test_colls.py": '''
import pytest

def test_zip_values():
    assert list(zip_values({1: 10}, {1: 20, 2: 30})) == [(10, 20)]
    with pytest.raises(TypeError): list(zip_values())

def test_other():
    with pytest.raises(ValueError): other(1)
    with pytest.raises(ValueError):
        zip_values(None)
'''}


def test_raises_line_added_to_assert_lines():
    block = example_block(TESTS, "zip_values", literal=True)
    assert "assert list(zip_values({1: 10}, {1: 20, 2: 30})) == [(10, 20)]" in block
    assert "with pytest.raises(TypeError): list(zip_values())" in block
    assert "other(1)" not in block and "zip_values(None)" not in block  # another name; a two-line with


def test_raises_only_keeps_whole_test_fallback():
    only = {"tests/t.py": "import pytest\n\ndef test_f():\n    x = 2\n    with pytest.raises(KeyError): f(x)\n"}
    block = example_block(only, "f")
    assert "def test_f():" in block and "with pytest.raises(KeyError): f(x)" in block


PARAM_OVER_FUNCS = {"tests/test_colls.py": '''
import pytest

@pytest.mark.parametrize("get", [get_in, get_lax])
def test_get_list(get):
    assert get([1, 2], [0]) == 1
    assert forget([1], [0]) == 1
'''}


def test_test_parametrised_over_the_target_shows_its_calls():
    """funcy's ``parametrize("get", [get_in, get_lax])``: the prompt of get_in showed no example."""
    block = example_block(PARAM_OVER_FUNCS, "get_in", literal=True)
    assert "assert get_in([1, 2], [0]) == 1" in block and "forget_in" not in block
    assert "get_in" not in example_block(PARAM_OVER_FUNCS, "get_other", literal=True)
