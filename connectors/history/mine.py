"""Which tests decide a commit: run the commit's tests at the parent and at the commit, in the sandbox.

For one commit (parent ``P``, commit ``C``), the commit's test modules (those it touched, plus
related ones up to a budget) run against ``P``'s source and against ``C``'s source, each
``1 + reruns`` times, every run in the sandbox (:mod:`sdk.sandbox`, the same harness the reward
uses). The test-side support files (conftest, helpers, data) are ``C``'s in both states, as
the tests are.

- **fail-to-pass**: tests the commit added or changed (their function's source differs from
  ``P``'s, or is new) that pass in every run at ``C`` and pass in no run at ``P`` (a module that
  cannot even be collected at ``P``, because it imports what the commit adds, fails its tests);
- **pass-to-pass**: tests that pass in every run at both;
- **flaky**: tests whose outcome differs between runs of one state: neither of the above.

pytest stops a whole session at one collection error, so a state whose run fails at collection
is run again one module per request; a module that does not collect at ``C`` gives no tests.
Go (``go_repo``): all the test files run together (a package builds with all of its test files;
``go test`` goes on past a package that does not build, whose tests are then missing); test ids
are ``<file>_test.go::TestName`` and a test "changed" when its function's source did.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field

from sdk.sandbox.contract import ExecRequest, ExecResult, ExecStatus, Limits, Sandbox
from sdk.sandbox.languages.gorepo import go_test_functions
from sdk.tasks.change import module_groups
from sdk.types import Framework, Language

_BROKEN = (ExecStatus.TIMEOUT, ExecStatus.MEMORY_LIMIT, ExecStatus.OUTPUT_LIMIT, ExecStatus.SANDBOX_ERROR,
           ExecStatus.TOOLCHAIN_UNAVAILABLE)
CANDIDATE = "_tl_change.py"


@dataclass
class StateRuns:
    """The runs of one state: per run ``node id -> outcome``; modules that did not collect
    (``path -> error``); ``failure``: why the state could not run at all (None when it could)."""

    runs: list[dict[str, str]] = field(default_factory=list)
    uncollected: dict[str, str] = field(default_factory=dict)
    failure: str | None = None

    def passed_always(self) -> set[str]:
        """Ids that passed in every run."""
        if not self.runs:
            return set()
        return set.intersection(*({i for i, o in r.items() if o == "passed"} for r in self.runs))

    def passed_ever(self) -> set[str]:
        """Ids that passed in at least one run."""
        return {i for r in self.runs for i, o in r.items() if o == "passed"}

    def flaky(self) -> set[str]:
        """Ids whose outcome (missing included) differs between runs."""
        ids = {i for r in self.runs for i in r}
        return {i for i in ids if len({r.get(i, "missing") for r in self.runs}) > 1}


@dataclass
class Discovery:
    """What decides one commit: fail-to-pass and pass-to-pass ids, flaky ids, and the two states."""

    fail_to_pass: list[str]
    pass_to_pass: list[str]
    flaky: list[str]
    changed: set[str]
    parent: StateRuns
    commit: StateRuns


def request(files: dict[str, str], tests: dict[str, str], limits: Limits, requirements: tuple[str, ...] = (),
            target: str = CANDIDATE, language: Language = Language.PYTHON) -> ExecRequest:
    """A run of ``tests`` against ``files`` with an empty candidate file at ``target``, in the
    sandbox's whole-repository mode (``pytest_repo``, Go: ``go_repo``), the mode the change reward
    runs in."""
    framework = Framework.GO_REPO if language == Language.GO else Framework.PYTEST_REPO
    return ExecRequest(language=language, framework=framework, solution="", tests=tests, files=files,
                       target_path=target, limits=limits, requirements=requirements)


def _run(sandbox: Sandbox, requests: list[ExecRequest]) -> list[ExecResult]:
    """``sandbox.run`` with one retry of infrastructure failures."""
    results = list(sandbox.run(requests))
    again = [i for i, r in enumerate(results) if r.status == ExecStatus.SANDBOX_ERROR]
    if again:
        for i, res in zip(again, sandbox.run([requests[i] for i in again])):
            results[i] = res
    return results


def _collect_failed(result: ExecResult) -> bool:
    return result.status == ExecStatus.COMPILE_ERROR or result.status == ExecStatus.FAILED and (result.detail.startswith("test collection failed")
                                                   or not result.tests)


def run_states(sandbox: Sandbox, states: list[dict[str, str]], tests: dict[str, str], runs: int, limits: Limits,
               requirements: tuple[str, ...] = (), target: str = CANDIDATE,
               language: Language = Language.PYTHON) -> list[StateRuns]:
    """Run ``tests`` against each source snapshot in ``states`` ``runs`` times (one batch, so the
    sandbox runs them concurrently; modules sharing a file name in separate runs, as the reward
    does: :func:`~sdk.tasks.change.module_groups`); a run that fails at collection is re-run one
    module per request (Go: one group, never split)."""
    go = language == Language.GO
    groups = [sorted(tests)] if go else module_groups(sorted(tests))
    first = _run(sandbox, [request(s, {p: tests[p] for p in g}, limits, requirements, target, language)
                           for s in states for _ in range(runs) for g in groups])
    per, out = runs * len(groups), []
    for k, state in enumerate(states):
        got = first[k * per:(k + 1) * per]
        runs_k = StateRuns(runs=[{} for _ in range(runs)])
        for gi, group in enumerate(groups):
            results = [got[n * len(groups) + gi] for n in range(runs)]
            if any(_collect_failed(r) for r in results) and len(group) > 1 and not go:
                _merge(runs_k, _per_module(sandbox, state, {p: tests[p] for p in group}, runs, limits,
                                           requirements, target))
                continue
            for n, r in enumerate(results):
                if r.status in _BROKEN:
                    runs_k.failure = f"{r.status.value}: {r.detail[:300]}"
                elif _collect_failed(r):
                    runs_k.uncollected.update({p: r.detail[-1500:] for p in group})
                runs_k.runs[n].update({t.name: t.outcome for t in r.tests})
        out.append(runs_k)
    return out


def _merge(into: StateRuns, part: StateRuns) -> None:
    for mine, theirs in zip(into.runs, part.runs):
        mine.update(theirs)
    into.uncollected.update(part.uncollected)
    into.failure = into.failure or part.failure


def _per_module(sandbox: Sandbox, state: dict[str, str], tests: dict[str, str], runs: int, limits: Limits,
                requirements: tuple[str, ...], target: str) -> StateRuns:
    paths = sorted(tests)
    results = _run(sandbox, [request(state, {p: tests[p]}, limits, requirements, target)
                             for _ in range(runs) for p in paths])
    out = StateRuns(runs=[{} for _ in range(runs)])
    for n in range(runs):
        for p, r in zip(paths, results[n * len(paths):(n + 1) * len(paths)]):
            if r.status in _BROKEN:
                out.failure = f"{r.status.value}: {r.detail[:300]}"
            elif _collect_failed(r):
                out.uncollected[p] = r.detail[-1500:]
            out.runs[n].update({t.name: t.outcome for t in r.tests})
    return out


def test_functions(text: str) -> dict[str, str]:
    """``qualified name -> source dump`` of the test functions of a module (``test_x``,
    ``TestC.test_y``); empty when the module does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            out[node.name] = ast.dump(node, include_attributes=False)
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name.startswith("test"):
                    out[f"{node.name}.{sub.name}"] = ast.dump(sub, include_attributes=False)
    return out


def function_key(node_id: str) -> tuple[str, str]:
    """``tests/t.py::TestC::test_m[1-2]`` -> ``("tests/t.py", "TestC.test_m")``."""
    path, _, rest = node_id.partition("::")
    return path, re.sub(r"\[.*\]$", "", rest).replace("::", ".")


def changed_tests(before: dict[str, str], after: dict[str, str]) -> set[tuple[str, str]]:
    """Test functions of ``after`` (``path -> text``) that are new or differ from ``before``."""
    out = set()
    for path, text in after.items():
        parse = go_test_functions if path.endswith(".go") else test_functions
        old = parse(before.get(path, ""))
        out |= {(path, q) for q, dump in parse(text).items() if old.get(q) != dump}
    return out


def discover(parent: StateRuns, commit: StateRuns, changed: set[tuple[str, str]], touched: set[str],
             max_pass_to_pass: int) -> Discovery:
    """Fail-to-pass, pass-to-pass (deterministic sample of at most ``max_pass_to_pass``, tests in
    the commit's ``touched`` modules first) and flaky ids from the two states' runs."""
    flaky = parent.flaky() | commit.flaky()
    at_commit = commit.passed_always() - flaky
    ids_changed = {i for i in at_commit if function_key(i) in changed}
    f2p = sorted(i for i in ids_changed if i not in parent.passed_ever())
    p2p = sorted(i for i in at_commit & parent.passed_always() if i not in f2p)
    p2p.sort(key=lambda i: (i.split("::")[0] not in touched, hashlib.sha256(i.encode()).hexdigest()))
    return Discovery(fail_to_pass=f2p, pass_to_pass=sorted(p2p[:max_pass_to_pass]), flaky=sorted(flaky),
                     changed={i for r in commit.runs for i in r if function_key(i) in changed},
                     parent=parent, commit=commit)
