"""Change completion: the headline metric of change tasks (issue 17, ``git_history``).

A sample of a change task (``EvalRow.verifier_kind == "change"``, judged by
:mod:`sdk.rewards.change`) *completes the change* when every fail-to-pass test passes
(component ``f2p_frac == 1``), no pass-to-pass test is broken (component ``regressions == 0``)
and no integrity flag was raised (edits to tests or CI, tampering). A sample not judged
(infrastructure) is left out, as for pass@k. Rows without the change reward's components (a
tool-rollout reward) fall back to the row's pass verdict, still unflagged.

The **change completion rate** of a task is its completed share of judged samples (pass@1's
``c / n`` with ``c`` = completed samples, :func:`~sdk.eval.metrics.pass_at_k_per_task`); per
split, base and tuned get a bootstrap interval and the difference a paired one
(:func:`~sdk.eval.metrics.bootstrap_ci`, :func:`~sdk.eval.metrics.paired_bootstrap_ci`). Each
task's row shows the model's change (its first completion, cut with a note saying so) and the
names of the fail-to-pass tests still failing and the pass-to-pass tests broken.

No model, no sandbox: rows in, a JSON-able section out (``None`` when no change task was
evaluated on both sides, so reports of other task sets carry no such section).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sdk.eval.metrics import bootstrap_ci, paired_bootstrap_ci, pass_at_k_per_task
from sdk.eval.records import EvalRow

CHANGE_KIND = "change"
SIDES = ("base", "tuned")


def sample_completed(row: EvalRow, i: int) -> bool | None:
    """Whether sample ``i`` of ``row`` completes the change (see the module docstring); None when
    it was not judged."""
    if row.rewards[i] is None:
        return None
    if row.flags[i]:
        return False
    comp = row.components[i] if row.components else {}
    if "f2p_frac" not in comp:
        return bool(row.passed[i])
    return comp["f2p_frac"] >= 1.0 and comp.get("regressions", 0.0) == 0.0


def completion_counts(row: EvalRow) -> tuple[int, int]:
    """``(judged samples, completed samples)`` of one row."""
    done = [sample_completed(row, i) for i in range(len(row.completions))]
    judged = [d for d in done if d is not None]
    return len(judged), sum(judged)


def change_rows(rows: Sequence[EvalRow]) -> dict[str, EvalRow]:
    """``{task id: row}`` of the change-task rows among ``rows``."""
    return {r.task_id: r for r in rows if r.verifier_kind == CHANGE_KIND}


def change_completion_section(rows_by_label: Mapping[str, Sequence[EvalRow]], n_resamples: int = 2000,
                              seed: int = 0, max_chars: int = 4000, max_tasks: int = 200) -> dict[str, Any] | None:
    """The report's ``change_completion`` section, from the ``base`` and ``tuned`` rows.

    Returns:
        ``{"definition", "by_split": {split: {"n_tasks", "base", "tuned", "delta"}}, "tasks": [...],
        "tasks_shown", "tasks_total"}`` (estimates as JSON dicts; ``all`` is every paired task), or
        None when no change task has a judged sample on both sides. ``tasks``: per paired change
        task its id, split, domain and per side ``completed``, ``status``, ``reward``, ``flags``,
        ``fail_to_pass_failing``, ``pass_to_pass_broken``, ``diff`` and ``diff_truncated`` (first
        sample), at most ``max_tasks``, held-out first.
    """
    base, tuned = (change_rows(rows_by_label.get(s, ())) for s in SIDES)
    pairs = [(base[i], tuned[i]) for i in sorted(set(base) & set(tuned))
             if completion_counts(base[i])[0] and completion_counts(tuned[i])[0]]
    if not pairs:
        return None
    pairs.sort(key=lambda p: (p[0].split.value != "heldout", p[0].split.value, p[0].domain, p[0].task_id))
    opts = {"n_resamples": n_resamples, "seed": seed}
    splits = sorted({b.split.value for b, _ in pairs})
    by_split = {s: _rates([p for p in pairs if p[0].split.value == s], opts) for s in splits}
    by_split["all"] = _rates(pairs, opts)
    return {"definition": "a sample completes the change when every fail-to-pass test passes, no pass-to-pass "
                          "test is broken and no integrity flag was raised",
            "by_split": by_split, "tasks": [_task(b, t, max_chars) for b, t in pairs[:max_tasks]],
            "tasks_shown": min(len(pairs), max_tasks), "tasks_total": len(pairs)}


def _rates(pairs: Sequence[tuple[EvalRow, EvalRow]], opts: dict) -> dict[str, Any]:
    """Change completion rate of base and tuned over ``pairs`` with intervals, and the paired difference."""
    counts = {s: [completion_counts(p[k]) for p in pairs] for k, s in enumerate(SIDES)}
    rate = {s: pass_at_k_per_task([n for n, _ in c], [d for _, d in c], 1) for s, c in counts.items()}
    return {"n_tasks": len(pairs), "base": bootstrap_ci(rate["base"], **opts).model_dump(mode="json"),
            "tuned": bootstrap_ci(rate["tuned"], **opts).model_dump(mode="json"),
            "delta": paired_bootstrap_ci(rate["base"], rate["tuned"], **opts).model_dump(mode="json")}


def _task(b: EvalRow, t: EvalRow, max_chars: int) -> dict[str, Any]:
    """One task's row: ids and, per side, the first sample's change and the tests it left failing or broke."""
    out: dict[str, Any] = {"task_id": b.task_id, "split": b.split.value, "domain": b.domain}
    for side, row in zip(SIDES, (b, t)):
        text = row.completions[0] if row.completions else ""
        n, done = completion_counts(row)
        out[side] = {"completed": sample_completed(row, 0), "completion_rate": done / n if n else None,
                     "status": row.statuses[0], "reward": row.rewards[0],
                     "flags": list(row.flags[0]),
                     "fail_to_pass_failing": list(row.fail_to_pass_failing[0]) if row.fail_to_pass_failing else [],
                     "pass_to_pass_broken": list(row.pass_to_pass_broken[0]) if row.pass_to_pass_broken else [],
                     "diff": text[:max_chars], "diff_truncated": len(text) > max_chars, "diff_chars": len(text)}
    return out
