"""Call sites and test examples in pytest-source prompts (issue 13: prompts a new user can solve)."""

from __future__ import annotations

from collections import defaultdict

from connectors.suites.callsites import CallSiteIndex, needs_callers
from connectors.suites.context import RepoContext, RepoContextOptions
from connectors.suites.examples import example_block
from sdk.tasks.records import Message, Source, Task, UnitTestVerifier

NET = '''import re


def _port_regex():
    return r":(?P<port>[0-9]{1,5})"


def url(value):
    """Whether ``value`` is a URL: a host and an optional port."""
    pattern = re.compile(r"^[a-z.]+" + _port_regex() + r"?$")
    host = value.split(":")[0]
    return bool(pattern.match(value)) and bool(host)


def _unrelated():
    return 1
'''
OTHER = '''from net import _port_regex


def _private_user(x):
    return _port_regex() + x
'''
FILES = {"net/__init__.py": "", "net/core.py": NET, "net/other.py": OTHER}
PORT_REF = 'def _port_regex():\n    return r":(?P<port>[0-9]{1,5})"\n'
TESTS = {"tests/test_url.py": ("from net.core import url\n\n\ndef test_url_port():\n    result = url('a.b:80')\n"
                               "    assert_equal(result, True)\n\n\ndef test_url_long():\n    x = 1\n    y = 2\n"
                               "    assert url('a.b')\n    z = 3\n")}


def task(reference=PORT_REF, qual="_port_regex", tests=None):
    return Task(domain="py/net", prompt=(Message(role="user", content=f"Write `{qual}`."),),
                verifier=UnitTestVerifier(tests=tests or TESTS, files=FILES, target_path="net/core.py", entry_point=qual),
                reference=reference, source=Source(connector="pytest", locator=f"net/core.py::{qual}"))


def test_private_helper_prompt_shows_its_callers_same_module_and_public_first():
    out = RepoContext(RepoContextOptions(), FILES, "net").add(task())
    text = out.prompt[-1].content
    assert "Where the repository uses it" in text
    caller = text.split("Where the repository uses it")[1]
    assert caller.index("def url(value):") < caller.index("def _private_user")  # same module, public first
    assert '_port_regex() + r"?$")' in caller  # the line that sets the contract: the regex follows a host
    assert '"""Whether ``value`` is a URL' in caller
    assert "host = value.split" not in caller  # lines not mentioning the target are left out
    assert out.metadata["context"]["callers"] == ["url", "_private_user"]


def test_callers_respect_the_budget_and_the_switch():
    assert "Where the repository uses it" not in RepoContext(
        RepoContextOptions(token_budget=10), FILES, "net").add(task()).prompt[-1].content
    assert "Where the repository uses it" not in RepoContext(
        RepoContextOptions(callers=False), FILES, "net").add(task()).prompt[-1].content


def test_a_documented_public_function_gets_no_callers():
    ref = 'def url(value):\n    """Whether it is a URL.\n\n    Host, then an optional port.\n    """\n    return True\n'
    assert not needs_callers(ref, "url")
    assert needs_callers('def url(v):\n    """One line."""\n    return v\n', "url")
    assert needs_callers(PORT_REF, "_port_regex")
    assert "Where the repository uses it" not in RepoContext(
        RepoContextOptions(), FILES, "net").add(task(ref, "url")).prompt[-1].content


def test_call_site_index_names_callers_and_skips_the_target_itself():
    index = CallSiteIndex(FILES, "net")
    assert {c.caller for c in index.by_name["_port_regex"]} == {"url", "_private_user"}
    assert index.callers("url", "net/core.py", "url") == []


def test_examples_fall_back_to_whole_tests_then_to_a_callers_tests():
    assert example_block(TESTS, "url") == "\n\nExamples from the tests:\n```python\nassert url('a.b')\n```"
    no_assert = {"t.py": "def test_a():\n    r = f(1)\n    assert_equal(r, 2)\n\n\ndef test_b():\n    pass\n"}
    block = example_block(no_assert, "f")
    assert "def test_a():\n    r = f(1)\n    assert_equal(r, 2)" in block and "test_b" not in block
    via = example_block(no_assert, "_helper", ["f"])
    assert "through `f`" in via and "r = f(1)" in via
    assert example_block(no_assert, "_helper") == ""
    assert example_block(no_assert, "f", max_test_lines=2) == ""  # a 3-line test does not fit 2 lines


def test_private_helper_tested_through_its_caller_shows_those_tests():
    text = RepoContext(RepoContextOptions(), FILES, "net").add(task()).prompt[-1].content
    assert "Examples from the tests (they test it through `url`)" in text
    assert "assert url('a.b')" in text


def test_coverage_counts_are_unchanged_by_callers():
    counts = defaultdict(int)
    out = RepoContext(RepoContextOptions(), FILES, "net").add(task(), counts=counts)
    assert out.metadata["context"]["coverage"] == 1.0 and counts["context_names_used"] == 0


FORMATS = '''from functools import partial


def _wiki_row(tag, cells):
    return tag + tag.join(cells) + tag


def _fill(rows):
    rows.append(1)


def _pair(x):
    if x:
        return x, 1
    return None, 0


FORMATS = {
    "plain": None,
    "wiki": partial(_wiki_row, "||"),
}


def render(rows, fmt):
    """Render ``rows`` in ``fmt``."""
    _fill(rows)
    a, b = _pair(rows)
    return FORMATS[fmt]
'''


def test_a_module_level_table_naming_the_target_is_shown_as_its_caller():
    index = CallSiteIndex({"p/__init__.py": FORMATS}, "p")
    (site,) = index.callers("_wiki_row", "p/__init__.py", "_wiki_row")
    assert site.caller == "FORMATS"
    assert site.text.splitlines() == ["FORMATS = {", '    "plain": None,', '    "wiki": partial(_wiki_row, "||"),']
    assert [c.caller for c in index.by_name["_fill"]] == ["render"]


def test_docstring_less_helpers_show_what_they_return():
    ref = 'def render(rows, fmt):\n    """Render ``rows`` in ``fmt``."""\n    _fill(rows)\n    a, b = _pair(rows)\n'
    t = Task(domain="py/p", prompt=(Message(role="user", content="Write `render`."),),
             verifier=UnitTestVerifier(tests={"t.py": ""}, files={"p/__init__.py": FORMATS}, target_path="p/__init__.py",
                                       entry_point="render"),
             reference=ref, source=Source(connector="pytest", locator="p/__init__.py::render"))
    text = RepoContext(RepoContextOptions(), {"p/__init__.py": FORMATS}, "p").add(t).prompt[-1].content
    assert "def _pair(x):\n    ...\n    return x, 1\n    return None, 0" in text
    assert "def _fill(rows):\n    ...  # returns no value" in text


def test_tests_of_the_same_feature_are_shown_when_none_names_the_target():
    tests = {"t.py": "def test_moinmoin():\n    assert render(T, 'moinmoin') == '|| a ||'\n\n\n"
                     "def test_plain():\n    assert render(T, 'plain') == 'a'\n"}
    block = example_block(tests, "_moin_row_with_attrs")
    assert "(tests of the same feature)" in block and "test_moinmoin" in block and "test_plain" not in block
    assert example_block(tests, "_latex_row") == ""
