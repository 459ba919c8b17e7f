"""Verifier strength: do a task's tests tell its reference apart from obviously wrong code?

After reference validation, each Python unit-test task's reference is mutated with ``ast`` and
every mutant is run against the task's visible *and* hidden tests in the same sandbox (one batch,
per-task requests side by side). A mutant is *killed* when at least one test fails on it (or it
does not run), *survives* when every test passes.

Two families (issue 13, item 3):

* **trivial mutants**: the entry point's body replaced by ``return None``, ``return <first
  argument>``, ``return <empty value>`` of the annotated return type and of the type the
  reference's own ``return`` statements build (``[]``, ``{}``, ``""``, ``0`` ...), a constant
  (``True``/``1``) and ``raise NotImplementedError``;
* **reference mutants** (at most ``max_reference_mutants`` per task, chosen deterministically from
  all sites): a flipped comparison (``<`` to ``>=``, ``==`` to ``!=`` ...), an integer constant
  off by one, a dropped ``if`` branch.

Mutants identical to the reference (after ``ast.unparse``) are never run: they cannot be killed.
The mutation score is ``killed / run`` over both families. A task is quarantined as
``weak_tests`` when a trivial mutant survives (``weak_if="any_trivial_survives"``, the default,
what "no validated task passes any trivial mutant" needs) or only when no trivial mutant is
killed (``weak_if="no_trivial_killed"``). Reference mutants only lower the score: a surviving
``x + 1`` may be an equivalent mutant, so it never quarantines a task on its own.

Why ``ast`` and not a mutation library: mutmut and cosmic-ray mutate files on disk and drive
their own test runner per mutant; here each mutant is a definition the sandbox splices into the
task's module exactly like a model's answer, and all mutants of all tasks run as one batch.

Other languages are not mutated: the task keeps ``mutation_score=None`` and
``metadata["mutants"]["skipped"]`` says why.
"""

from __future__ import annotations

import ast
import copy
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from sdk.sandbox.contract import Limits, Sandbox
from sdk.tasks.records import Language, Quarantined, Task, UnitTestVerifier
from sdk.tasks.validate import request_for, run_batched

WeakIf = Literal["any_trivial_survives", "no_trivial_killed"]
Mutant = tuple[str, str, str]  # (family "trivial" | "reference", kind, code)
_EMPTY = {"list": "[]", "List": "[]", "Sequence": "[]", "dict": "{}", "Dict": "{}", "Mapping": "{}",
          "str": "''", "bytes": "b''", "int": "0", "float": "0.0", "bool": "False", "tuple": "()",
          "Tuple": "()", "set": "set()", "Set": "set()", "frozenset": "frozenset()"}
_FLIP = {ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.Eq: ast.NotEq,
         ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


def _target_def(task: Task) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The top-level ``def`` of the entry point's last name in the reference, or None."""
    v = task.verifier
    if not isinstance(v, UnitTestVerifier) or not v.entry_point or not task.reference:
        return None
    try:
        tree = ast.parse(task.reference)
    except SyntaxError:
        return None
    name = v.entry_point.split(".")[-1]
    found = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
    return found[-1] if found else None


def skip_reason(task: Task) -> str | None:
    """Why ``task`` gets no mutants (None: it can be mutated)."""
    v = task.verifier
    if not isinstance(v, UnitTestVerifier):
        return f"{v.kind} verifier: nothing to mutate"
    if v.language != Language.PYTHON:
        return f"no mutant generator for {v.language.value}"
    if not task.reference:
        return "no reference"
    if _target_def(task) is None:
        return f"the reference defines no top-level `{(v.entry_point or '?').split('.')[-1]}`"
    return None


def _returned_empty(fn: ast.AST) -> list[str]:
    """Empty values of the types the reference's ``return`` statements build (literal shapes only)."""
    out = []
    for node in ast.walk(fn):
        value = node.value if isinstance(node, ast.Return) else None
        if isinstance(value, (ast.List, ast.ListComp)):
            out.append("[]")
        elif isinstance(value, (ast.Dict, ast.DictComp)):
            out.append("{}")
        elif isinstance(value, (ast.Set, ast.SetComp)):
            out.append("set()")
        elif isinstance(value, ast.Tuple):
            out.append("()")
        elif isinstance(value, ast.JoinedStr) or (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            out.append("''")
        elif isinstance(value, ast.Constant) and type(value.value) in (int, float, bool, bytes):
            out.append({int: "0", float: "0.0", bool: "False", bytes: "b''"}[type(value.value)])
        elif isinstance(value, ast.Compare) or (isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)):
            out.append("False")
    return out


def _annotation_empty(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    ann = fn.returns
    if isinstance(ann, ast.Subscript):
        ann = ann.value
    if isinstance(ann, ast.Attribute):
        ann = ast.Name(id=ann.attr)
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):  # "list[int]" as a string
        ann = ast.Name(id=ann.value.split("[")[0].split(".")[-1])
    return [_EMPTY[ann.id]] if isinstance(ann, ast.Name) and ann.id in _EMPTY else []


def trivial_bodies(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, str]]:
    """``(kind, body source)`` of the trivial mutants of ``fn``, without duplicates."""
    args = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args] if a.arg not in ("self", "cls")]
    bodies = [("return_none", "return None")]
    if args:
        bodies.append(("return_first_argument", f"return {args[0]}"))
    bodies += [("return_empty", f"return {v}") for v in [*_annotation_empty(fn), *_returned_empty(fn)]]
    bodies += [("return_constant", "return True"), ("return_constant", "return 1"),
               ("raise", "raise NotImplementedError")]
    seen, out = set(), []
    for kind, body in bodies:
        if body not in seen:
            seen.add(body)
            out.append((kind, body))
    return out


def _with_body(fn: ast.AST, body: str) -> str:
    mutant = copy.deepcopy(fn)
    mutant.body = ast.parse(body).body
    return ast.unparse(mutant)


class _Sites(ast.NodeVisitor):
    """Every place a reference mutation can go: ``(kind, node, index)``."""

    def __init__(self) -> None:
        self.sites: list[tuple[str, ast.AST, int]] = []

    def visit_Compare(self, node: ast.Compare) -> None:
        """A comparison whose operator can be flipped is a mutation site."""
        self.sites += [("flip_comparison", node, i) for i, op in enumerate(node.ops) if type(op) in _FLIP]
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        """An integer constant is an off-by-one site."""
        if type(node.value) is int:
            self.sites.append(("off_by_one", node, 0))

    def visit_If(self, node: ast.If) -> None:
        """An ``if`` whose body can be dropped is a site."""
        self.sites.append(("drop_branch", node, 0))
        self.generic_visit(node)


def _apply(fn: ast.AST, site_no: int) -> tuple[str, str]:
    """``(kind, source)`` of ``fn`` with mutation site number ``site_no`` applied (on a copy)."""
    mutant = copy.deepcopy(fn)
    finder = _Sites()
    for stmt in mutant.body:
        finder.visit(stmt)
    kind, node, i = finder.sites[site_no]
    if kind == "flip_comparison":
        node.ops[i] = _FLIP[type(node.ops[i])]()
    elif kind == "off_by_one":
        node.value += 1
    else:  # drop the branch: its body does nothing (the test still runs, the else part stays)
        node.body = [ast.Pass()]
    return kind, ast.unparse(mutant)


def mutants_of(task: Task, max_reference_mutants: int = 4) -> list[Mutant]:
    """The trivial mutants and up to ``max_reference_mutants`` reference mutants of ``task``.

    Returns ``[]`` when :func:`skip_reason` gives a reason. Reference-mutant sites are chosen by a
    hash of the task id and the site, so the same task always gets the same mutants.
    """
    fn = _target_def(task) if skip_reason(task) is None else None
    if fn is None:
        return []
    original = ast.unparse(fn)
    out: list[Mutant] = [("trivial", kind, _with_body(fn, body)) for kind, body in trivial_bodies(fn)]
    finder = _Sites()
    for stmt in fn.body:
        finder.visit(stmt)
    order = sorted(range(len(finder.sites)), key=lambda n: hashlib.sha256(f"{task.id}:{n}".encode()).hexdigest())
    for n in order[:max_reference_mutants]:
        kind, code = _apply(fn, n)
        out.append(("reference", kind, code))
    return [m for m in out if m[2] != original]


def check_strength(tasks: Sequence[Task], sandbox: Sandbox, limits: Limits | None = None,
                   max_reference_mutants: int = 4, weak_if: WeakIf = "any_trivial_survives",
                   progress: Callable[[int], None] | None = None,
                   known_killed: Mapping[str, str] | None = None) -> tuple[list[Task], list[Quarantined]]:
    """Run every task's mutants in ``sandbox``; score the tasks and quarantine the weak ones.

    Args:
        tasks: validated tasks (their references pass); tasks that cannot be mutated pass
            through with ``metadata["mutants"] = {"skipped": reason}``.
        max_reference_mutants: reference mutants per task (0: trivial mutants only).
        weak_if: the quarantine rule (see the module docstring).
        progress: optional ``advance(n)``, called once per batch with the requests it ran;
            :func:`count_mutants` gives the total.
        known_killed: ``{task id: code}`` already run and failed against the task's visible tests
            (``validate_tasks(stubs_failed=...)``: the ``raise NotImplementedError`` stub). A mutant
            with exactly that code is counted killed without running: it runs against the visible
            and hidden tests, a superset, so it would fail again. Scores and verdicts are unchanged;
            the quickstart runs 188 fewer mutants.
    Returns:
        ``(kept, quarantined)``: kept tasks carry ``mutation_score`` (killed / run, in [0, 1])
        and ``metadata["mutants"]`` (``killed``, ``total``, ``survivors``: ``family/kind`` names);
        quarantined ones have the reason ``weak_tests: ...`` and the scored task.
    """
    known = known_killed or {}
    plan = [(i, m) for i, t in enumerate(tasks) for m in mutants_of(t, max_reference_mutants)]
    todo = [(i, m) for i, m in plan if known.get(tasks[i].id) != m[2]]
    results = iter(run_batched(sandbox, [request_for(tasks[i], m[2], hidden=None, limits=limits) for i, m in todo],
                               progress))
    killed: dict[int, list[bool]] = {}
    runs: dict[int, list[Mutant]] = {}
    for i, mutant in plan:
        result = None if known.get(tasks[i].id) == mutant[2] else next(results)
        if result is not None and result.status.is_infrastructure:
            continue  # never judged: counts neither way
        runs.setdefault(i, []).append(mutant)
        killed.setdefault(i, []).append(result is None or not result.all_passed)
    kept, bad = [], []
    for i, task in enumerate(tasks):
        if i not in runs:
            why = skip_reason(task) or "every mutant run hit a sandbox or toolchain error"
            kept.append(task.with_(metadata={**task.metadata, "mutants": {"skipped": why}}))
            continue
        scored, reason = _score(task, runs[i], killed[i], weak_if)
        if reason:
            bad.append(Quarantined(reason=reason, task=scored, source=task.source))
        else:
            kept.append(scored)
    return kept, bad


def _score(task: Task, mutants: list[Mutant], killed: list[bool], weak_if: WeakIf) -> tuple[Task, str]:
    survivors = [f"{fam}/{kind}" for (fam, kind, _), k in zip(mutants, killed) if not k]
    trivial = [k for (fam, _, _), k in zip(mutants, killed) if fam == "trivial"]
    info = {"killed": sum(killed), "total": len(killed), "survivors": survivors}
    scored = task.with_(mutation_score=round(sum(killed) / len(killed), 4), metadata={**task.metadata, "mutants": info})
    weak = (not all(trivial)) if weak_if == "any_trivial_survives" else (trivial and not any(trivial))
    if not weak:
        return scored, ""
    names = ", ".join(s.split("/", 1)[1] for s in survivors if s.startswith("trivial/"))
    return scored, f"weak_tests: the tests pass with a trivial body ({names}); {info['killed']}/{info['total']} mutants killed"


def count_mutants(tasks: Sequence[Task], max_reference_mutants: int = 4,
                  known_killed: Mapping[str, str] | None = None) -> int:
    """How many sandbox requests :func:`check_strength` will make (for a progress bar's total)."""
    known = known_killed or {}
    return sum(1 for t in tasks for m in mutants_of(t, max_reference_mutants) if known.get(t.id) != m[2])


__all__ = ["check_strength", "count_mutants", "mutants_of", "skip_reason", "trivial_bodies"]
