"""String keys in pytest-source prompts (issue 13, isodate 0.7.2): the regex group names and dict
keys a reference reads are shown where the repository sets them, and a helper that defines them
is shown its callers' lines that read them; examples from the tests when the docstring has none."""

from __future__ import annotations

from connectors.suites.context import RepoContext, RepoContextOptions
from connectors.suites.keys import KeyIndex, keys_defined, keys_read
from sdk.tasks.records import Message, Source, Task, UnitTestVerifier

TZ = '''TZ_REGEX = r"(?P<tzname>(Z|(?P<tzsign>[+-])(?P<tzhour>[0-9]{2}))?)"
'''
DATES = '''import re
from iso.tz import TZ_REGEX

CACHE = []


def build_regexps():
    """Compile the patterns once.

    They are kept in CACHE.
    """
    if not CACHE:
        for text in (
            r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})",
            r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})",
            r"(?P<century>[0-9]{2})",
        ):
            CACHE.append(re.compile(text + TZ_REGEX))
    return CACHE


def parse(text):
    """Parse an ISO date.

    Years, months or centuries.
    """
    for pattern in build_regexps():
        match = pattern.match(text)
        if match:
            groups = match.groupdict()
            if "century" in groups:
                return int(groups["century"]) * 100 + 1, groups.get("tzname")
            return int(groups["year"]), int(groups["month"])
    raise ValueError(text)


def unrelated():
    return 1
'''
FILES = {"iso/__init__.py": "", "iso/dates.py": DATES, "iso/tz.py": TZ}
PARSE_REF = DATES[DATES.index("def parse"):DATES.index("def unrelated")]
BUILD_REF = DATES[DATES.index("def build_regexps"):DATES.index("def parse")]
TESTS = {"tests/test_dates.py": "from iso.dates import parse\n\n\ndef test_parse():\n"
                                "    assert parse('2020-01') == (2020, 1)\n    assert parse(x) == y\n"}


def task(reference: str, qual: str) -> Task:
    return Task(domain="py/iso", prompt=(Message(role="user", content=f"Write `{qual}`."),),
                verifier=UnitTestVerifier(tests=TESTS, files=FILES, target_path="iso/dates.py", entry_point=qual),
                reference=reference, source=Source(connector="pytest", locator=f"iso/dates.py::{qual}"))


def test_keys_read_and_defined():
    assert keys_read(PARSE_REF) == ["century", "tzname", "year", "month"]
    assert keys_defined(BUILD_REF) == ["year", "month", "century"]
    assert keys_defined('def f():\n    return {"name": 1, 2: 3}\n') == ["name"]


def test_a_parser_is_shown_the_group_names_its_helper_compiles_and_their_constants():
    text = RepoContext(RepoContextOptions(), FILES, "iso").add(task(PARSE_REF, "parse")).prompt[-1].content
    block = text.split("Lines of the repository that set the keys it reads")[1]
    assert block.count('(?P<year>[0-9]{4})-(?P<month>[0-9]{2})') == 1   # a repeated line once
    assert "(?P<century>" in block
    assert "# iso/tz.py: TZ_REGEX" in block and "(?P<tzname>" in block   # one hop: a constant the helper loads
    assert "def unrelated" not in text


def test_a_helper_that_defines_keys_is_shown_the_lines_that_read_them():
    out = RepoContext(RepoContextOptions(), FILES, "iso").add(task(BUILD_REF, "build_regexps"))
    block = out.prompt[-1].content.split("Where the repository reads the keys it defines")[1]
    assert '"century" in groups' in block and 'int(groups["year"])' in block
    assert "match = pattern.match(text)" not in block and out.metadata["context"]["keys"]


def test_keys_respect_the_switch_and_the_budget():
    off = RepoContext(RepoContextOptions(keys=False), FILES, "iso").add(task(PARSE_REF, "parse"))
    tight = RepoContext(RepoContextOptions(token_budget=5), FILES, "iso").add(task(PARSE_REF, "parse"))
    for out in (off, tight):
        assert "set the keys it reads" not in out.prompt[-1].content


def test_index_lists_units_by_name():
    index = KeyIndex(FILES, "iso")
    assert ("iso/tz.py", "TZ_REGEX") in index.units and index.by_name["parse"][0].path == "iso/dates.py"


def test_examples_when_the_docstring_shows_none():
    shown = RepoContext(RepoContextOptions(), FILES, "iso").add(task(PARSE_REF, "parse")).prompt[-1].content
    assert "assert parse('2020-01') == (2020, 1)" in shown
    assert "assert parse(x) == y" not in shown   # no literal: no example
    old = RepoContext(RepoContextOptions(examples_when="short_docstring"), FILES, "iso").add(task(PARSE_REF, "parse"))
    assert "Examples from the tests" not in old.prompt[-1].content
    doctest = PARSE_REF.replace("Years, months or centuries.", ">>> parse('2020-01')\n    (2020, 1)")
    assert "Examples from the tests" not in RepoContext(RepoContextOptions(), FILES, "iso").add(
        task(doctest, "parse")).prompt[-1].content


def test_a_parametrised_tests_cases_are_examples():
    from connectors.suites.examples import example_block
    tests = {"t.py": 'import pytest\n\nCASES = [("-0%", "0%"), ("250%", "100%")]\n\n\n'
                     '@pytest.mark.parametrize("raw, out", CASES)\ndef test_clip(raw, out):\n    assert out == clip(raw)\n\n\n'
                     '@pytest.mark.parametrize(("a", "b"), [(1, 2)])\ndef test_other(a, b):\n    assert b == other(a)\n'}
    block = example_block(tests, "clip", literal=True)
    assert "# test_clip: cases ('raw, out')" in block and "('-0%', '0%')" in block and "assert out == clip(raw)" in block
    assert "(1, 2)" in example_block(tests, "other") and example_block(tests, "nothing") == ""
