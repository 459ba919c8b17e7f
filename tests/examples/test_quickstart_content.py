"""The quickstart's content: the acme_ledger package, its test suite and the seeded feedback.

Checks that make the demo meaningful: the package's own suite passes; every public function
is the target of at least three tests, each test exercising one function; the tests catch
bodies that break the house conventions or ignore their input; the feedback seed is
deterministic, has the documented table and edge cases (CASES F1-F4), and names no
function of the package (no leakage into held-out tasks).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sqlite3
import subprocess
import sys
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

QS = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
PKG = QS / "acme_ledger"
COLUMNS = [("id", "INTEGER"), ("conversation_id", "TEXT"), ("message_id", "TEXT"), ("user_id", "TEXT"),
           ("created_at", "TEXT"), ("app", "TEXT"), ("prompt", "TEXT"), ("response", "TEXT"),
           ("rating", "INTEGER"), ("correction", "TEXT"), ("meta", "TEXT")]


def public_functions() -> dict[str, str]:
    """``function name -> module`` for every public top-level function outside core.py."""
    out = {}
    for path in sorted(PKG.glob("*.py")):
        if path.name in ("core.py", "__init__.py"):
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                assert node.name not in out, f"{node.name} defined twice"
                out[node.name] = path.stem
    return out


def all_package_names() -> set[str]:
    """Every function and class name defined anywhere in the package."""
    names = set()
    for path in PKG.glob("*.py"):
        names |= {n.name for n in ast.walk(ast.parse(path.read_text()))
                  if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    return names - {"__post_init__"}


def targets_of_tests() -> dict[str, str]:
    """``test function name -> the one package function it calls`` over the whole suite."""
    funcs = public_functions()
    out = {}
    for path in sorted((QS / "tests").glob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                called = {c.func.id for c in ast.walk(node)
                          if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
                assert not called & {"ok", "err"}, f"{node.name} calls core helpers"
                targets = called & set(funcs)
                assert len(targets) == 1, f"{path.name}::{node.name} exercises {sorted(targets)}, want one function"
                out[node.name] = targets.pop()
    return out


def test_package_suite_passes_in_subprocess():
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"],
                          cwd=QS, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    passed = re.search(r"(\d+) passed", proc.stdout)
    assert passed and int(passed.group(1)) == len(targets_of_tests())


def test_package_shape_and_every_function_has_three_tests():
    funcs = public_functions()
    assert 120 <= len(funcs) <= 140, "issue 15 grew the package to 130 functions"
    assert 5 <= len(set(funcs.values())) <= 12
    per_function = Counter(targets_of_tests().values())
    thin = {f: per_function.get(f, 0) for f in funcs if per_function.get(f, 0) < 3}
    assert not thin, f"functions with fewer than 3 tests: {thin}"


def test_every_public_function_returns_result_via_ok_or_err():
    for path in sorted(PKG.glob("*.py")):
        if path.name in ("core.py", "__init__.py"):
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef):
                returns = [n.value for n in ast.walk(node) if isinstance(n, ast.Return)]
                assert returns and all(isinstance(v, ast.Call) and getattr(v.func, "id", "") in ("ok", "err")
                                       for v in returns), f"{node.name} returns something other than ok()/err()"
                assert ast.unparse(node.returns) == "Result" and ast.get_docstring(node), node.name
                assert len(node.body) <= 8, f"{node.name} is not small"


@pytest.fixture(scope="module")
def suite():
    """The quickstart's test modules imported in-process: ``[(module, test name, target)]``."""
    sys.path.insert(0, str(QS))
    try:
        targets = targets_of_tests()
        cases = []
        for path in sorted((QS / "tests").glob("test_*.py")):
            spec = importlib.util.spec_from_file_location(f"_qs_{path.stem}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            cases += [(module, name, targets[name]) for name in dir(module) if name in targets]
        yield cases
    finally:
        sys.path.remove(str(QS))


def _fails(module, test_name: str, target: str, stub) -> bool:
    real = getattr(module, target)
    setattr(module, target, stub(real))
    try:
        getattr(module, test_name)()
    except Exception:  # an assertion, or a crash because the stub returned the wrong shape
        return True
    finally:
        setattr(module, target, real)
    return False


@pytest.mark.parametrize("mutant", ["bare_value", "ok_none"])
def test_every_test_fails_on_a_body_that_breaks_the_conventions(suite, mutant):
    from acme_ledger.core import ok

    stubs = {"bare_value": lambda real: (lambda *a, **k: real(*a, **k).value),
             "ok_none": lambda real: (lambda *a, **k: ok(None))}
    survivors = [name for module, name, target in suite if not _fails(module, name, target, stubs[mutant])]
    assert not survivors, f"tests that pass with a {mutant} body: {survivors}"


def test_no_function_passes_its_tests_with_a_constant(suite):
    seen = defaultdict(list)
    for module, name, target in suite:
        real = getattr(module, target)

        def spy(*a, _real=real, _target=target, **k):
            result = _real(*a, **k)
            seen[_target].append(repr(result))
            return result

        setattr(module, target, spy)
        try:
            getattr(module, name)()
        finally:
            setattr(module, target, real)
    constant = [f for f, results in seen.items() if len(set(results)) < 2]
    assert not constant, f"all tests of these functions expect the same result: {constant}"


# ---------------------------------------------------------------- the feedback seed


def _seed(path: Path, *extra: str) -> list[dict]:
    proc = subprocess.run([sys.executable, str(QS / "seed_feedback.py"), str(path), *extra],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(path) as con:
        con.row_factory = sqlite3.Row
        rows = [dict(r) for r in con.execute("SELECT * FROM chat_feedback ORDER BY id")]
    con.close()
    return rows


@pytest.fixture(scope="module")
def feedback(tmp_path_factory) -> list[dict]:
    return _seed(tmp_path_factory.mktemp("fb") / "feedback.db")


def _utc(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _latest(rows: list[dict]) -> list[dict]:
    """One row per (message, user): the latest event wins (CASES F1)."""
    last: dict[tuple[str, str], dict] = {}
    for row in sorted(rows, key=lambda r: (_utc(r["created_at"]), r["id"])):
        last[(row["message_id"], row["user_id"])] = row
    return list(last.values())


def test_seed_is_deterministic_and_overwrites(tmp_path, feedback):
    path = tmp_path / "again.db"
    path.write_bytes(b"not a database")
    assert _seed(path) == feedback


def test_seed_with_repo_context_changes_only_the_ide_prompts(tmp_path, feedback):
    """``--repo-context`` (an arm whose task set turns context on): the same rows, the IDE-style prompts
    with the "From the repository" block; every other prompt and column as seeded without it."""
    if any("From the repository" in r["prompt"] for r in feedback):
        pytest.skip("config.yaml turns repository context on: the default seed already shows it")
    shown = _seed(tmp_path / "ctx.db", "--repo-context", "{enabled: true, token_budget: 150, examples: false}")
    assert len(shown) == len(feedback)
    changed = [(a, b) for a, b in zip(feedback, shown) if a["prompt"] != b["prompt"]]
    assert len(changed) == sum(r["prompt"].startswith("Write the function") for r in feedback) > 0
    assert all("From the repository" in b["prompt"] and b["prompt"].startswith(a["prompt"].split("\n")[0])
               for a, b in changed)
    assert [{**a, "prompt": ""} for a in feedback] == [{**b, "prompt": ""} for b in shown]


def test_seeded_table_has_the_documented_columns(feedback, tmp_path):
    path = tmp_path / "schema.db"
    _seed(path)
    with sqlite3.connect(path) as con:
        info = con.execute("PRAGMA table_info(chat_feedback)").fetchall()
    con.close()
    assert [(r[1], r[2]) for r in info] == COLUMNS
    assert 150 <= len(feedback) <= 250


def test_feedback_names_no_function_of_the_package(feedback):
    names = set(public_functions())  # the task targets; core names (ok, Money...) are meant to appear
    pattern = re.compile(r"\b(" + "|".join(sorted(names, key=len, reverse=True)) + r")\b")
    leaks = {(r["id"], m) for r in feedback for field in ("prompt", "response", "correction")
             for m in pattern.findall(r[field] or "")}
    assert not leaks, f"feedback mentions package names: {sorted(leaks)[:10]}"
    defined = {d for r in feedback for field in ("response", "correction")
               for d in re.findall(r"def (\w+)\(", r[field] or "")}
    assert len(defined) >= 40 and not defined & all_package_names()


class _Rename(ast.NodeTransformer):
    """Variable names out, everything else (attributes, constants, calls' shape) kept."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(id="_", ctx=node.ctx), node)


def _logic(fn: ast.FunctionDef) -> str:
    return ast.dump(ast.Module(body=[_Rename().visit(s) for s in fn.body[1:]], type_ignores=[]))


def test_no_feedback_function_is_a_renamed_copy_of_a_package_function(feedback):
    package = {}
    for path in PKG.glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name in public_functions():
                package[_logic(node)] = node.name
    copies = set()
    for row in feedback:
        for text in (row["response"], row["correction"]):
            for code in re.findall(r"```python\n(.*?)```", text or "", re.S):
                fn = ast.parse(code).body[0]
                if isinstance(fn, ast.FunctionDef) and _logic(fn) in package:
                    copies.add((fn.name, package[_logic(fn)]))
    assert not copies, f"feedback helpers with the logic of package functions: {sorted(copies)}"


def test_feedback_kinds_teach_the_conventions(feedback):
    ledger = [r for r in _latest(feedback) if r["app"] == "ledger-assistant"]
    fixed = [r for r in ledger if r["rating"] == -1 and r["correction"]]
    liked = [r for r in ledger if r["rating"] == 1]
    assert len(fixed) >= 40 and len(liked) >= 40
    assert any(r["rating"] is None for r in ledger)
    assert any(r["rating"] == -1 and not r["correction"] for r in ledger)
    for row in fixed:
        assert "ok(" not in row["response"] and "return ok(" in row["correction"]
    for row in liked:
        assert "return ok(" in row["response"], row["id"]
    for text in [r["correction"] for r in fixed] + [r["response"] for r in liked]:
        code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
        tree = ast.parse(code)
        assert len(tree.body) == 1 and isinstance(tree.body[0], ast.FunctionDef)
        assert not any(isinstance(n, ast.Raise) for n in ast.walk(tree))
    assert {r["app"] for r in feedback} == {"ledger-assistant", "hr-helpdesk"}


def test_feedback_has_double_clicks_and_changed_minds(feedback):
    groups = defaultdict(list)
    for row in feedback:
        groups[(row["message_id"], row["user_id"])].append(row)
    repeated = [sorted(g, key=lambda r: _utc(r["created_at"])) for g in groups.values() if len(g) > 1]
    double = [g for g in repeated if g[0]["rating"] == g[1]["rating"]
              and (_utc(g[1]["created_at"]) - _utc(g[0]["created_at"])).total_seconds() < 1]
    changed = [g for g in repeated if len({r["rating"] for r in g}) > 1]
    assert len(double) >= 5 and len(changed) >= 4
    # a naive answer first liked, then corrected: only the latest event may be trusted
    assert any(g[0]["rating"] == 1 and g[-1]["rating"] == -1 and g[-1]["correction"] for g in changed)
    assert len(_latest(feedback)) == len(groups) < len(feedback)


def test_feedback_timestamps_mix_time_zones(feedback):
    styles = Counter("+00:00" if t.endswith("+00:00") else "-03:00" if t.endswith("-03:00")
                     else "Z" if t.endswith("Z") else "naive" for t in (r["created_at"] for r in feedback))
    assert set(styles) == {"+00:00", "-03:00", "Z", "naive"} and min(styles.values()) >= 10
    moments = [_utc(r["created_at"]) for r in feedback]
    assert moments == sorted(moments), "ids follow the instant of the event"


def test_feedback_has_personal_data_and_nested_ratings(feedback):
    prompts = "\n".join(r["prompt"] for r in feedback)
    assert re.search(r"[\w.]+@example\.(com|org|net)", prompts)
    assert "%40example.com" in prompts
    assert re.search(r"\(555\) 010-\d{4}", prompts) and "+44 20 7946 0958" in prompts
    assert re.search(r"\b000-12-3456\b", prompts)
    metas = [json.loads(r["meta"]) for r in feedback]
    nested = [(m, r) for m, r in zip(metas, feedback) if "details" in m]
    assert len(nested) >= 10
    assert all(m["rating"] == r["rating"] and 0 <= m["details"]["rating"] <= 10 for m, r in nested)
    assert any("rating" in m and m["rating"] is None for m in metas)


@pytest.mark.parametrize("context", [None, {"enabled": True, "token_budget": 150, "examples": False}],
                         ids=["config", "context_on"])
def test_ide_style_feedback_prompts_match_the_task_prompt_format(context, monkeypatch):
    """Train and evaluation prompts must share one format (shared/DESIGN.md): the seed's IDE
    template must render a package function exactly as the pytest connector's task prompt, with
    config.yaml's repository-context setting and with context on (the "From the repository" block)."""
    pytest.importorskip("connectors.suites.pytest_suite")
    from connectors.suites.pytest_suite import PytestSuiteSource

    sys.path.insert(0, str(QS))
    try:
        import seed_feedback
    finally:
        sys.path.remove(str(QS))
    options = next(s["options"] for s in yaml.safe_load((QS / "config.yaml").read_text())["sources"] if s["type"] == "pytest")
    if context is not None:
        options = {**options, "repo_context": context}
        monkeypatch.setattr(seed_feedback, "repo_context", lambda: seed_feedback.build_repo_context(context))
    result = PytestSuiteSource(options, QS, "acme").read()
    assert len(result.tasks) == len(public_functions()) and not result.quarantined
    by_name = {t.verifier.entry_point: t for t in result.tasks}
    cases = [("money", "add_cents", "a: Money, b: Money", "Sum of two amounts."),
             ("dates", "add_days", "d: date, n: int", "The date n days after d; NEGATIVE if n < 0.")]
    for module, name, params, doc in cases:
        assert seed_feedback.ide_prompt(module, name, params, doc, by_name[name].reference) == by_name[name].prompt[-1].content
    shown = "From the repository" in by_name["add_cents"].prompt[-1].content
    assert shown == (context is not None or seed_feedback.repo_context() is not None), "the case tests what it names"


def _jsonl(name: str) -> list[dict]:
    return [json.loads(line) for line in (QS / name).read_text().splitlines() if line.strip()]


def test_replay_pool_is_train_only_and_shares_nothing_with_the_ood_split():
    """general.jsonl feeds self-distillation (the base model's own verified answers), so it must be a
    train source and must not repeat an OOD task: no shared function name, description or test."""
    sources = yaml.safe_load((QS / "config.yaml").read_text())["sources"]
    pool = next(s for s in sources if s.get("options", {}).get("path") == "general.jsonl")
    assert pool["split"] == "train"
    general, basics = _jsonl("general.jsonl"), _jsonl("basics.jsonl")
    name = lambda row: row["code"].split("(")[0].removeprefix("def ")  # noqa: E731
    assert not {name(r) for r in general} & {name(r) for r in basics}
    assert not {r["text"] for r in general} & {r["text"] for r in basics}
    assert not {t for r in general for t in r["test_list"]} & {t for r in basics for t in r["test_list"]}
    for row in general:  # every reference passes its own tests
        scope: dict = {}
        exec(row["code"], scope)  # noqa: S102 - our own fixture file
        for test in row["test_list"]:
            exec(test, scope)  # noqa: S102
