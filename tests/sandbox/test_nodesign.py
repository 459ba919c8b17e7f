"""Node's JUnit report held to the test process's signed records (``sdk.sandbox.languages.nodesign``) and
the driver's check of those records (``_runner/tl_offdisk.signed_records``); no node needed."""

from __future__ import annotations

import hashlib
import hmac
import sys

from sdk.sandbox.languages import nodesign, reports
from sdk.sandbox.pyruntime import RUNNER_DIR


INNER = {"passed": "", "failed": "<failure message='x'/>", "skipped": "<skipped/>"}


def _xml(*cases: tuple[str, str]) -> str:
    body = "".join(f"<testcase name='{n}' classname='test'>{INNER[o]}</testcase>" for n, o in cases)
    return f"<?xml version='1.0'?><testsuites>{body}</testsuites>"


def _confirm(cases, records):
    xml = _xml(*cases)
    return [(t.outcome, t.message.split(" ")[0]) for t in nodesign.confirm(xml, reports.parse_junit(xml), records)]


def test_an_honest_report_stands_as_it_is():
    cases = [("small", "passed"), ("big", "failed"), ("later", "skipped"), ("small", "passed")]
    records = [["passed", "small"], ["failed", "big"], ["passed", "later"], ["passed", "small"]]
    assert _confirm(cases, records) == [("passed", ""), ("failed", "x"), ("skipped", ""), ("passed", "")]


def test_a_pass_the_process_signed_as_a_failure_is_failed_and_flagged():
    got = _confirm([("small", "passed"), ("big", "passed")], [["passed", "small"], ["failed", "big"]])
    assert got == [("passed", ""), ("failed", nodesign.UNSIGNED)]


def test_a_failure_rewritten_as_a_skip_and_extra_records_are_flagged():
    assert _confirm([("big", "skipped")], [["failed", "big"]]) == [("failed", nodesign.UNSIGNED)]
    # two signed passes for one reported test: a second test under its name was dropped from the report
    assert _confirm([("big", "passed")], [["passed", "big"], ["passed", "big"]]) == [("failed", nodesign.UNSIGNED)]


def test_a_pass_nothing_was_signed_for_fails_without_a_flag():
    got = _confirm([("small", "passed"), ("helper", "passed")], [["passed", "small"]])
    assert got == [("passed", ""), ("failed", nodesign.UNRECORDED)]


def _offdisk():
    sys.path.insert(0, str(RUNNER_DIR))
    try:
        import tl_offdisk  # noqa: PLC0415 - a sandbox-side module
    finally:
        sys.path.remove(str(RUNNER_DIR))
    return tl_offdisk


def _line(key: bytes, seq: int, outcome: str, name: str) -> bytes:
    body = f"{seq} {outcome} {name.encode().hex()}".encode()
    return hmac.new(key, body, hashlib.sha256).hexdigest()[:32].encode() + b" " + body + b"\n"


def test_only_lines_signed_with_the_key_and_in_sequence_count():
    key, other = b"k" * 32, b"o" * 32
    data = (_line(key, 0, "passed", "small") + _line(other, 1, "passed", "big") + _line(key, 2, "passed", "big")
            + b"junk\n" + _line(key, 1, "failed", "big \u2603"))
    records, forged = _offdisk().signed_records(data, key)
    assert records == [["passed", "small"], ["failed", "big \u2603"]]
    assert forged == 3


def test_trusted_hashes_name_the_suites_scripts_but_never_the_candidates():
    import json
    files = {"tests/helpers.js": "\ufeffmodule.exports = 1;\n", "add.js": "x", "lib/util.cjs": "y", "data.json": "{}"}
    got = json.loads(nodesign.trusted_hashes(files, "add.js"))
    assert got == {"tests/helpers.js": hashlib.sha256(b"module.exports = 1;\n").hexdigest(),
                   "lib/util.cjs": hashlib.sha256(b"y").hexdigest()}
