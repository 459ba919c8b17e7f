"""Node results confirmed by the test's own signed records (issue 14, round 8).

``node --test`` runs each test file in a child process that also runs the solution; the child reports
each result to its runner as a v8-serialised frame on its stdout, which the solution can rewrite on
its way out (a failure made a pass: a patched stream, ``fs.writeSync(1, ...)``, a child process, the
runner's own descriptors). For CommonJS and ES module tests (the one-run-per-file mode of ``_runner/tl_offdisk.py``)
the guard preloaded in that child (``tl_node_guard.cjs``) wraps the function of every test the hidden
test file or a helper script shipped with the suite (:func:`trusted_hashes`) registers and signs what the function itself did (returned, resolved or called back: passed;
threw, rejected or called back with an error: failed) with a key read before any solution code; the
driver checks the MACs (``tl_offdisk.signed_records``) and passes the records on as ``node_signed``.

:func:`confirm` holds node's JUnit report to them, per test name (the JUnit ``testcase`` name: the
records carry no suite path): no more passes than signed passes, no fewer failures than signed
failures, and no more records than test cases. A name that breaks this has every result that is not
already a failure turned into one, its message starting with :data:`UNSIGNED` (flag
``runner_tampering``) where the name has signed records, or :data:`UNRECORDED` (no flag) where it has
none: a test registered outside the hidden material (by a dependency, after
test code called solution code at load) is never signed (a false negative, never a false flag), and a
rewrite after the record pipe was closed earns nothing. Honest runs of tests the test file registers
always agree: node passes a test only when its function completed.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from lxml import etree

from sdk.sandbox.contract import TestOutcome

UNSIGNED = "unconfirmed:"   # a name whose signed records contradict node's report: flagged
UNRECORDED = "unrecorded:"   # a pass of a name nothing was signed for: failed, not flagged


def trusted_hashes(files: dict[str, str], target_path: str) -> str:
    """JSON ``{path: SHA-256 hex}`` of every script (CommonJS or ES module) among a task's support ``files``
    (``path -> source``) but the candidate's ``target_path``: the hidden test material that, beside the
    test file itself, may register signed tests (a suite's ``tests/helpers.js``). The guard compiles a
    file loaded from such a path as hidden material only while its text (a BOM stripped) still has that
    hash, and compares the hashes with V8's hash of each caller's script (``CallSite.getScriptHash``:
    SHA-256 of the UTF-8 source it compiled)."""
    out = {}
    for path, text in files.items():
        if path != target_path and path.endswith((".js", ".cjs", ".mjs")):
            out[path] = hashlib.sha256(text.removeprefix("\ufeff").encode("utf-8", "replace")).hexdigest()
    return json.dumps(out, sort_keys=True)


def leaf_names(xml: str) -> list[str]:
    """The ``name`` of every ``testcase`` of a JUnit document, in document order (as
    ``reports.parse_junit`` lists them); empty when nothing parses."""
    if not xml.strip():
        return []
    parser = etree.XMLParser(recover=True, huge_tree=False, resolve_entities=False, no_network=True)
    root = etree.fromstring(xml.encode("utf-8", "replace"), parser)
    return [] if root is None else [case.get("name") or "?" for case in root.iter("testcase")]


def confirm(xml: str, tests: tuple[TestOutcome, ...], records: list) -> tuple[TestOutcome, ...]:
    """``tests`` (``reports.parse_junit(xml)``) held to ``records`` (``[outcome, name]`` pairs, outcome
    ``passed``/``failed``): see the module docstring. Returns the outcomes, unconfirmed ones failed."""
    leaves = leaf_names(xml)
    if len(leaves) != len(tests):   # cannot align: judge by the last part of each name
        leaves = [t.name.rsplit("/", 1)[-1] for t in tests]
    signed = {"passed": Counter(), "failed": Counter()}
    for rec in records:
        if isinstance(rec, list) and len(rec) == 2 and rec[0] in signed:
            signed[rec[0]][str(rec[1])] += 1
    cases: dict[str, list[str]] = {}
    for leaf, t in zip(leaves, tests):
        cases.setdefault(leaf, []).append(t.outcome)
    bad = {leaf for leaf, got in cases.items()
           if got.count("passed") > signed["passed"][leaf]
           or sum(o in ("failed", "error") for o in got) < signed["failed"][leaf]
           or signed["passed"][leaf] + signed["failed"][leaf] > len(got)}
    why = {True: f"{UNSIGNED} node reported this result, but the test's own process signed a different one "
                 "(its result frames were rewritten on their way to the runner)",
           False: f"{UNRECORDED} node reported a pass the test's own process never signed (a test registered "
                  "outside the hidden test material, e.g. by a dependency, or a record pipe closed by the code under test)"}
    return tuple(t.model_copy(update={"outcome": "failed", "message": why[signed["passed"][leaf] + signed["failed"][leaf] > 0]})
                 if leaf in bad and t.outcome not in ("failed", "error") else t for leaf, t in zip(leaves, tests))
