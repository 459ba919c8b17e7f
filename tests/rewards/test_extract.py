"""Code extraction from completions: field cases P1 and P2 and their kin."""

from __future__ import annotations

import pytest

from sdk.rewards.extract import ExtractStatus, extract_code
from sdk.tasks.records import Language

ADD = "def add(a, b):\n    return a + b\n"


def test_p1_block_defining_entry_point_wins_over_later_usage_block():
    text = ("Here is a function that adds two numbers.\n\n```python\ndef add(a, b):\n    return a + b\n```\n\n"
            "Example:\n\n```python\nprint(add(2, 3))\n```\n")
    ext = extract_code(text, "add")
    assert ext.status == ExtractStatus.OK
    assert ext.code == ADD
    assert "chose_defining_block" in ext.notes


def test_p2_stray_closing_fence_still_yields_code():
    ext = extract_code(ADD + "```\n", "add")
    assert ext.code == ADD
    assert "stray_fence" in ext.notes


def test_p2_unclosed_fence_still_yields_code():
    ext = extract_code("Sure!\n```python\n" + ADD, "add")
    assert ext.code == ADD
    assert "unclosed_fence" in ext.notes


def test_p2_thinking_is_ignored():
    text = "<think>Maybe\n```python\ndef add(a, b):\n    return a - b\n```\n</think>\n```python\n" + ADD + "```"
    ext = extract_code(text, "add")
    assert ext.code == ADD
    assert "thinking_removed" in ext.notes


def test_p2_only_thinking_is_no_code():
    ext = extract_code("<think>def add(a, b): return a - b", "add")
    assert ext.status == ExtractStatus.NO_CODE and ext.code is None


@pytest.mark.parametrize("text", ["", "   \n", "I am not able to help with that.", "```\n```"])
def test_p2_no_code_is_its_own_status(text):
    ext = extract_code(text, "add")
    assert ext.status == ExtractStatus.NO_CODE
    assert ext.code is None


def test_stray_think_close_drops_the_prompt_side_thinking():
    ext = extract_code("reasoning def add(a, b): return 0\n</think>\n" + ADD, "add")
    assert ext.code == ADD


def test_bare_code_with_prose_around_it():
    ext = extract_code("Sure, here you go:\n" + ADD + "This returns the sum.\n", "add")
    assert ext.code == ADD
    assert "unfenced" in ext.notes


def test_duplicate_definitions_keep_the_last_like_python():
    text = "```python\ndef add(a, b):\n    return 0\n\n\ndef add(a, b):\n    return a + b\n```"
    ext = extract_code(text, "add")
    assert ext.code.count("def add") == 1
    assert "return a + b" in ext.code
    assert "duplicate_definition:add" in ext.notes


def test_later_block_redefining_entry_point_wins():
    text = "```python\ndef add(a, b):\n    return a - b\n```\nOops, fixed:\n```python\n" + ADD + "```"
    assert extract_code(text, "add").code == ADD


def test_helpers_from_another_block_are_carried_over():
    text = ("```python\nimport math\n\ndef _sq(x):\n    return x * x\n```\n```python\n"
            "def norm(a, b):\n    return math.sqrt(_sq(a) + _sq(b))\n```")
    code = extract_code(text, "norm").code
    namespace: dict = {}
    exec(code, namespace)  # trusted test input
    assert namespace["norm"](3, 4) == 5


def test_glued_closing_fence_on_a_code_line():
    assert extract_code("```python\ndef add(a, b):\n    return a + b```", "add").code == ADD


def test_broken_fenced_code_is_code_not_no_code():
    ext = extract_code("```python\ndef add(a, b)\n    return a + b\n```", "add")
    assert ext.status == ExtractStatus.OK
    assert "def add(a, b)" in ext.code


def test_other_language_block_chosen_by_tag_and_entry_point():
    text = "```js\nconsole.log(add(1, 2))\n```\n```javascript\nfunction add(a, b) { return a + b; }\n```"
    ext = extract_code(text, "add", Language.JAVASCRIPT)
    assert ext.code.strip() == "function add(a, b) { return a + b; }"


def test_non_python_block_is_not_taken_for_python():
    text = "```bash\npip install foo\n```\n```python\n" + ADD + "```"
    assert extract_code(text, "add").code == ADD
