"""Deterministic train / held-out / out-of-distribution splitting, deduplicated by logic.

* OOD: every task whose domain starts with one of ``ood_domains`` (or whose source fixed
  ``split: ood``).
* Held-out: a fixed fraction of the remaining tasks, chosen by a hash of a *logic key*, not of
  the name, so near-copies land in the same split (DESIGN.md: two held-out tasks were
  near-copies of train tasks). The logic key is the reference's normalised AST with
  identifiers renamed, or the prompt text when there is no code reference.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable, Sequence

from sdk.tasks.records import Quarantined, Split, Task


def logic_key(task: Task) -> str:
    """A key equal for tasks whose reference code differs only in names, docstrings or layout."""
    ref = task.reference or ""
    try:
        tree = ast.parse(ref)
    except SyntaxError:
        tree = None
    if tree is None or not ref.strip():
        text = " ".join(m.content for m in task.prompt).lower().split()
        return hashlib.sha256(" ".join(text).encode()).hexdigest()
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if (node.body and isinstance(node.body[0], ast.Expr)
                    and isinstance(getattr(node.body[0], "value", None), ast.Constant)
                    and isinstance(node.body[0].value.value, str)):
                node.body = node.body[1:] or [ast.Pass()]
            node.name = names.setdefault(node.name, f"f{len(names)}")
        elif isinstance(node, ast.arg):
            node.arg = names.setdefault(node.arg, f"v{len(names)}")
        elif isinstance(node, ast.Name):
            node.id = names.setdefault(node.id, f"v{len(names)}")
    return hashlib.sha256(ast.dump(tree, annotate_fields=False).encode()).hexdigest()


def _unit(key: str, seed: int) -> float:
    return int(hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()[:12], 16) / float(16**12)


def assign_splits(tasks: Sequence[Task], heldout_fraction: float, ood_domains: Iterable[str] = (),
                  seed: int = 0, fixed: dict[str, Split] | None = None) -> tuple[list[Task], list[Quarantined]]:
    """Give every task its split.

    Args:
        tasks: tasks in any order (the result does not depend on it).
        heldout_fraction: expected share of non-OOD tasks held out, in [0, 1).
        ood_domains: domain prefixes forming the OOD split.
        seed: changes which tasks are held out.
        fixed: ``task id -> split`` forced by the source config.
    Returns:
        ``(tasks with splits, quarantined)``: a task whose logic key repeats one already seen in
        another split is placed in that split; an exact duplicate of logic within the same
        domain is quarantined as ``duplicate_logic``.
    """
    ood = tuple(ood_domains)
    fixed = fixed or {}
    out: list[Task] = []
    quarantined: list[Quarantined] = []
    seen: dict[str, Task] = {}
    for task in sorted(tasks, key=lambda t: t.id):
        key = logic_key(task)
        if task.id in fixed:
            split = fixed[task.id]
        elif ood and task.domain.startswith(ood):
            split = Split.OOD
        else:
            split = Split.HELDOUT if _unit(key, seed) < heldout_fraction else Split.TRAIN
        if key in seen:
            first = seen[key]
            if first.domain == task.domain and first.split == split:
                quarantined.append(Quarantined(reason=f"duplicate_logic: same logic as task {first.id}", task=task))
                continue
            if split != Split.OOD and first.split != Split.OOD:
                split = first.split  # near-copies never straddle train and held-out
        else:
            seen[key] = task.with_(split=split)
        out.append(task.with_(split=split))
    return out, quarantined
