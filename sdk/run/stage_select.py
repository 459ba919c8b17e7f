"""The eval stage's first step with ``eval.select: validation``: choose the adapter the run ships.

After RL trained on top of SFT, every candidate (:func:`sdk.run.shipped.candidate_adapters`: SFT-only,
RL midway, RL end) is scored on the validation split (train tasks set aside by
:func:`sdk.run.stage_sft.fit_and_validation`, the same carve the trainers left out) through the eval
stage's own scoring path, greedy as configured; the rule of :mod:`sdk.eval.select` picks one. The
record (rule, every candidate's figures, seconds per candidate, the reason) goes to
``eval/selection.json`` with each candidate's stamp and into the eval stage's marker, and the report
shows it. Held-out tasks are not among the tasks scored here, and the rule refuses any row that is
not of the train split.

Cost: one generator per candidate (issue 15, stop 32). Each candidate's validation tasks and its
checkpoint-split tasks (``eval.checkpoint_splits``, held-out: the rows its checkpoint pass computes
anyway) are generated in one batched pass with one model load; the rows are split after it, the
rule reads the validation rows alone (:func:`sdk.eval.select.choose_adapter` refuses any other),
and the held-out rows are handed to the eval stage, which saves them as it did before. So no
greedy row of a candidate is generated twice, and the held-out rows, already generated, still never
reach the choice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sdk.eval.records import EvalRow, save_rows
from sdk.eval.select import CANDIDATE_ORDER, choose_adapter
from sdk.jsonl import write_json
from sdk.run.bookkeeping import read_marker
from sdk.run.context import StageContext
from sdk.run.lineage import read_lineage, write_lineage
from sdk.run.shipped import adapter_stamp, candidate_adapters
from sdk.run.stage_sft import fit_and_validation
from sdk.tasks.records import Task

Score = Callable[[Sequence[Task], str, "Path | None"], list[EvalRow]]


def choose_shipped(ctx: StageContext, score: Score, also: Sequence[Task] = ()
                   ) -> tuple[dict[str, Any] | None, dict[str, list[EvalRow]]]:
    """Score the candidates on the validation split and record which one ships.

    Args:
        ctx: the eval stage's context.
        score: ``(tasks, label, adapter) -> rows``, the eval stage's scoring path.
        also: tasks of other splits generated in the same pass as each candidate's validation tasks
            (one generator per candidate; the eval stage passes its checkpoint-split tasks). Their
            rows are returned, never shown to the rule.
    Returns:
        ``(selection, rows of also)``: the selection record (:func:`sdk.eval.select.choose_adapter`
        plus ``adapter``, the shipped folder relative to the run folder, ``candidate_adapters``,
        ``stamps`` and ``seconds`` per candidate: its whole pass), or None when there is no choice:
        ``eval.select`` is ``last``, or fewer than two candidates (no RL on top of SFT); and per
        candidate its rows of ``also`` in task order (``{}`` without a choice: nothing scored). A
        stale record and stale validation rows are removed first.
    """
    layout, cfg = ctx.layout, ctx.cfg
    layout.selection_json.unlink(missing_ok=True)
    for label in CANDIDATE_ORDER:
        layout.validation_rows(label).unlink(missing_ok=True)
    cands = candidate_adapters(cfg, layout)
    if cfg.eval.select != "validation" or len(cands) < 2:
        return None, {}
    validation = fit_and_validation(ctx)[1]
    val_ids, also_ids = {t.id for t in validation}, {t.id for t in also}
    also = [t for t in also if t.id not in val_ids]  # a validation task also asked for is generated once
    ctx.console.print(f"  choosing the shipped adapter on {len(validation)} validation tasks: "
                      + ", ".join(label for label, _ in cands)
                      + (f" (each generated with its {len(also)} checkpoint-split tasks, one pass)" if also else ""))
    rows, seconds, other = {}, {}, {}
    for label, adapter in cands:
        start = time.monotonic()
        got = score([*validation, *also], label, adapter) if validation or also else []
        seconds[label] = round(time.monotonic() - start, 1)
        rows[label] = [r for r in got if r.task_id in val_ids]
        other[label] = [r for r in got if r.task_id in also_ids]
        save_rows(layout.validation_rows(label), rows[label])
    sel = choose_adapter(rows)
    paths = {label: _rel(path, layout.root) for label, path in cands}
    sel.update({"adapter": paths[sel["chosen"]], "candidate_adapters": paths, "seconds": seconds,
                "stamps": {rel: adapter_stamp(layout.root / rel) for rel in paths.values()}})
    if sel["chosen"] == "rl_midway":
        midway_lineage(ctx, layout.root / paths["rl_midway"])
    write_json(layout.selection_json, sel)
    ctx.console.print(f"  {sel['reason']}", markup=False)
    return sel, other


def _rel(path: Path, root: Path) -> str:
    return Path(path).relative_to(root).as_posix()


def midway_lineage(ctx: StageContext, midway: Path) -> None:
    """Give the RL midway adapter a ``lineage.json`` when it ships (the report's verdict and ``export``
    read it): the RL end adapter's lineage with the midway step (the ``rl`` marker's ``midway.step``)."""
    rl = read_lineage(ctx.layout.adapter("rl"))
    if rl is None or read_lineage(midway) is not None:
        return
    stats = (read_marker(ctx.layout.marker("rl")) or {}).get("stats", {})
    step = int((stats.get("midway") or {}).get("step") or 0)
    write_lineage(midway, rl.model_copy(update={"steps": step, "created": "", "promotable": None,
                                                "gate_reasons": (), "heldout_pass_at_1": {}}))
