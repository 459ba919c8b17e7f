"""Evaluated checkpoints and the honesty checks of a report (issue 15).

A run evaluates more than base and tuned: the SFT-only adapter (``sft``), an RL checkpoint half
way (``rl_midway``) and the references through the same eval path (``reference``, the grader's
self-test). From their rows this module builds

* the benefit curve (:func:`checkpoint_curve`): held-out pass@1 of every evaluated model against
  the training compute that made it, so :func:`sdk.eval.cost.falloff` can name a knee;
* the RL-vs-SFT comparison (:func:`rl_vs_sft`): SFT+RL (the RL end adapter, whichever ships)
  against SFT-only on the same held-out tasks, a paired bootstrap interval of the difference (Efron
  & Tibshirani 1993, ch. 13), and one plain sentence saying whether RL earned its place;
* the honesty section (:func:`honesty_section`): gains whose tuned samples raised an integrity
  flag (they are not counted as gains), an all-zero baseline called out, stop reasons per model,
  and the grader's self-test pass rate (field case E1);
* the retry section (:func:`retry_section`): pass@1 after one retry with execution feedback.

No model, no sandbox: rows in, plain JSON-able values out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from sdk.eval.cost import Checkpoint
from sdk.eval.metrics import bootstrap_ci, flag_counts, paired_bootstrap_ci
from sdk.eval.records import Comparison, EvalRow

CURVE_ORDER = ("base", "sft", "rl_midway", "rl", "tuned")
HELDOUT = "heldout"


def heldout_rate(rows: Sequence[EvalRow]) -> float | None:
    """Mean judged pass rate over held-out rows with a judged sample (None: none)."""
    rates = [r.pass_rate for r in rows if r.split.value == HELDOUT and r.pass_rate is not None]
    return sum(rates) / len(rates) if rates else None


def checkpoint_curve(rows_by_label: Mapping[str, Sequence[EvalRow]], compute_s: Mapping[str, float]
                     ) -> list[Checkpoint]:
    """One :class:`Checkpoint` per evaluated model in :data:`CURVE_ORDER` (those present); with RL end
    rows of their own (``rl``, when the shipped adapter was chosen on validation) ``tuned`` is one of
    the points already and is left out.

    Args:
        rows_by_label: eval rows per model label (``base``, ``sft``, ``rl_midway``, ``rl``, ``tuned``).
        compute_s: cumulative training compute per label, seconds (base: 0).
    """
    out = []
    for label in CURVE_ORDER:
        rows = rows_by_label.get(label)
        if label == "tuned" and rows_by_label.get("rl"):
            continue
        if rows:
            out.append(Checkpoint(label=label, compute_s=float(compute_s.get(label, 0.0)),
                                  heldout_pass_at_1=heldout_rate(rows), flags=flag_counts(rows)))
    return out


def rl_vs_sft(sft_rows: Sequence[EvalRow], tuned_rows: Sequence[EvalRow], n_resamples: int = 2000,
              seed: int = 0) -> dict[str, Any] | None:
    """SFT+RL (the RL end adapter's rows: ``rl``, or ``tuned`` when no choice was made) against
    SFT-only on the held-out tasks both judged.

    Returns:
        ``{"n", "sft", "sft_rl", "delta", "earned", "verdict"}`` (estimates as dicts with
        ``value, low, high, n``; ``earned``: the paired interval's lower bound is above 0), or
        None when there are no SFT rows or no shared judged held-out task.
    """
    sft = {r.task_id: r for r in sft_rows if r.split.value == HELDOUT and r.pass_rate is not None}
    pairs = [(sft[r.task_id], r) for r in tuned_rows
             if r.split.value == HELDOUT and r.pass_rate is not None and r.task_id in sft]
    if not pairs:
        return None
    a, b = [s.pass_rate for s, _ in pairs], [t.pass_rate for _, t in pairs]
    opts = dict(n_resamples=n_resamples, seed=seed)
    delta = paired_bootstrap_ci(a, b, **opts)
    earned = delta.low > 0
    ci = f"{100 * delta.value:+.1f} pp (95% CI {100 * delta.low:+.1f}..{100 * delta.high:+.1f}, n={delta.n})"
    if earned:
        verdict = f"RL earned its place: SFT+RL beat SFT-only on held-out pass@1 by {ci}."
    elif delta.value > 0:
        verdict = f"RL not proven: SFT+RL vs SFT-only {ci}; the interval reaches zero."
    else:
        verdict = f"RL did not earn its place at this budget: SFT+RL vs SFT-only {ci}; SFT alone does as well."
    return {"n": len(pairs), "sft": bootstrap_ci(a, **opts).model_dump(mode="json"),
            "sft_rl": bootstrap_ci(b, **opts).model_dump(mode="json"), "delta": delta.model_dump(mode="json"),
            "earned": earned, "verdict": verdict}


def flagged_gains(comparison: Comparison, tuned_rows: Sequence[EvalRow]) -> list[str]:
    """Ids of tasks counted as gains whose tuned samples raised any integrity flag."""
    tuned = {r.task_id: r for r in tuned_rows}
    return [d.task_id for d in comparison.diffs if d.outcome == "gain"
            and d.task_id in tuned and any(tuned[d.task_id].flags)]


def stop_reasons(rows: Sequence[EvalRow]) -> dict[str, int]:
    """``{reason: samples}`` over ``rows`` (``unknown`` for rows written before issue 15)."""
    count: Counter[str] = Counter()
    for r in rows:
        count.update(r.stop_reasons or ("unknown",) * len(r.completions))
    return dict(sorted(count.items()))


def honesty_section(comparison: Comparison, rows_by_label: Mapping[str, Sequence[EvalRow]],
                    validation: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What a reader must know before trusting the gain (see the module docstring).

    Returns:
        ``{"flagged_gains": n, "flagged_gain_ids", "all_zero_baseline": bool, "warnings": [...],
        "stop_reasons": {label: {reason: n}}, "grader_self_test": {...} | None, "validation": {...}}``.
    """
    tuned = rows_by_label.get("tuned", ())
    flagged = flagged_gains(comparison, tuned)
    held = comparison.by_split.get(HELDOUT)
    base1 = held.base.get(1) if held else None
    all_zero = base1 is not None and base1.value == 0.0
    warnings = []
    if all_zero:
        warnings.append(f"The base model passed none of the {base1.n} held-out tasks: check its stop reasons and "
                        "the parse policy before reading the gain (a floor shows no harm and flatters any change).")
    if flagged:
        warnings.append(f"{len(flagged)} gained task(s) carry integrity flags on the tuned side; they are not "
                        "counted as gains.")
    grader = grader_self_test(rows_by_label.get("reference", ()))
    if grader is not None and grader["rate"] < 1.0:
        warnings.append(f"The grader's self-test is {100 * grader['rate']:.0f}%, not 100%: {grader['failed']} "
                        "reference(s) fail through the eval path; scores are not trustworthy until fixed.")
    return {"flagged_gains": len(flagged), "flagged_gain_ids": flagged, "all_zero_baseline": all_zero,
            "warnings": warnings, "stop_reasons": {k: stop_reasons(v) for k, v in rows_by_label.items() if v},
            "grader_self_test": grader, "validation": dict(validation or {})}


def grader_self_test(reference_rows: Sequence[EvalRow]) -> dict[str, Any] | None:
    """References scored through the eval path: ``{"passed", "total", "rate", "failed", "failed_ids"}``
    over judged rows; None without reference rows."""
    judged = [r for r in reference_rows if r.n]
    if not judged:
        return None
    bad = [r.task_id for r in judged if r.c < r.n]
    return {"passed": len(judged) - len(bad), "total": len(judged), "rate": (len(judged) - len(bad)) / len(judged),
            "failed": len(bad), "failed_ids": bad}


def retry_section(rows_by_label: Mapping[str, Sequence[EvalRow]], n_resamples: int = 2000,
                  seed: int = 0) -> dict[str, Any] | None:
    """pass@1 after one retry with execution feedback, per model and split (rows with a retry only).

    Returns:
        ``{label: {split: {"first": estimate, "after_retry": estimate, "n"}}}``, or None when no
        row has a retry.
    """
    out: dict[str, Any] = {}
    for label, rows in rows_by_label.items():
        with_retry = [r for r in rows if r.retry and r.n]
        for split in sorted({r.split.value for r in with_retry}):
            part = [r for r in with_retry if r.split.value == split]
            first = bootstrap_ci([r.pass_rate for r in part], n_resamples=n_resamples, seed=seed)
            after = bootstrap_ci([r.retry_pass_rate for r in part], n_resamples=n_resamples, seed=seed)
            out.setdefault(label, {})[split] = {"n": len(part), "first": first.model_dump(mode="json"),
                                                "after_retry": after.model_dump(mode="json")}
    return out or None


def demote_flagged(rows: Sequence[EvalRow]) -> list[EvalRow]:
    """``rows`` with every passing sample that raised an integrity flag counted as not passing
    (issue 15: gains flagged for hacking do not count as gains)."""
    out = []
    for r in rows:
        passed = tuple(p and not f for p, f in zip(r.passed, r.flags))
        out.append(r if passed == r.passed else r.model_copy(update={"passed": passed}))
    return out


def task_name(locator: str, fallback: str) -> dict[str, str]:
    """``{"name": function, "file": path}`` from a task's ``source.locator`` (``path::qualname``
    for test-suite tasks); ``fallback`` (the id) when the locator names nothing."""
    path, sep, qual = (locator or "").partition("::")
    if sep:
        return {"name": qual, "file": path}
    return {"name": locator or fallback, "file": ""}


def per_task_section(comparison: Comparison, rows_by_label: Mapping[str, Sequence[EvalRow]],
                     names: Mapping[str, Mapping[str, str]], sides: Sequence[str] = ("base", "tuned"),
                     max_chars: int = 1200) -> list[dict[str, Any]]:
    """One entry per compared task: id, name and file, split, outcome, and per side the first
    completion, status, stop reason, reward and scorer detail (cut to ``max_chars``), for the
    report's side-by-side view."""
    by_side = {s: {r.task_id: r for r in rows_by_label.get(s, ())} for s in sides}
    out = []
    for d in comparison.diffs:
        entry: dict[str, Any] = {"task_id": d.task_id, **names.get(d.task_id, task_name("", d.task_id)),
                                 "split": d.split.value, "domain": d.domain, "outcome": d.outcome}
        for side in sides:
            row = by_side[side].get(d.task_id)
            if row is None or not row.completions:
                continue
            entry[side] = {"completion": row.completions[0][:max_chars], "status": row.statuses[0],
                           "passed": row.passed[0], "reward": row.rewards[0],
                           "stop": row.stop_reasons[0] if row.stop_reasons else "unknown",
                           "detail": (row.details[0] if row.details else "")[:max_chars],
                           "flags": list(row.flags[0])}
        out.append(entry)
    return out
