"""Go repositories as candidates (framework ``go_repo``; change tasks, issue 17).

A Go change task's candidate is a whole module: each test package is built with
``go test -c -vet=off`` and run in the sandbox over the patched source and the task's pristine
``_test.go`` files (only those: the repository's other test files are not written; vet is off:
the tests decide, and vet costs about 4 s a run with a fresh build cache, measured here). Each top-level test is named like
a pytest node id, ``<test file>::<TestName>`` (the file of the test's package that declares it),
so the fail-to-pass / pass-to-pass logic shared with Python (``connectors.history``,
``sdk.rewards.change``) works on these names unchanged; subtests are part of their parent test.

A package whose tests do not build gives no test of that package (the others still run): the run
is ``failed`` with the build errors in its detail, or ``compile_error`` when no test ran at all.

Verdicts: never from the binary's own output (the candidate's code is linked into the test binary
and its package initialisers run before any test: it could print ``--- PASS`` or leave with status
0). :mod:`.goguard` instruments the run (a guard package every module package imports, so it is
initialised first; each test wrapped), ``tl_build.py`` builds each test package with ``go test -c``
and runs each binary with a key of its own on fd 4, and the outcomes are the guard's signed lines on
fd 3 (see :mod:`.goguard` for what that rests on and what it does not cover). :func:`node_ids`
reads a ``go test -json`` stream (kept for whole-file Go tasks' shape and its tests); a run's
``go.mod`` toolchain settings are the task's, no network, a fresh ``GOCACHE``/``GOPATH`` in the
run's scratch space, every declared test counted once.
"""

from __future__ import annotations

import posixpath
import re

from sdk.sandbox.contract import TestOutcome
from sdk.sandbox.languages.reports import go_events

TEST_FUNC = re.compile(r"^func (Test(?:[^a-z\W]\w*)?)\(\s*\w+\s+\*testing\.T\s*\)", re.MULTILINE)
MODULE = re.compile(r"^module\s+(\S+)", re.MULTILINE)


def go_test_functions(text: str) -> dict[str, str]:
    """``TestName -> source`` of the top-level test functions of a ``_test.go`` file (from
    ``func TestX(t *testing.T)`` to the next line that starts with ``}``, whitespace-normalised)."""
    out = {}
    for m in TEST_FUNC.finditer(text):
        end = re.compile(r"^}", re.MULTILINE).search(text, m.end())
        body = text[m.start():end.end() if end else len(text)]
        out[m.group(1)] = " ".join(body.split())
    return out


def module_path(files: dict[str, str]) -> str:
    """The module path declared by the root ``go.mod`` of ``files`` ('' when none)."""
    m = MODULE.search(files.get("go.mod", ""))
    return m.group(1).strip('"') if m else ""


def node_ids(stream: str, files: dict[str, str], tests: dict[str, str]) -> tuple[TestOutcome, ...]:
    """The outcomes of ``stream`` named ``<test file>::<TestName>``: the package's import path is
    mapped to its folder through ``go.mod``'s module path, then to the file among ``tests`` in that
    folder that declares the test (``<folder>/?::<TestName>`` when none does)."""
    module = module_path(files)
    where: dict[tuple[str, str], str] = {}
    for path, text in sorted(tests.items()):
        for name in go_test_functions(text):
            where.setdefault((posixpath.dirname(path), name), path)
    out = []
    for pkg, test, outcome, message in go_events(stream, top_level_only=True):
        folder = "" if pkg == module else pkg[len(module) + 1:] if module and pkg.startswith(module + "/") else pkg
        path = where.get((folder, test), posixpath.join(folder, "?"))
        out.append(TestOutcome(name=f"{path}::{test}", outcome=outcome, message=message))
    return tuple(out)


def failure_output(stdout: str, node_id: str, limit: int = 2000) -> str:
    """What a ``-test.v`` run printed for the test of ``node_id`` (``<file>::TestName``), from its
    ``=== RUN`` line to its ``--- FAIL`` line (at most ``limit`` characters; '' when absent). The
    binary's own output: a message for people, never a verdict."""
    test = node_id.rpartition("::")[2]
    start = stdout.find(f"=== RUN   {test}\n")
    if start < 0:
        return ""
    end = stdout.find(f"--- FAIL: {test} ", start)
    end = stdout.find("\n", end) if end >= 0 else -1
    return stdout[start:end if end >= 0 else len(stdout)][-limit:]
