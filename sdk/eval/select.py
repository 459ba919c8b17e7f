"""Which trained adapter a run ships, chosen on the validation split (issue 15).

Issue 15: "if no RL recipe does at this budget, the report says so plainly and the demo defaults to
the recipe that does best", and "held-out tasks never steer a choice". After RL trained on top of
SFT, the candidates are the SFT-only adapter (``sft``), the RL midway adapter (``rl_midway``, when
saved) and the RL end adapter (``rl``). Each is scored greedily on the validation split (train
tasks set aside by :func:`sdk.train.validation.carve_validation`), and the rule, fixed before any
score is seen, ships:

1. the higher validation pass@1 (mean judged pass rate per task; a pass that raised an integrity
   flag does not count, as in the report);
2. on a tie, the higher mean validation reward (partial credit: tests passed, parses, runs);
3. on a tie again, the one with less training compute: the earlier in :data:`CANDIDATE_ORDER`
   (each candidate continues the one before, so cumulative compute only rises along it).

No judged validation task (the split is empty, ``tasks.validation_fraction: 0``, or nothing was
judged): the RL end adapter ships, as without the choice, and the record says why.

Only rows of the train split are accepted (validation tasks are train tasks): a held-out or OOD row
is refused with an error, so held-out results cannot reach the choice even by mistake.
No model, no sandbox: rows in, a plain JSON-able record out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sdk.eval.checkpoints import demote_flagged, heldout_rate
from sdk.eval.records import EvalRow

CANDIDATE_ORDER = ("sft", "rl_midway", "rl")
FALLBACK = "rl"
RULE = "higher validation pass@1, then higher mean validation reward, then less training compute"


def validation_figures(rows: Sequence[EvalRow]) -> dict[str, Any]:
    """One candidate's validation figures.

    Args:
        rows: its eval rows on the validation tasks (train split only).
    Returns:
        ``{"tasks": judged tasks, "passed": sum of per-task pass rates (tasks passed at one sample
        per task), "pass_at_1": mean pass rate or None, "mean_reward": mean of per-task mean reward
        or None}``; flagged passes count as failures.
    Raises:
        ValueError: a row is not of the train split (held-out and OOD rows never steer the choice).
    """
    foreign = sorted({r.split.value for r in rows if r.split.value != "train"})
    if foreign:
        raise ValueError(f"the shipped adapter is chosen on validation (train) tasks only; got {foreign} rows")
    judged = [r for r in demote_flagged(rows) if r.pass_rate is not None]
    rates = [r.pass_rate for r in judged]
    rewards = [r.mean_reward for r in judged if r.mean_reward is not None]
    return {"tasks": len(judged), "passed": float(sum(rates)),  # type: ignore[arg-type]
            "pass_at_1": sum(rates) / len(rates) if rates else None,  # type: ignore[arg-type]
            "mean_reward": sum(rewards) / len(rewards) if rewards else None}


def _key(label: str, fig: Mapping[str, Any]) -> tuple[float, float, int]:
    """Sort key, best first: pass@1 down, mean reward down, training order up (floats rounded so
    two equal means computed in different orders still tie)."""
    reward = fig["mean_reward"] if fig["mean_reward"] is not None else float("-inf")
    return (-round(fig["pass_at_1"], 9), -round(reward, 9), CANDIDATE_ORDER.index(label))


def choose_adapter(rows_by_label: Mapping[str, Sequence[EvalRow]]) -> dict[str, Any]:
    """Apply the rule (module docstring) to the candidates' validation rows.

    Args:
        rows_by_label: validation rows per candidate label (of :data:`CANDIDATE_ORDER`).
    Returns:
        ``{"rule", "chosen", "decided_by", "reason", "validation_tasks", "candidates": {label:
        figures}}`` with ``decided_by`` one of ``pass_at_1``, ``mean_reward``, ``compute``,
        ``only_candidate``, ``no_validation`` (then ``chosen`` is ``rl``).
    Raises:
        ValueError: an unknown label, or a row that is not of the train split.
    """
    unknown = sorted(set(rows_by_label) - set(CANDIDATE_ORDER))
    if unknown:
        raise ValueError(f"unknown candidate(s) {unknown}; expected some of {CANDIDATE_ORDER}")
    figs = {label: validation_figures(rows_by_label[label]) for label in CANDIDATE_ORDER if label in rows_by_label}
    judged = sorted((lb for lb, f in figs.items() if f["pass_at_1"] is not None), key=lambda lb: _key(lb, figs[lb]))
    out: dict[str, Any] = {"rule": RULE, "candidates": figs,
                           "validation_tasks": max((f["tasks"] for f in figs.values()), default=0)}
    if not judged:
        return {**out, "chosen": FALLBACK, "decided_by": "no_validation",
                "reason": "No validation task was judged (tasks.validation_fraction carves none, or none could be "
                          "scored), so nothing could compare the adapters: the RL end adapter ships, as without "
                          "the choice."}
    best = judged[0]
    decided = "only_candidate" if len(judged) == 1 else _decided_by(figs[best], figs[judged[1]])
    return {**out, "chosen": best, "decided_by": decided, "reason": _reason(best, decided, figs, judged)}


def _decided_by(best: Mapping[str, Any], second: Mapping[str, Any]) -> str:
    a, b = _key("sft", best), _key("sft", second)
    return "pass_at_1" if a[0] != b[0] else "mean_reward" if a[1] != b[1] else "compute"


def figure_text(label: str, fig: Mapping[str, Any]) -> str:
    """``sft 3/13 (23.1%), mean reward 0.412`` for one candidate (``not judged`` without tasks)."""
    if fig.get("pass_at_1") is None:
        return f"{label} not judged"
    reward = "n/a" if fig.get("mean_reward") is None else f"{fig['mean_reward']:.3f}"
    return f"{label} {fig['passed']:g}/{fig['tasks']} ({100 * fig['pass_at_1']:.1f}%), mean reward {reward}"


def _reason(best: str, decided: str, figs: Mapping[str, Mapping[str, Any]], judged: Sequence[str]) -> str:
    why = {"pass_at_1": "the highest validation pass@1",
           "mean_reward": "tied on validation pass@1, the highest mean validation reward",
           "compute": "tied on validation pass@1 and mean reward, the least training compute",
           "only_candidate": "the only candidate judged on validation"}[decided]
    each = "; ".join(figure_text(lb, figs[lb]) for lb in CANDIDATE_ORDER if lb in figs)
    text = f"'{best}' ships as tuned: {why} ({each}; {figs[best]['tasks']} validation tasks, held-out never read)."
    if best == "sft" and any(lb != "sft" for lb in judged):
        text += " No RL checkpoint beat SFT-only on validation at this budget, so the SFT-only adapter ships."
    return text


def selection_section(selection: Mapping[str, Any] | None, rows_by_label: Mapping[str, Sequence[EvalRow]]
                      ) -> dict[str, Any] | None:
    """The report's ``selection`` section: the recorded choice (rule, shipped label and folder, why,
    seconds per candidate) and per candidate its validation figures beside its held-out pass@1, which
    the report computes from the eval rows after the choice, for reading only. None without a choice."""
    if not selection:
        return None
    keep = ("rule", "chosen", "decided_by", "reason", "validation_tasks", "adapter", "seconds")
    out = {k: selection[k] for k in keep if k in selection}
    out["candidates"] = {label: {**dict(fig), "heldout_pass_at_1": heldout_rate(rows_by_label.get(label, ()))}
                         for label, fig in (selection.get("candidates") or {}).items()}
    return out
