"""Adapter lineage: every saved adapter folder carries ``lineage.json`` saying what made it.

Fields: the stage (sft, dpo, rl), the base model, the parent adapter it continued (None for a
fresh LoRA), the task-set version and the stage's config fingerprint (:mod:`sdk.run.pipeline`), the steps
trained and when. :func:`lineage_chain` follows parents back to the base, so an adapter found on
disk (or exported) can be traced to its data and config. The feedback service's SQL lineage
records the same facts for served adapters; this file is the training side's copy.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from sdk.tasks.records import Frozen

FILE = "lineage.json"


class Lineage(Frozen):
    """What produced one adapter folder.

    Attributes:
        stage: ``sft``, ``dpo`` or ``rl``.
        base_model: the base model path or name.
        parent: the adapter folder this one continued, or None (fresh LoRA on the base).
        taskset_version: content version of the task set trained on ("" when not from a task set).
        fingerprint: the stage's config fingerprint ("" outside the pipeline).
        steps: optimizer steps trained in this stage.
        rows: training rows (prompts, examples or pairs) in this stage.
        created: ISO-8601 UTC time of writing.
        promotable: the regression gate's verdict once the report ran (None: not gated yet).
        gate_reasons: why the gate refused it.
        heldout_pass_at_1: base and tuned held-out pass@1 from the report, when evaluated.
    """

    stage: str
    base_model: str
    parent: str | None = None
    taskset_version: str = ""
    fingerprint: str = ""
    steps: int = 0
    rows: int = 0
    created: str = ""
    promotable: bool | None = None
    gate_reasons: tuple[str, ...] = ()
    heldout_pass_at_1: dict[str, float] = {}


def write_lineage(adapter_dir: str | Path, lineage: Lineage) -> Path:
    """Write ``adapter_dir/lineage.json`` (``created`` filled in when empty); returns its path."""
    path = Path(adapter_dir) / FILE
    if not lineage.created:
        lineage = lineage.model_copy(update={"created": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    path.write_text(lineage.model_dump_json(indent=2))
    return path


def read_lineage(adapter_dir: str | Path) -> Lineage | None:
    """The adapter's lineage, or None when it has no (valid) ``lineage.json``."""
    path = Path(adapter_dir) / FILE
    try:
        return Lineage.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


def lineage_chain(adapter_dir: str | Path, limit: int = 16) -> list[Lineage]:
    """This adapter's lineage then its parents', newest first (stops at a missing file or ``limit``)."""
    chain: list[Lineage] = []
    current: str | Path | None = adapter_dir
    while current is not None and len(chain) < limit:
        item = read_lineage(current)
        if item is None:
            break
        chain.append(item)
        current = item.parent
    return chain
