"""The agent's tools for a change task: read, search, list, edit, run the visible tests (issue 17).

Each rollout gets a :class:`ChangeToolBox` over its own :class:`~sdk.rollout.workspace.Workspace`
(an in-memory scratch copy of the repository at the parent commit). The file tools never touch
the host; paths are confined by :func:`~sdk.rollout.workspace.clean_path`. A refused path, a
missing file or an ``old_text`` that does not match is a :class:`~sdk.rollout.errors.ToolError`,
which the :class:`~sdk.rollout.tools.ToolBox` answers to the model as ``error: ...`` (the rollout
goes on, field case T3).

Which tests the agent may run (``run_tests``): the task's **pass-to-pass** tests only, the
regression suite an engineer would run before and after a change. The **fail-to-pass** tests
decide the reward and stay hidden: before the run, every fail-to-pass test function is cut out
of the commit's test modules (:func:`visible_tests`, by the Python AST; a module that no longer
parses is left out), so their code never reaches the agent's run and their outcomes are never
reported. The answer lists each pass-to-pass test's outcome and, for a failure, the first
``MESSAGE_CHARS`` of its message. Not hidden: the rest of those modules (imports, fixtures,
helpers the commit added); a failing pass-to-pass test's message could echo them. Go change tasks
get the same logic on ``_test.go`` files (:mod:`sdk.rollout.go_visible`: whole packages, hidden
test functions cut, imports left unused made blank), one run of every visible package; a change
the Go reward would refuse before running (``unsafe``, ``reflect``, ... in a changed file) is
answered with the reason instead of being run. The run goes through the sandbox
(:func:`sdk.rewards.change.run_request`, framework ``pytest_repo`` or ``go_repo``), never in this
process.

:meth:`ChangeToolBox.final` hands the rollout's change (the workspace's diff against the parent)
to the episode's trace as ``change``, with ``changed_files``; :mod:`sdk.rollout.change_agent`
scores it with the change reward.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

from sdk.rollout.errors import ToolError
from sdk.rollout.tools import Tool, ToolBox, as_tool
from sdk.rollout.workspace import Workspace
from sdk.tasks.change import ChangeVerifier, module_groups
from sdk.types import Language

TOOL_NAMES = ("read_file", "search", "list_dir", "edit_file", "run_tests")
MESSAGE_CHARS = 300
READ_LINES = 400  # lines one read_file answer shows at most


def _key(node_id: str) -> tuple[str, str]:
    path, _, rest = node_id.partition("::")
    return path, re.sub(r"\[.*\]$", "", rest).replace("::", ".")


def _cut_functions(text: str, names: set[str]) -> str | None:
    """``text`` with the test functions ``names`` (``test_x``, ``TestC.test_y``) blanked out,
    decorators included; None when the result does not parse (e.g. a class left empty)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    lines = text.splitlines(keepends=True)
    spans = []
    for node in tree.body:
        subs = [(node.name, node)] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
        if isinstance(node, ast.ClassDef):
            subs = [(f"{node.name}.{s.name}", s) for s in node.body
                    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for name, fn in subs:
            if name in names:
                first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
                spans.append((first - 1, fn.end_lineno or fn.lineno))
    for a, b in spans:
        for k in range(a, b):
            lines[k] = "\n"
    out = "".join(lines)
    try:
        ast.parse(out)
    except SyntaxError:
        return None
    return out


def visible_tests(verifier: ChangeVerifier) -> tuple[dict[str, str], tuple[str, ...]]:
    """``(test modules, pass-to-pass ids)`` the agent's ``run_tests`` may run: the modules holding
    pass-to-pass tests with every fail-to-pass test function cut out (see the module docstring),
    and the pass-to-pass ids left in them. Go: :func:`sdk.rollout.go_visible.visible_go_tests`."""
    if verifier.language == Language.GO:
        from sdk.rollout.go_visible import visible_go_tests

        return visible_go_tests(verifier)
    if verifier.language != Language.PYTHON:
        return {}, ()
    hidden: dict[str, set[str]] = {}
    for t in verifier.fail_to_pass:
        path, name = _key(t)
        hidden.setdefault(path, set()).add(name)
    modules: dict[str, str] = {}
    for path in sorted({t.split("::")[0] for t in verifier.pass_to_pass}):
        text = verifier.tests[path]
        cut = _cut_functions(text, hidden[path]) if path in hidden else text
        if cut is not None:
            modules[path] = cut
    ids = tuple(t for t in verifier.pass_to_pass if t.split("::")[0] in modules
                and _key(t)[1] not in hidden.get(t.split("::")[0], set()))
    return modules, ids


def short_message(message: str) -> str:
    """A failure message on one line: pytest's ``E`` lines (else all lines) joined, cut to ``MESSAGE_CHARS``."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    errors = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    return " | ".join(errors or lines)[:MESSAGE_CHARS]


class TestRunner:
    """Runs the visible pass-to-pass tests against a workspace in the sandbox.

    Args:
        sandbox: a :class:`~sdk.sandbox.contract.Sandbox` (the run's own).
        limits: base resource limits (``timeout_s`` comes from the verifier).
    """

    __test__ = False  # not a pytest class

    def __init__(self, sandbox, limits=None) -> None:
        self.sandbox = sandbox
        self.limits = limits
        self.runs = 0

    def __call__(self, ws: Workspace) -> str:
        """The answer of one ``run_tests`` call (see the module docstring)."""
        from sdk.rewards.change import outcomes, run_request, tampering

        modules, ids = visible_tests(ws.verifier)
        if not ids:
            return "no tests are available to run for this task; read the code and make the change"
        go = ws.verifier.language == Language.GO
        refused = tampering(ws.verifier, ws.files) if go else []
        if refused:
            return ("error: your change would be refused without running any test: "
                    + "; ".join(f"{p}: {why}" for _, (p, why) in refused))
        shown = ws.verifier.model_copy(update={"tests": modules})
        groups = [sorted(modules)] if go else module_groups(sorted(modules))
        results = self.sandbox.run([run_request(shown, ws.files, g, self.limits) for g in groups])
        self.runs += 1
        lines, passed = [], 0
        for group, res in zip(groups, results):
            mine = tuple(t for t in ids if t.split("::")[0] in set(group))
            if res.status.is_infrastructure:
                return f"error: the test run failed for a reason outside your change ({res.status.value}); try again"
            got = outcomes(res, mine)
            messages = {t.name: t.message for t in res.tests}
            for t in mine:
                passed += got[t]
                note = "" if got[t] else f": {short_message(messages.get(t) or res.status.value)}"
                lines.append(f"{'PASSED' if got[t] else 'FAILED'} {t}{note}")
        head = f"{passed}/{len(ids)} pass-to-pass tests pass (the tests that decide the task are hidden)"
        return "\n".join([head, *lines])


def check_names(names: Sequence[str]) -> None:
    """Raises :class:`ToolError` when ``names`` holds a name that is not a change-agent tool."""
    unknown = [n for n in names if n not in TOOL_NAMES]
    if unknown:
        raise ToolError(f"unknown change-agent tool(s) {unknown}", f"choose from {', '.join(TOOL_NAMES)}")


def workspace_tools(ws: Workspace, runner: TestRunner | None, names: Sequence[str] = TOOL_NAMES) -> list[Tool]:
    """The named tools over ``ws`` (``run_tests`` needs ``runner``).

    Raises:
        ToolError: an unknown tool name, or ``run_tests`` without a runner.
    """
    check_names(names)

    def read_file(path: str, start_line: int = 1, end_line: int = 0) -> str:
        """Read a file of the repository.

        Args:
            path: file path relative to the repository root.
            start_line: first line to show (1-based).
            end_line: last line to show; 0 for the end of the file.
        """
        lines = ws.read(path).splitlines()
        end = min(len(lines), end_line or len(lines), max(start_line, 1) + READ_LINES - 1)
        start = max(start_line, 1)
        return f"{path} (lines {start}-{end} of {len(lines)})\n" + "\n".join(lines[start - 1: end])

    def search(text: str, path: str = ".") -> str:
        """Find the lines that contain a piece of text (literal, case-sensitive).

        Args:
            text: the text to look for.
            path: a file or folder to search in; "." for the whole repository.
        """
        hits = ws.search(text, path)
        return "\n".join(hits) if hits else f"no line contains {text!r}"

    def list_dir(path: str = ".") -> str:
        """List a folder of the repository (folders end with /).

        Args:
            path: folder path relative to the repository root; "." for the top level.
        """
        return "\n".join(ws.listdir(path)) or "(empty)"

    def edit_file(path: str, new_text: str, old_text: str = "") -> str:
        """Change a source file: replace old_text (which must occur exactly once) by new_text, or,
        with old_text empty, write new_text as the whole file (creating it if needed).

        Args:
            path: file path relative to the repository root.
            new_text: the replacement text, or the whole new file.
            old_text: the exact text to replace; empty to write the whole file.
        """
        p = ws.replace(path, old_text, new_text) if old_text else ws.write(path, new_text)
        return f"edited {p} ({len(ws.changed())} file(s) changed so far)"

    def run_tests() -> str:
        """Run the repository's visible regression (pass-to-pass) tests against your changes."""
        if runner is None:
            raise ToolError("run_tests has no sandbox here", "pass a TestRunner")
        return runner(ws)

    made = {f.__name__: f for f in (read_file, search, list_dir, edit_file, run_tests)}
    return [_tool(made[n]) for n in names]


def _tool(func) -> Tool:
    spec = as_tool(func)
    return Tool(name=spec.name, description=spec.description, parameters=spec.parameters, func=func,
                untrusted=spec.name == "run_tests")


class ChangeToolBox(ToolBox):
    """A :class:`ToolBox` over one rollout's workspace; :meth:`final` reports the change.

    Args:
        verifier: the task's change verifier (its files are copied into a fresh workspace).
        runner: runs ``run_tests`` in the sandbox (None: that tool is not offered).
        names: the tools offered, in order.
        max_calls, max_result_chars: as :class:`ToolBox`.
    """

    def __init__(self, verifier: ChangeVerifier, runner: TestRunner | None, names: Sequence[str] = TOOL_NAMES,
                 max_calls: int = 8, max_result_chars: int = 2000) -> None:
        self.workspace = Workspace(verifier)
        names = [n for n in names if n != "run_tests" or runner is not None]
        super().__init__(workspace_tools(self.workspace, runner, names), max_calls, max_result_chars)

    def final(self) -> dict[str, Any]:
        """``{"change": unified diff ("" when nothing changed), "changed_files": [...]}``."""
        return {"change": self.workspace.diff(), "changed_files": self.workspace.changed()}
