"""The ``junit`` source type: a CI run's JUnit XML reports + the repository → repair tasks.

Config::

    sources:
      - type: junit
        domain: repair/billing
        options:
          path: ../billing            # the repository, at the commit the reports were made on
          reports: [ci/reports/*.xml] # globs, relative to the config file; one CI run
          language: java              # python (default), java, go or javascript

The reports are parsed (:func:`connectors.suites.junit.load_junit`) and combined as one run
(:func:`~connectors.suites.junit.combine_reports`: an engine's empty report is not a broken
suite when another holds tests). A case without a usable ``file`` attribute gets its test file
from its class name and the repository layout (:mod:`connectors.suites.junit_layout`); the
tasks are built by :func:`connectors.suites.junit_repair.repair_tasks`. Skipped cases, pseudo-cases
and cases of broken suites never become tasks (J7, J8).

Counts: ``reports``, ``cases``, ``failing`` (failure/error among the usable cases),
``skipped``, ``broken_suites``, ``files_from_layout`` (cases whose file was found from the
class name), ``tasks``, ``quarantined``.
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from connectors.suites.junit import JUnitReport, combine_reports, load_junit
from connectors.suites.junit_layout import TARGETS, locate_test_file
from connectors.suites.junit_repair import repair_tasks
from sdk.errors import SourceError
from sdk.sources import SourceOptions, SourceResult, TaskSource
from sdk.tasks.records import Language


class JUnitSourceOptions(SourceOptions):
    """Options of the ``junit`` source.

    Attributes:
        path: repository folder (relative to the config file).
        reports: globs of JUnit XML files of one CI run (relative to the config file); at least one.
        language: language of the repository's code and tests: ``python``, ``java``, ``go`` or
            ``javascript``; picks the layout rules and the verifier's runner.
        max_message_chars: each failure message is cut to this many characters in the prompt.
    """

    path: str
    reports: list[str] = Field(min_length=1)
    language: Literal["python", "java", "go", "javascript"] = "python"
    max_message_chars: int = Field(600, ge=40, le=20_000)

    @field_validator("reports", mode="before")
    @classmethod
    def _one_or_many(cls, value):
        return [value] if isinstance(value, str) else value

    @field_validator("reports")
    @classmethod
    def _not_blank(cls, value: list[str]) -> list[str]:
        if any(not v.strip() for v in value):
            raise ValueError("a report glob is empty; give paths like ci/reports/*.xml")
        return value


class JUnitSource(TaskSource):
    """JUnit XML reports of a CI run → one repair task per failing test file.

    Raises (from :meth:`read`):
        SourceError: the repository folder is missing, no report matches a glob, or a report is
            not JUnit XML.
    """

    Options = JUnitSourceOptions
    name = "junit"

    def _load(self) -> SourceResult:
        opts: JUnitSourceOptions = self.options  # type: ignore[assignment]
        repo = self.resolve(opts.path)
        if not repo.is_dir():
            raise SourceError(f"repository folder {repo} does not exist",
                              "set `path:` to the repository the reports were made on")
        paths = self._report_paths(opts.reports)
        language = Language(opts.language)
        report = combine_reports([load_junit(p) for p in paths])
        located, from_layout = self._with_files(report, repo, language)
        tasks, quarantined = repair_tasks(located, repo, self.domain, language=language,
                                          target_for=TARGETS[language], max_message_chars=opts.max_message_chars)
        usable = located.usable()
        counts = {"reports": len(paths), "cases": len(report.cases),
                  "failing": sum(c.status in ("failure", "error") for c in usable),
                  "skipped": sum(c.status == "skipped" for c in usable),
                  "broken_suites": len(report.broken_suites), "files_from_layout": from_layout,
                  "tasks": len(tasks), "quarantined": len(quarantined)}
        return SourceResult(tasks=tasks, quarantined=quarantined, counts=counts)

    def _report_paths(self, globs: list[str]) -> list[Path]:
        paths: list[Path] = []
        for pattern in globs:
            found = sorted(Path(p) for p in glob.glob(str(self.resolve(pattern)), recursive=True) if Path(p).is_file())
            if not found:
                raise SourceError(f"no JUnit report matches {pattern!r} (looked in {self.resolve(pattern).parent})",
                                  "set `reports:` to globs of the XML files your CI writes, relative to the config file")
            paths += [p for p in found if p not in paths]
        return paths

    @staticmethod
    def _with_files(report: JUnitReport, repo: Path, language: Language) -> tuple[JUnitReport, int]:
        """``report`` with each failing case's ``file`` filled from the layout where the report gave none."""
        cases, found = [], 0
        for case in report.cases:
            if case.status in ("failure", "error") and not (case.file and (repo / case.file).is_file()):
                located = locate_test_file(repo, case, language)
                if located:
                    case, found = case.model_copy(update={"file": located}), found + 1
            cases.append(case)
        return report.model_copy(update={"cases": tuple(cases)}), found
