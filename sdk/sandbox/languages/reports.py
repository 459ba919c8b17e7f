"""Parsers from each language's own test runner output to :class:`TestOutcome` tuples.

- JUnit XML (node's ``--test-reporter=junit``, the JUnit console launcher's
  ``TEST-junit-jupiter.xml``): every ``testcase`` anywhere, named by its enclosing suites.
- ``go test -json``: the final ``pass``/``fail``/``skip`` action of each named test.
- Rust libtest: ``test path::name ... ok|FAILED|ignored`` lines.
- ``tltest`` (our C/C++ header, and the Java launcher ``TlJUnit.java``): ``TLTEST passed|failed|skipped
  name [reason]`` lines (from the fd-3 channel).

Each returns an empty tuple when it finds nothing; the caller then reports "no tests".
"""

from __future__ import annotations

import json
import re

from lxml import etree

from sdk.sandbox.contract import TestOutcome

MSG = 2000


def parse_junit(xml: str) -> tuple[TestOutcome, ...]:
    """Test cases of a JUnit XML document (nested suites kept in the name as ``a/b/case``).
    Unparseable XML is recovered where possible (lxml ``recover=True``)."""
    if not xml.strip():
        return ()
    parser = etree.XMLParser(recover=True, huge_tree=False, resolve_entities=False, no_network=True)
    root = etree.fromstring(xml.encode("utf-8", "replace"), parser)
    if root is None:
        return ()
    out = []
    for case in root.iter("testcase"):
        suites = [a.get("name") for a in case.iterancestors("testsuite") if a.get("name")]
        cls = case.get("classname") or ""
        parts = [*reversed(suites), cls] if cls and cls != "test" else list(reversed(suites))   # node: classname "test"
        name = "/".join([*parts, case.get("name") or "?"])
        outcome, message = "passed", ""
        for child in case:
            tag = child.tag if isinstance(child.tag, str) else ""
            if tag in ("failure", "error"):
                outcome = "failed" if tag == "failure" and outcome != "error" else "error"
                message += ((child.get("message") or "") + "\n" + (child.text or "")).strip()[:MSG]
            elif tag == "skipped" and outcome == "passed":
                outcome = "skipped"
        out.append(TestOutcome(name=name, outcome=outcome, message=message[:MSG]))
    return tuple(out)


def go_events(stream: str, *, top_level_only: bool = False, repeat: bool = False) -> list[tuple[str, str, str, str]]:
    """``(package, test, outcome, message)`` of each test in a ``go test -json`` stream (test2json
    events; the last action of a test wins (``repeat``: listed once per action, so a test that ended
    twice is a duplicate result); a failure keeps the tail of its output lines as message).
    ``top_level_only`` leaves subtests (``TestA/case``) to their parent."""
    results: dict[tuple[str, str], str] = {}
    ends: dict[tuple[str, str], int] = {}
    output: dict[tuple[str, str], list[str]] = {}
    for line in stream.splitlines():
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        test = ev.get("Test") if isinstance(ev, dict) else None
        if not isinstance(test, str) or not test or (top_level_only and "/" in test):
            continue
        key = (str(ev.get("Package", "")), test)
        if ev.get("Action") == "output":
            output.setdefault(key, []).append(str(ev.get("Output", "")))
        elif ev.get("Action") in ("pass", "fail", "skip"):
            results[key] = {"pass": "passed", "fail": "failed", "skip": "skipped"}[ev["Action"]]
            ends[key] = ends.get(key, 0) + 1
    # a test that ended more than once (a "--- PASS" line the code under test printed) is reported once per end
    return [(p, t, o, "".join(output.get((p, t), []))[-MSG:] if o == "failed" else "")
            for (p, t), o in results.items() for _ in range(ends[(p, t)] if repeat else 1)]


def parse_go_json(stream: str) -> tuple[TestOutcome, ...]:
    """Results from ``go test -json`` of one package (subtests included), named by test function."""
    return tuple(TestOutcome(name=t, outcome=o, message=m) for _, t, o, m in go_events(stream, repeat=True))


_LIBTEST = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored)\s*$", re.M)


def parse_libtest(text: str) -> tuple[TestOutcome, ...]:
    """Results from a Rust test binary's default (pretty) output."""
    mapping = {"ok": "passed", "FAILED": "failed", "ignored": "skipped"}
    return tuple(TestOutcome(name=m.group(1), outcome=mapping[m.group(2)]) for m in _LIBTEST.finditer(text))


_TLTEST = re.compile(r"^TLTEST (passed|failed|skipped) (\S+)(?: (.*))?$", re.M)


def parse_tltest(text: str, output: str | None = None) -> tuple[TestOutcome, ...]:
    """Results from ``tl_test.h``: ``TLTEST passed|failed name [reason]`` lines of ``text`` (the
    trusted channel's lines); the ``TLFAIL`` lines TL_ASSERT prints are taken from ``output``
    (default ``text``) and only ever attached as messages to failures."""
    fails = re.findall(r"^TLFAIL (.*)$", text if output is None else output, re.M)
    out, i = [], 0
    for m in _TLTEST.finditer(text):
        msg = m.group(3) or ""
        if m.group(1) == "failed" and msg.startswith("exit_1") and i < len(fails):
            msg, i = fails[i], i + 1
        out.append(TestOutcome(name=m.group(2), outcome=m.group(1), message=msg[:MSG]))
    return tuple(out)
