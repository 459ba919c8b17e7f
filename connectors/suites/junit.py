"""JUnit XML from any CI → normalised test-case records, with broken-suite detection.

Reads what Maven Surefire, Gradle, ``pytest --junitxml``, go-junit-report and jest-junit write:
a ``<testsuites>`` wrapper or a bare ``<testsuite>`` root, suites nested to any depth. Parsing
is lxml in recovering mode, after the bytes XML 1.0 forbids (control characters such as ESC
and NUL, raw or as character references) are replaced by a visible ``\\xNN`` escape, so a
report a CI wrote with a terminal colour code in a failure message still loads (field case
J5); every repair is recorded as a warning.

Normalisation (field cases J1–J7 of shared/cases/CASES.md):

* one :class:`TestCaseRecord` per ``(classname, name)``: duplicates merge into the worst status
  (``error`` > ``failure`` > ``skipped`` > ``passed``) with all messages kept (J6);
* ``<properties>``, ``<system-out>`` and friends are never test cases (J2);
* a message comes from the ``message`` attribute, else the element's text (J3);
* ``time`` that is empty, missing or unreadable is ``None``; a decimal comma is accepted (J4);
* declared suite counters that disagree with the cases found are a warning (J6);
* a case with ``<skipped>`` is skipped even when it also holds a failure or error (an
  assumption that did not hold); the extra element is a warning (J8); the skip reason comes
  from the ``message`` attribute or the element's body;
* a case without ``classname`` takes its suite's name, so two class-less ``test_ok`` of two
  suites stay two records; ``<system-out>``/``<system-err>`` are kept as ``output``; bytes that
  are not UTF-8 (in a report that declares no other encoding) become U+FFFD with a warning (J9);
* statuses come from the child elements, never the counters; a name ``Parent/child`` (Go
  subtests, parametrised ids) records ``parent`` (J10);
* a suite that reports no test case at all (a Go package that failed to build) or holds a
  runner's pseudo-case ("Test suite failed to run", pytest's "collection failure",
  "[build failed]") is a *broken suite* (J7): its pseudo-cases are flagged and never usable
  as verifiers.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Literal, Sequence

from lxml import etree
from pydantic import BaseModel, ConfigDict

from sdk.errors import SourceError

Status = Literal["passed", "failure", "error", "skipped"]
_RANK = {"passed": 0, "skipped": 1, "failure": 2, "error": 3}
_BAD_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_BAD_REFS = re.compile(rb"&#(?:x0*([0-8bcefBCEF]|1[0-9a-fA-F])|0*([0-8]|1[1-2]|1[4-9]|2[0-9]|3[01]));")
_PSEUDO = re.compile(r"test suite failed to run|collection failure|\[build failed\]|failed to load|"
                     r"^\[setup failed\]", re.IGNORECASE)


class _Rec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TestCaseRecord(_Rec):
    """One test case.

    Attributes:
        suite: suite path, names joined by ``/`` from the outermost ``<testsuite>`` (``All/Auth.Login``).
        classname, name: as reported; ``(classname, name)`` is the record's identity.
        status: passed, failure, error or skipped (the worst one seen for this identity).
        message: the messages of every failure/error/skipped element, joined by blank lines.
        duration: seconds, or None when absent or unreadable.
        file, line: source location when the report gives one.
        pseudo: a runner's stand-in for a suite that never ran (never a real test).
        parent: for a subtest named ``Parent/child``, the parent's name (``""`` otherwise).
        output: the case's ``<system-out>`` and ``<system-err>`` text.
    """

    __test__ = False
    suite: str = ""
    classname: str = ""
    name: str
    status: Status
    message: str = ""
    duration: float | None = None
    file: str = ""
    line: int | None = None
    pseudo: bool = False
    parent: str = ""
    output: str = ""

    @property
    def key(self) -> tuple[str, str]:
        """The record's identity, ``(classname, name)``."""
        return (self.classname, self.name)


class SuiteRecord(_Rec):
    """One ``<testsuite>``: its path, declared counters, cases found and whether it is broken."""

    path: str
    declared_tests: int | None = None
    cases: int = 0
    broken: bool = False
    reason: str = ""


class JUnitReport(_Rec):
    """A parsed report: test cases (deduplicated, document order), suites, and warnings."""

    cases: tuple[TestCaseRecord, ...]
    suites: tuple[SuiteRecord, ...]
    warnings: tuple[str, ...] = ()

    @property
    def broken_suites(self) -> tuple[SuiteRecord, ...]:
        """Suites flagged broken (J7), in document order."""
        return tuple(s for s in self.suites if s.broken)

    def usable(self) -> tuple[TestCaseRecord, ...]:
        """Real cases (no pseudo-cases) of suites that ran."""
        broken = {s.path for s in self.broken_suites}
        return tuple(c for c in self.cases if not c.pseudo and c.suite not in broken)


def load_junit(source: str | bytes | Path) -> JUnitReport:
    """Parse a JUnit XML report from a path, XML bytes or XML text.

    Raises:
        SourceError: the file is missing, or nothing usable remains after recovery.
    """
    if isinstance(source, Path):
        if not source.is_file():
            raise SourceError(f"JUnit report {source} does not exist", "point at the XML file your CI writes")
        data = source.read_bytes()
    else:
        data = source.encode("utf-8") if isinstance(source, str) else source
    warnings: list[str] = []
    cleaned = _BAD_BYTES.sub(lambda m: b"\\x%02x" % m.group(0)[0], data)
    cleaned = _BAD_REFS.sub(lambda m: b"\\x" + (m.group(1) or b"%02x" % int(m.group(2))).lower().rjust(2, b"0"), cleaned)
    if cleaned != data:
        warnings.append("bytes XML 1.0 forbids (control characters) were replaced by \\xNN escapes")
    cleaned = _as_utf8(cleaned, warnings)
    parser = etree.XMLParser(recover=True, huge_tree=True, resolve_entities=False, no_network=True)
    try:
        root = etree.fromstring(cleaned, parser)
    except etree.XMLSyntaxError as exc:
        root = None
        warnings.append(f"XML error: {exc}")
    warnings += [f"XML recovered at line {e.line}: {e.message}" for e in parser.error_log]
    if root is None or _local(root.tag) not in ("testsuites", "testsuite"):
        raise SourceError("the report has no <testsuites> or <testsuite> root element",
                          "pass the JUnit XML file your test runner writes (e.g. `pytest --junitxml=report.xml`)")
    walker = _Walker(warnings)
    if _local(root.tag) == "testsuite":
        walker.suite(root, "")
    else:
        for child in root:
            if _local(child.tag) == "testsuite":
                walker.suite(child, "")
            elif _local(child.tag) == "testcase":
                walker.case(child, "")
    return JUnitReport(cases=tuple(walker.merged()), suites=tuple(walker.suites), warnings=tuple(warnings))


class _Walker:
    def __init__(self, warnings: list[str]) -> None:
        self.warnings = warnings
        self.cases: list[TestCaseRecord] = []
        self.suites: list[SuiteRecord] = []

    def suite(self, node, parent: str) -> int:
        """Record ``node`` and its descendants; returns the number of cases under it."""
        name = node.get("name") or f"suite{len(self.suites) + 1}"
        path = f"{parent}/{name}" if parent else name
        index = len(self.suites)
        self.suites.append(SuiteRecord(path=path))
        first = len(self.cases)
        found = 0
        for child in node:
            tag = _local(child.tag) if isinstance(child.tag, str) else ""
            if tag == "testsuite":
                found += self.suite(child, path)
            elif tag == "testcase":
                self.case(child, path)
                found += 1
        own = self.cases[first:]
        declared = _int(node.get("tests"))
        self._check_counters(node, path, [c for c in own if c.suite == path], declared)
        broken, reason = _broken(found, [c for c in own if c.pseudo and c.suite == path])
        self.suites[index] = SuiteRecord(path=path, declared_tests=declared, cases=found, broken=broken, reason=reason)
        return found

    def case(self, node, suite: str) -> None:
        """Record one ``<testcase>``: worst status of its children, their messages, time, location."""
        status, messages, output, seen = "passed", [], [], set()
        for child in node:
            tag = _local(child.tag) if isinstance(child.tag, str) else ""
            if tag in ("system-out", "system-err") and (child.text or "").strip():
                output.append(child.text.strip())
            if tag in ("failure", "error", "skipped"):
                seen.add(tag)
                status = max(status, tag, key=_RANK.__getitem__)
                text = child.get("message") or (child.text or "").strip()
                if child.get("message") and (child.text or "").strip():
                    text = f"{child.get('message')}\n{child.text.strip()}"
                if child.get("type") and child.get("type") not in text:
                    text = f"{child.get('type')}: {text}" if text else child.get("type")
                if text:
                    messages.append(text)
        name = node.get("name") or ""
        classname = node.get("classname") or node.get("class") or suite.rsplit("/", 1)[-1]
        if "skipped" in seen and seen - {"skipped"}:
            status = "skipped"
            self.warnings.append(f"test {classname}::{name} is skipped but also carries "
                                 f"{' and '.join(sorted(seen - {'skipped'}))}; kept as skipped")
        self.cases.append(TestCaseRecord(
            suite=suite, classname=classname, name=name, status=status, message="\n\n".join(messages),
            duration=self._duration(node.get("time"), name), file=node.get("file") or "",
            line=_int(node.get("line")), pseudo=bool(_PSEUDO.search(name)),
            parent=name.rsplit("/", 1)[0] if "/" in name.strip("/") else "", output="\n".join(output)))

    def _duration(self, raw: str | None, name: str) -> float | None:
        if raw is None or not raw.strip():
            return None
        try:
            value = float(raw.strip().replace(",", "."))
        except ValueError:
            self.warnings.append(f"test {name!r}: unreadable time {raw!r}")
            return None
        return value if value >= 0 else None

    def _check_counters(self, node, path: str, own: list[TestCaseRecord], declared: int | None) -> None:
        counted = {"tests": len(own), "failures": sum(c.status == "failure" for c in own),
                   "errors": sum(c.status == "error" for c in own), "skipped": sum(c.status == "skipped" for c in own)}
        if any(_local(c.tag) == "testsuite" for c in node if isinstance(c.tag, str)):
            return  # counters of a suite with nested suites aggregate its children; too many dialects to check
        for key, n in counted.items():
            value = _int(node.get(key) if key != "skipped" else node.get("skipped", node.get("skips")))
            if value is not None and value != n:
                self.warnings.append(f"suite {path!r}: declares {key}={value} but holds {n}")

    def merged(self) -> list[TestCaseRecord]:
        """One record per (classname, name): worst status, all messages; a warning per duplicate."""
        out: dict[tuple[str, str], TestCaseRecord] = {}
        for case in self.cases:
            seen = out.get(case.key)
            if seen is None:
                out[case.key] = case
                continue
            self.warnings.append(f"test {case.classname}::{case.name} is reported more than once")
            worst = max(seen.status, case.status, key=_RANK.__getitem__)
            message = "\n\n".join(m for m in (seen.message, case.message) if m)
            durations = [d for d in (seen.duration, case.duration) if d is not None]
            out[case.key] = seen.model_copy(update={"status": worst, "message": message,
                                                    "duration": max(durations) if durations else None})
        return list(out.values())


_DECLARED = re.compile(rb"^\s*<\?xml[^>]*encoding=[\"']([A-Za-z0-9._-]+)")


def _as_utf8(data: bytes, warnings: list[str]) -> bytes:
    """``data`` with bytes that are not UTF-8 replaced by U+FFFD, unless it declares another encoding."""
    declared = _DECLARED.match(data)
    if declared and declared.group(1).lower().replace(b"_", b"-") not in (b"utf-8", b"utf8"):
        return data
    try:
        data.decode("utf-8")
        return data
    except UnicodeDecodeError as exc:
        warnings.append(f"bytes that are not UTF-8 (first at offset {exc.start}) were replaced by U+FFFD")
        return data.decode("utf-8", errors="replace").encode("utf-8")


def _broken(found: int, pseudo: list[TestCaseRecord]) -> tuple[bool, str]:
    if pseudo:
        return True, f"the runner reported {pseudo[0].name!r}: {pseudo[0].message[:200]}"
    if found == 0:
        return True, "the suite reported no test case (it may have failed to build or load)"
    return False, ""


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _int(raw: str | None) -> int | None:
    try:
        return int(float(raw)) if raw not in (None, "") else None
    except ValueError:
        return None


def combine_reports(reports: Sequence[JUnitReport]) -> JUnitReport:
    """The reports of one CI run (one file per module, per engine ...) as one report.

    A report holding no test case at all whose suites are empty (not a runner's pseudo-case) is
    an engine that found nothing to run (JUnit 5 writes one for ``junit-vintage`` next to
    ``junit-jupiter``): when another report of the run holds cases, its suites are not broken,
    with a warning (field case J11). Alone, or beside other empty reports, they stay broken (J7).
    Cases with the same ``(classname, name)`` in two reports merge as within one report.
    """
    any_cases = any(r.cases for r in reports)
    suites: list[SuiteRecord] = []
    warnings: list[str] = []
    for n, report in enumerate(reports):
        warnings += report.warnings
        idle = not report.cases and all(s.cases == 0 for s in report.suites)
        if idle and any_cases:
            warnings.append(f"report {n + 1}: no test case (an engine that found no tests); not a broken suite")
            suites += [s.model_copy(update={"broken": False, "reason": ""}) for s in report.suites]
        else:
            suites += report.suites
    walker = _Walker(warnings)
    walker.cases = [c for r in reports for c in r.cases]
    return JUnitReport(cases=tuple(walker.merged()), suites=tuple(suites), warnings=tuple(warnings))


def stable_tests(history: Iterable[JUnitReport], min_runs: int = 3) -> set[tuple[str, str]]:
    """Tests that passed in every one of at least ``min_runs`` reports: safe to use as verifiers.

    Args:
        history: reports of the same suite from successive CI runs.
        min_runs: how many reports a test must appear in.
    Returns:
        ``(classname, name)`` keys of real (non-pseudo) tests with only ``passed`` outcomes.
    """
    runs: dict[tuple[str, str], list[str]] = {}
    for report in history:
        for case in report.usable():
            runs.setdefault(case.key, []).append(case.status)
    return {k for k, s in runs.items() if len(s) >= min_runs and all(x == "passed" for x in s)}
