"""Go repositories as candidates (framework ``go_repo``; change tasks, issue 17).

A Go change task's candidate is a whole module: ``go test -json -count=1 -p=1 -vet=off ./...``
runs in the sandbox over the patched source and the task's pristine ``_test.go`` files (only
those: the repository's other test files are not written; vet is off: the tests decide, and vet
costs about 4 s a run with a fresh build cache, measured here). Each top-level test is named like
a pytest node id, ``<test file>::<TestName>`` (the file of the test's package that declares it),
so the fail-to-pass / pass-to-pass logic shared with Python (``connectors.history``,
``sdk.rewards.change``) works on these names unchanged; subtests are part of their parent test.

A package whose tests do not build gives no test of that package (the others still run): the run
is ``failed`` with the build errors in its detail, or ``compile_error`` when no test ran at all.

Verdicts (what is and is not out of the candidate's reach): the outcomes are parsed from the
``go test -json`` stream, which the go command derives from the test binary's own standard
output. The candidate's code is linked into that binary, and its ``init`` functions run before
any test (and before anything of ours could): it can replace ``os.Stdout`` and rewrite
``--- FAIL`` into ``--- PASS``, print events of its own, or leave early. A nonce read before the
candidate runs (as ``tl_test.h`` and ``TlJUnit`` do for C and Java) is not possible in a Go test
binary: package initialisers of the candidate always run first and could read it. Not covered:
forged Go outcomes (a strict xfail in ``tests/connectors/test_git_history_go.py`` records it);
what is covered: the tests and the ``go.mod`` toolchain settings are the task's, no network, a
fresh ``GOCACHE``/``GOPATH`` in the run's scratch space, every declared test counted once.
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
