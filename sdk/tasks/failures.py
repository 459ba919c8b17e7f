"""Why a reference failed its tests, said briefly and in full (issue 13, new-user check).

A ``reference_fails`` quarantine reason once said only "1 of 12 tests did not pass: <names>"; the
user could not see the cause without re-running the suite. :func:`failing_tests_reason` builds a
reason whose first line names the first failing test with its exception type and message line
(what ``tuneloop tasks build`` prints, through ``brief_reason``), and whose further lines keep, for
the first few failing tests, the tail of each test's pytest report (what ``tasks.quarantine.jsonl``
keeps).

:func:`failure_cause` reads pytest's long report (``E   ...`` lines and the closing
``path:line: ErrorType`` line) or a plain Python traceback (its last ``ErrorType: message`` line).
"""

from __future__ import annotations

import re
from typing import Sequence

from sdk.sandbox.contract import TestOutcome

CAUSE_CHARS = 120    # the cause on the reason's first line
DETAIL_TESTS = 3     # failing tests whose report tail the full reason keeps
DETAIL_CHARS = 1200  # of each report's tail
DETAIL_LINES = 20
NAMES = 50           # failing tests named in the full reason

_LOCATION = re.compile(r"^\S.*:\d+: ([A-Za-z_][\w.]*)$")         # test/common.py:9: AssertionError
_EXC_LINE = re.compile(r"^((?:[A-Za-z_][\w.]*)?(?:Error|Exception|Exit|Interrupt|Failed|Warning))\b(?: \[[A-Z0-9_]+\])?(: .*)?$")
# bare Error/Exception too; node's "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'x' imported from ..."


def failure_cause(message: str) -> str:
    """``"ErrorType: message line"`` from one failing test's report ``message``; ``""`` when empty.

    pytest's report: the exception type from its closing ``path:line: ErrorType`` line, the message
    from the last ``E`` block (its line naming the type, else that block's first line: a bare
    ``assert x == y`` shows no type of its own). A plain traceback: its last ``Type: message`` line.
    Else the last non-empty line. Cut to :data:`CAUSE_CHARS`.
    """
    lines = [ln.rstrip() for ln in message.splitlines() if ln.strip()]
    if not lines:
        return ""
    etype = next((m.group(1) for ln in reversed(lines) if (m := _LOCATION.match(ln.strip()))), "")
    block = _last_e_block(lines)
    if block:
        named = next((ln for ln in block if _EXC_LINE.match(ln)), "")
        text = named or block[0]
        cause = text if not etype or text.startswith(etype.split(".")[-1]) else f"{etype}: {text}"
    else:
        cause = next((ln.strip() for ln in reversed(lines) if _EXC_LINE.match(ln.strip())), "") or (
            etype or lines[-1].strip())
    cause = cause.strip()
    return cause if len(cause) <= CAUSE_CHARS else cause[:CAUSE_CHARS - 1] + "…"


def _last_e_block(lines: list[str]) -> list[str]:
    """The last run of pytest's ``E`` lines, the ``E`` and its indent removed."""
    block: list[str] = []
    for ln in reversed(lines):
        if ln.startswith("E ") or ln == "E":
            block.append(ln[1:].strip())
        elif block:
            break
    return [ln for ln in reversed(block) if ln]


def failing_tests_reason(head: str, failed: Sequence[TestOutcome], total: int) -> str:
    """A quarantine reason for ``failed`` tests (of ``total``) that starts with ``head``.

    Line 1: ``head: N of M tests did not pass; first: <test>: <cause>`` (the brief form).
    Then the failing tests' names (the first :data:`NAMES`), and for the first :data:`DETAIL_TESTS` each its cause and
    the tail of its report, indented (the full form, kept in ``tasks.quarantine.jsonl``).
    """
    first = failed[0]
    cause = failure_cause(first.message)
    lines = [f"{head}: {len(failed)} of {total} tests did not pass; first: {first.name}"
             + (f": {cause}" if cause else "")]
    lines.append("failing tests: " + ", ".join(t.name for t in failed[:NAMES]) + (" …" if len(failed) > NAMES else ""))
    for t in failed[:DETAIL_TESTS]:
        lines.append(f"--- {t.name} ({t.outcome}): {failure_cause(t.message) or 'no message'}")
        tail = [ln for ln in t.message.splitlines() if ln.strip()][-DETAIL_LINES:]
        text = "\n".join(tail)[-DETAIL_CHARS:]
        lines.extend("    " + ln for ln in text.splitlines())
    return "\n".join(lines)
