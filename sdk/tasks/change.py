"""The change verifier: a repository at one commit, a change description, tests that decide (issue 17).

A change task asks for a *repository change* (a unified diff, several files allowed) instead of a
function body. Its verifier carries what the sandbox needs to judge one:

- ``files``: the repository's source at the parent commit (``path -> text``), which the diff
  applies to;
- ``support``: test-side files at the commit that are not test modules (``conftest.py``, test
  helpers and packages, data files), written pristine next to the source;
- ``tests``: the commit's test modules holding the tests below, pristine (a diff's edits to them
  are dropped and flagged by the reward);
- ``fail_to_pass``: test ids (pytest node ids; ``<file>_test.go::TestName`` for Go) that fail at the parent and pass at the commit (at least one);
- ``pass_to_pass``: node ids that pass at both (the regression tier);
- ``test_globs`` / ``runner_globs``: which paths are test-side or CI/runner configuration, so the
  reward can ignore and flag a diff that edits them.

Mined by ``connectors.history`` (the ``git_history`` source); scored by :mod:`sdk.rewards.change`.
This module imports only :mod:`sdk.types` so that :mod:`sdk.tasks.records` can put the verifier in
its union.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Literal

from pydantic import Field, model_validator

from sdk.types import Framework, Frozen, Language, canonical_json

TEST_GLOBS = ("tests/*", "test/*", "testing/*", "*/tests/*", "*/test/*", "test_*.py", "*/test_*.py", "*_test.py",
              "conftest.py", "*/conftest.py")
RUNNER_GLOBS = (".github/*", ".gitlab-ci.yml", ".circleci/*", ".travis.yml", "azure-pipelines.yml", "tox.ini",
                "noxfile.py", "pytest.ini", ".pre-commit-config.yaml", "Jenkinsfile", "buildkite/*", ".ci/*")

# Go: test files and their data (``testdata`` folders are ignored by the go tool as packages)
GO_TEST_GLOBS = ("*_test.go", "testdata/*", "*/testdata/*")

# Go: module and workspace files (a `replace` could bring in packages that the go_repo guard does
# not cover, see sdk.sandbox.languages.goguard): runner configuration for Go tasks
GO_RUNNER_GLOBS = ("go.mod", "go.sum", "go.work", "go.work.sum", "*/go.mod", "*/go.sum", "*/go.work")

# files an interpreter or pytest loads by itself (site hooks, path files, distribution metadata with
# entry-point plugins): refused in every change whatever a verifier's ``runner_globs`` say
LOADER_GLOBS = ("sitecustomize.py", "*/sitecustomize.py", "usercustomize.py", "*/usercustomize.py", "*.pth",
                "*.dist-info/*", "*.egg-info/*", "*.egg-link")


def matches(path: str, globs: tuple[str, ...]) -> bool:
    """True when ``path`` (POSIX, relative) matches one of ``globs`` (:func:`fnmatch.fnmatch`: ``*``
    also crosses ``/``)."""
    return any(fnmatch.fnmatchcase(path, g) for g in globs)


def is_test_module(path: str, test_globs: tuple[str, ...] = TEST_GLOBS) -> bool:
    """A test-side ``.py`` file pytest collects by default (``test_*.py`` or ``*_test.py``), or a
    Go ``*_test.go`` file."""
    name = path.rsplit("/", 1)[-1]
    if name.endswith("_test.go"):
        return matches(path, test_globs)
    return matches(path, test_globs) and name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def module_groups(paths: list[str]) -> list[list[str]]:
    """``paths`` (test modules) in the fewest groups whose file names are unique: the sandbox runs
    tests from a folder without the repository's ``__init__.py`` files, where pytest cannot import
    two ``test_core.py`` in one session ("import file mismatch"). The k-th module of a name goes to
    group k; order is kept."""
    groups: list[list[str]] = []
    seen: dict[str, int] = {}
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        k = seen.get(name, 0)
        seen[name] = k + 1
        if k == len(groups):
            groups.append([])
        groups[k].append(path)
    return groups


SHADOW_SITE = re.compile(r"\bshadow (\S+:\d+:\d+): ")


def exempt_site(detail: str) -> str | None:
    """The test site named by a shadow comparison's ``always_equal`` flag in a reward's ``detail``
    (``... shadow tests/t.py:12:4: A == int says yes ...``), or None."""
    m = SHADOW_SITE.search(detail or "")
    return m.group(1) if m else None


def exempt_sites(detail: str) -> tuple[str, ...]:
    """Every test site named by shadow comparisons' flags in ``detail`` (:func:`exempt_site`), in
    order, each once (the runner keeps up to 8 per run; a reward joins its runs' details)."""
    return tuple(dict.fromkeys(SHADOW_SITE.findall(detail or "")))


class ChangeVerifier(Frozen):
    """Judge a unified diff against the repository at the parent commit (see the module docstring).

    Attributes:
        language, framework: Python with pytest, or Go with ``go_repo`` (node ids
            ``<test file>::<TestName>``; :mod:`sdk.sandbox.languages.gorepo`).
        files: source files at the parent, ``path -> text`` (test-side and runner files excluded).
        support: test-side files at the commit that are not test modules, ``path -> text``.
        tests: test modules at the commit, ``path -> text``.
        fail_to_pass: node ids (``tests/test_x.py::test_y``) that must go from failing to passing.
        pass_to_pass: node ids that pass before and after; each one broken costs the regression penalty.
        test_globs: globs of test-side paths (edits ignored and flagged ``edits_tests``).
        runner_globs: globs of CI / test-runner configuration (edits ignored and flagged ``edits_ci``).
        target_path: the sandbox's candidate module: an empty file (the repository's own modules,
            patched, are support files of the run; see :mod:`sdk.rewards.change` for what that means).
        timeout_s: wall-clock seconds for one run of the tests.
        requirements: pip requirements the tests need, installed by :mod:`sdk.sandbox.deps`.
        shadow_exempt: comparison sites (``tests/test_x.py:12:4``) of the tests whose shadow
            comparison (``_runner/tl_shadow.py``) is not flagged: where the reference's own values
            disagree with their canonical data (an honest ``__eq__`` over some fields), found when
            the reference is validated (:func:`exempt_site`).
    """

    kind: Literal["change"] = "change"
    language: Language = Language.PYTHON
    framework: Framework = Framework.PYTEST
    files: dict[str, str]
    support: dict[str, str] = Field(default_factory=dict)
    tests: dict[str, str]
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...] = ()
    test_globs: tuple[str, ...] = TEST_GLOBS
    runner_globs: tuple[str, ...] = RUNNER_GLOBS
    target_path: str = "_tl_change.py"
    timeout_s: float = 60.0
    requirements: tuple[str, ...] = ()
    shadow_exempt: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> ChangeVerifier:
        if not self.fail_to_pass:
            raise ValueError("a change verifier needs at least one fail-to-pass test")
        if set(self.fail_to_pass) & set(self.pass_to_pass):
            raise ValueError("a test cannot be both fail-to-pass and pass-to-pass")
        for path in [*self.files, *self.support, *self.tests, self.target_path]:
            if path.startswith("/") or ".." in path.split("/"):
                raise ValueError(f"file path {path!r} must be relative and stay inside the repository")
        missing = [t for t in (*self.fail_to_pass, *self.pass_to_pass) if t.split("::")[0] not in self.tests]
        if missing:
            raise ValueError(f"tests {missing[:3]} name files that are not in `tests`")
        return self

    def protected(self, path: str) -> str | None:
        """``edits_tests`` or ``edits_ci`` when a diff may not change ``path``, else None (the
        sandbox's candidate module, :data:`LOADER_GLOBS` and, for Go, :data:`GO_RUNNER_GLOBS` count
        as runner configuration)."""
        if path == self.target_path or matches(path, self.runner_globs) or matches(path, LOADER_GLOBS):
            return "edits_ci"
        if self.language == Language.GO and matches(path, GO_RUNNER_GLOBS):
            return "edits_ci"
        if matches(path, self.test_globs):
            return "edits_tests"
        return None

    def __hash__(self) -> int:  # dict fields are not hashable by default
        return hash(canonical_json(self.model_dump(mode="json")))
