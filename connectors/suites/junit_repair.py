"""Failing CI tests → repair tasks: "make this test pass without breaking the passing ones".

Input: a :class:`connectors.suites.junit.JUnitReport` from the repository's CI and the repository
folder. For each real failing or erroring test case (never a pseudo-case, never a case of a
broken suite: field case J7), the task shows the failure message and the file to repair; the
completion is the complete repaired file; the verifier runs the whole test file (so the tests
that passed must keep passing). There is no known-good fix, so ``reference`` is ``None``:
these tasks are for RL and evaluation, and the reference validation quarantines them as
``no_reference`` if they are put through it.

Which file to repair: the case's ``file`` attribute (``pytest --junitxml`` and Surefire's
``file`` give the test file) maps to the source file through ``target_for`` (default for
Python: ``tests/test_x.py`` → the only ``x.py`` elsewhere in the repository).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from connectors.suites.junit import JUnitReport, TestCaseRecord
from sdk.tasks.records import Language, Message, Quarantined, Source, Task, UnitTestVerifier

_FRAMEWORK = {Language.PYTHON: "pytest", Language.JAVASCRIPT: "node", Language.JAVA: "junit", Language.GO: "go"}


def python_target(repo: Path, test_file: str) -> str | None:
    """``tests/test_x.py`` (or ``x_test.py``) → the one ``x.py`` outside the tests' folder, else None."""
    name = Path(test_file).name
    stem = name[5:-3] if name.startswith("test_") else name[:-8] if name.endswith("_test.py") else ""
    if not stem:
        return None
    test_dir = (repo / test_file).parent.resolve()
    found = [p for p in repo.rglob(f"{stem}.py") if p.parent.resolve() != test_dir and "__pycache__" not in p.parts]
    return found[0].relative_to(repo).as_posix() if len(found) == 1 else None


def repair_tasks(report: JUnitReport, repo: Path, domain: str, language: Language = Language.PYTHON,
                 target_for: Callable[[Path, str], str | None] = python_target,
                 max_message_chars: int = 600) -> tuple[list[Task], list[Quarantined]]:
    """One repair task per failing test file (all its failing cases in one prompt).

    Args:
        report: the parsed CI report; only :meth:`JUnitReport.usable` cases are considered.
        repo: the repository folder at the commit the report was made on.
        domain: task domain, e.g. ``repair/billing``.
        target_for: ``(repo, test file) -> source file to repair`` or None when unknown.
        max_message_chars: each failure message is cut to this many characters in the prompt.
    Returns:
        ``(tasks, quarantined)``; a failing case whose test file or target cannot be found is
        quarantined with the reason.
    """
    failing: dict[str, list[TestCaseRecord]] = {}
    quarantined: list[Quarantined] = []
    for case in report.usable():
        if case.status not in ("failure", "error"):
            continue
        source = Source(connector="junit", uri=str(repo), locator=f"{case.classname}::{case.name}")
        if not case.file or not (repo / case.file).is_file():
            quarantined.append(Quarantined(reason="no test file: the report gives no readable file for this case",
                                           source=source))
            continue
        failing.setdefault(case.file, []).append(case)
    tasks = []
    for test_file, cases in sorted(failing.items()):
        target = target_for(repo, test_file)
        source = Source(connector="junit", uri=str(repo), locator=test_file)
        if target is None or not (repo / target).is_file():
            quarantined.append(Quarantined(reason=f"no repair target: cannot tell which file {test_file} tests",
                                           source=source))
            continue
        text = (repo / target).read_text(encoding="utf-8")
        failures = "\n".join(f"- {c.name}: {c.message[:max_message_chars].strip()}" for c in cases)
        prompt = (f"These tests in `{test_file}` fail:\n{failures}\n\nRepair `{target}` so they pass without "
                  f"breaking the tests that pass now. Reply with the complete file in one code block.\n\n"
                  f"```\n{text.rstrip()}\n```")
        files = {p: (repo / p).read_text(encoding="utf-8") for p in _support(repo, language) if p not in (target, test_file)}
        verifier = UnitTestVerifier(language=language, framework=_FRAMEWORK.get(language, "pytest"), target_path=target,
                                    files=files, tests={test_file: (repo / test_file).read_text(encoding="utf-8")})
        tasks.append(Task(domain=domain, prompt=(Message(role="user", content=prompt),), verifier=verifier,
                          reference=None, source=source.model_copy(update={"locator": target}),
                          metadata={"failing": [f"{c.classname}::{c.name}" for c in cases]}))
    return tasks, quarantined


def _support(repo: Path, language: Language) -> list[str]:
    """Source files of ``language`` in the repository (no hidden folders, caches or virtualenvs)."""
    ext = {Language.PYTHON: ".py", Language.JAVASCRIPT: ".js", Language.JAVA: ".java", Language.GO: ".go"}.get(language, ".py")
    skip = {"__pycache__", "node_modules", "site-packages", "venv", ".venv", "target", "build"}
    out = []
    for path in sorted(repo.rglob(f"*{ext}")):
        parts = path.relative_to(repo).parts
        if not (set(parts) & skip) and not any(p.startswith(".") for p in parts):
            out.append(path.relative_to(repo).as_posix())
    return out
