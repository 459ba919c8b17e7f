"""``sft.reference_docstrings: drop``: train references without the docstrings the prompt already shows."""

from __future__ import annotations

import ast

import pytest

from sdk.config import SftConfig
from sdk.tasks.records import Message, Source, Task, UnitTestVerifier
from sdk.train.sft import answer_text, drop_docstrings, sft_rows

REF = '''def frequencies(seq):
    """Find number of occurrences of each value in seq

    >>> frequencies('cat cat ox pig pig cat')  #doctest: +SKIP
    {'cat': 3, 'ox': 1, 'pig': 2}
    """
    d = {}
    for item in seq:
        d[item] = d.get(item, 0) + 1  # "not a docstring"
    return d


class Box:
    \'\'\'A box.\'\'\'

    def get(self):
        "Only a docstring."
'''


def _task(reference: str, language: str = "python") -> Task:
    return Task(domain="lib", source=Source(connector="t"), reference=reference,
                prompt=[Message(role="user", content="Write `frequencies`.")],
                verifier=UnitTestVerifier(tests={"test_f.py": "def test_f():\n    assert True\n"}, language=language))


def test_drop_docstrings_removes_every_def_and_class_docstring_and_keeps_the_code():
    out = drop_docstrings(REF)
    tree = ast.parse(out)  # still valid Python
    assert [ast.get_docstring(n) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))] == [None] * 3
    assert "occurrences" not in out and "A box." not in out and "Only a docstring" not in out
    assert 'd[item] = d.get(item, 0) + 1  # "not a docstring"' in out and "return d" in out
    assert "        pass\n" in out  # a body that held only its docstring stays a body


@pytest.mark.parametrize("code", ["def f(:\n    'broken'\n", '"""module doc"""\nX = 1\n', 'def f(): "doc"; return 1\n'])
def test_drop_docstrings_leaves_unparsable_module_and_one_line_docstrings_alone(code):
    assert drop_docstrings(code) == code


def test_sft_rows_drop_docstrings_only_when_asked_and_only_for_python_references():
    kept = sft_rows([_task(REF)], [])[0]["completion"][0]["content"]
    dropped = sft_rows([_task(REF)], [], "drop")[0]["completion"][0]["content"]
    assert "occurrences" in kept and "occurrences" not in dropped
    assert dropped.startswith("```python\ndef frequencies(seq):\n    d = {}") and dropped.endswith("\n```")
    js = '/** doc */\nfunction f() { return "x"; }'
    assert answer_text(_task(js, "javascript"), "drop") == f"```javascript\n{js}\n```"


def test_reference_docstrings_config_defaults_to_keep_and_rejects_other_values():
    assert SftConfig().reference_docstrings == "keep"
    assert SftConfig(reference_docstrings="drop").reference_docstrings == "drop"
    with pytest.raises(ValueError):
        SftConfig(reference_docstrings="strip")
