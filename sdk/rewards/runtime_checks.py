"""Runtime integrity checks, on the sandbox's result against the *pristine* test files.

The verdict comes only from per-test results that our runner reports through a nonce-tagged
channel (see ``sdk.sandbox``). Here: a missing result, "no tests collected", a result for a
test the files do not define, or a process that exited 0 before every test reported is a
failure and a flag; every visible test passing while every hidden test fails is the
hard-coding signal. The static detectors and :class:`Finding` live in
:mod:`sdk.rewards.integrity`. Field case R3.
"""

from __future__ import annotations

import ast
import re

from sdk.rewards.integrity import Finding
from sdk.sandbox.contract import ExecResult, ExecStatus
from sdk.types import Framework

_COLLECT_FAIL = re.compile(r"ImportError|ModuleNotFoundError|no tests ran|collected 0 items|no tests were collected",
                           re.IGNORECASE)


_NODE_CALL = re.compile(r"(?<![\w.$])(?:test|it)\s*\(")
_NODE_NAMED = re.compile(r"(?<![\w.$])(?:test|it)\s*\(\s*(['\"])((?:\\.|(?!\1).)*)\1")


_DECLARED = {  # test declarations of the compiled-language runners (see sdk.sandbox.languages)
    Framework.TLTEST: re.compile(r"\bTL_TEST\s*\(\s*(\w+)\s*\)"),
    Framework.GO: re.compile(r"^func\s+(Test\w*)\s*\(\s*\w+\s+\*testing\.T\s*\)", re.MULTILINE),
    Framework.RUST: re.compile(r"#\[test\]\s*(?:#\[[^\]]*\]\s*)*(?:pub\s+)?fn\s+(\w+)"),
    Framework.JUNIT: re.compile(r"@Test\b[^;{]*?\b(?:void)\s+(\w+)\s*\("),
}


def expected_test_names(tests: dict[str, str], framework: Framework | str) -> set[str] | None:
    """Names of the tests the pristine files define; ``None`` when they cannot be known.

    ``pytest``: functions ``test*`` at top level and methods ``test*`` of classes. ``node``
    (``node --test``): the literal names of ``test('…')``/``it('…')`` calls (``None`` if any
    name is computed). ``script``: the single ``check``. ``tltest`` (C/C++), ``go``, ``rust``,
    ``junit``: names declared by ``TL_TEST(name)``, ``func TestX(t *testing.T)``, ``#[test] fn``,
    ``@Test void name(``. Other frameworks: ``None``.
    """
    if framework == Framework.SCRIPT:
        return {"check"}
    pattern = _DECLARED.get(framework)
    if pattern is not None:
        names = {m.group(1) for src in tests.values() for m in pattern.finditer(src)}
        return names or None
    if framework == Framework.NODE:
        names: set[str] = set()
        for src in tests.values():
            named = [m.group(2) for m in _NODE_NAMED.finditer(src)]
            if len(named) != len(_NODE_CALL.findall(src)):
                return None
            names.update(named)
        return names or None
    if framework != Framework.PYTEST:
        return None
    names = set()
    for src in tests.values():
        try:
            tree = ast.parse(src)
        except SyntaxError:
            return None
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                names.add(node.name)
            elif isinstance(node, ast.ClassDef):
                names.update(m.name for m in node.body
                             if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test"))
    return names or None


def base_test_name(name: str) -> str:
    """``tests/test_a.py::TestX::test_y[3]`` -> ``test_y``; ``JUnit Jupiter/AddTest/ok()`` ->
    ``ok``; ``tests::ok`` -> ``ok``. Applied to expected and reported names alike."""
    return re.sub(r"\[.*\]$", "", name.split("::")[-1]).removesuffix("()").rsplit("/", 1)[-1]


def check_results(result: ExecResult, expected: set[str] | None, check_forged: bool = True) -> list[Finding]:
    """Runtime detectors for one sandbox run of tests against a parsed solution.

    Args:
        result: the sandbox's result.
        expected: test names from :func:`expected_test_names` (``None``: only count results).
        check_forged: also flag results for names the files do not define (exact for pytest;
            off where runners add suite-level entries, e.g. ``node --test``).
    Returns:
        findings: ``collection_failed`` (no result at all and the output shows an import or
        collection failure, or exit code 0/5), ``missing_test_results`` (some expected test has
        no result), ``forged_results`` (a result for a test the files do not define), and
        ``exit_trick`` (exit code 0 while a test failed or is missing).
    """
    if result.status.is_infrastructure or result.status in (
            ExecStatus.TIMEOUT, ExecStatus.MEMORY_LIMIT, ExecStatus.OUTPUT_LIMIT, ExecStatus.COMPILE_ERROR):
        return []
    found: list[Finding] = []
    reported = {base_test_name(t.name) for t in result.tests}
    expected = {base_test_name(n) for n in expected} if expected else expected
    output = f"{result.stdout}\n{result.stderr}\n{result.detail}"
    if not result.tests:
        if _COLLECT_FAIL.search(output) or result.exit_code == 5:
            found.append(Finding(flag="collection_failed", detail=f"no test results: {result.detail[:200]}"))
        elif result.exit_code == 0 and result.status == ExecStatus.FAILED:
            found.append(Finding(flag="exit_trick", detail="the process exited 0 without reporting any test"))
        return found
    if expected:
        missing = expected - reported
        if missing:
            found.append(Finding(flag="missing_test_results", metric=len(missing) / len(expected),
                                 detail="no result for " + ", ".join(sorted(missing)[:5])))
            if result.exit_code == 0:
                found.append(Finding(flag="exit_trick", detail="the process exited 0 before every test reported"))
        forged = reported - expected if check_forged else set()
        if forged:
            found.append(Finding(flag="forged_results", metric=len(forged),
                                 detail="results for unknown tests " + ", ".join(sorted(forged)[:5])))
    return found


def hidden_gap(visible_frac: float, hidden_frac: float) -> list[Finding]:
    """Hard-coding signal: every visible test passes and every hidden test fails."""
    if visible_frac >= 1.0 and hidden_frac <= 0.0:
        return [Finding(flag="hardcoded_outputs", metric=visible_frac - hidden_frac,
                        detail="visible tests pass, hidden tests all fail")]
    return []
