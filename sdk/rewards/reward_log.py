"""Reading the reward log that :class:`~sdk.rewards.trl.SandboxReward` writes, for the report.

One JSONL row per scored sample (``step``, ``task_id``, ``score``, ``status``, ``components``,
``flags``, ``completion``). :func:`summarize_by_step` gives the per-checkpoint table the
report shows: samples, mean score over judged samples, unjudged count, and hacking flags.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sdk.rewards.integrity import HACKING_FLAGS


def read_reward_log(path: str | Path) -> tuple[list[dict[str, Any]], int]:
    """``(rows, bad_lines)``: the parsed rows, and how many lines were not JSON (a torn last
    line after a crash is counted, never fatal). A missing file gives ``([], 0)``."""
    path = Path(path)
    if not path.exists():
        return [], 0
    rows, bad = [], 0
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                bad += 1
    return rows, bad


def summarize_by_step(rows: Iterable[dict[str, Any]], every: int = 1) -> list[dict[str, Any]]:
    """Per-checkpoint summary, steps bucketed by ``every`` (e.g. the save interval).

    Returns:
        one dict per bucket, sorted by step: ``step`` (bucket start; ``None`` for rows without
        a step), ``samples``, ``judged``, ``mean_score`` (over judged samples, ``None`` if none),
        ``hacking`` (samples with status suspected_hacking), ``flags`` (``{flag: count}`` over
        hacking flags), ``statuses`` (``{status: count}``), ``hidden_gap`` (mean, where logged).
    """
    buckets: dict[int | None, list[dict[str, Any]]] = {}
    for row in rows:
        step = row.get("step")
        key = None if step is None else (int(step) // every) * every
        buckets.setdefault(key, []).append(row)
    out = []
    for key in sorted(buckets, key=lambda k: (k is None, k or 0)):
        group = buckets[key]
        judged = [r["score"] for r in group if r.get("score") is not None]
        gaps = [r["components"]["hidden_gap"] for r in group if "hidden_gap" in r.get("components", {})]
        flags = Counter(f for r in group for f in r.get("flags", ()) if f in HACKING_FLAGS)
        out.append({
            "step": key, "samples": len(group), "judged": len(judged),
            "mean_score": sum(judged) / len(judged) if judged else None,
            "hacking": sum(r.get("status") == "suspected_hacking" for r in group),
            "flags": dict(flags), "statuses": dict(Counter(r.get("status") for r in group)),
            "hidden_gap": sum(gaps) / len(gaps) if gaps else None,
        })
    return out
