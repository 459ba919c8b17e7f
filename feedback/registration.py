"""Build a :class:`~feedback.registry.Registration` from an adapter folder a run wrote.

Reads what training left beside the weights: ``lineage.json`` (:mod:`sdk.run.lineage`: stage,
base model, task-set version, config fingerprint, gate verdict and held-out pass@1 written by the
report stage) and ``adapter_config.json``; hashes the adapter and the base model
(:mod:`sdk.serve.preflight`), and optionally records a probe (:mod:`sdk.serve.probe`, V3). Only
the serving preflight's refusals (V1 rank above 512, V2 saved embeddings) stop a registration:
an adapter that cannot be served has no business in the registry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from feedback.registry import Registration
from sdk.errors import ModelError
from sdk.run.lineage import read_lineage
from sdk.serve.preflight import (
    ServeError,
    adapter_digest,
    check_adapter_servable,
    lora_rank_plan,
    model_digest,
    read_adapter_config,
)


def registration_from_folder(adapter_dir: str | Path, *, base_model: str | None = None,
                             feedback_watermark: int | None = None, data_version: str = "",
                             parent: int | None = None, config: dict[str, Any] | None = None,
                             eval: dict[str, Any] | None = None, probe: bool = False) -> Registration:
    """What to register for ``adapter_dir``.

    Args:
        base_model: the base model folder (default: the lineage's, else the adapter config's
            ``base_model_name_or_path``).
        feedback_watermark: the last feedback event id its training data included.
        parent: the version number it was trained from.
        config, eval: extra config and evaluation results to record (merged over the lineage's).
        probe: also record the probe's log-probabilities (loads base + adapter; needs torch).
    Raises:
        ServeError: not an adapter folder, empty or truncated weights, an unreadable ``lineage.json``,
            or unservable (V1, V2).
        ModelError: no base model is known.
    """
    folder = Path(adapter_dir).resolve()
    adapter_cfg = read_adapter_config(folder)
    check_adapter_servable(adapter_cfg)
    plan = lora_rank_plan(adapter_cfg)
    lineage = read_lineage(folder)
    if lineage is None and (folder / "lineage.json").exists():
        raise ServeError(f"{folder / 'lineage.json'} cannot be read (hand-edited, cut short or from another "
                         "version): registering without it would drop the gate verdict and the task-set version",
                         "copy the adapter folder again from the run, or delete lineage.json to register it "
                         "without lineage (gate: none)")
    base = base_model or (lineage.base_model if lineage else None) or adapter_cfg.get("base_model_name_or_path")
    if not base:
        raise ModelError(f"no base model is known for {folder}", "pass --base-model FOLDER")
    evaluation = dict(eval or {})
    if lineage is not None and lineage.heldout_pass_at_1:
        evaluation.setdefault("heldout_pass_at_1", dict(lineage.heldout_pass_at_1))
    recorded = {"adapter": {k: adapter_cfg.get(k) for k in ("r", "lora_alpha", "target_modules", "rank_pattern")},
                **({"lineage": lineage.model_dump(mode="json")} if lineage else {}), **(config or {})}
    return Registration(
        adapter_path=str(folder), adapter_sha256=adapter_digest(folder), lora_rank=plan.rank, base_model=str(base),
        base_model_sha256=model_digest(base), taskset_version=lineage.taskset_version if lineage else "",
        data_version=data_version, feedback_watermark=feedback_watermark, config=recorded, parent=parent,
        eval=evaluation, gate_passed=lineage.promotable if lineage else None,
        gate_reasons=tuple(lineage.gate_reasons) if lineage else (),
        probe=_probe(base, folder) if probe else None)


def _probe(base: str, folder: Path) -> dict[str, Any]:
    from sdk.serve.probe import probe_adapter

    return probe_adapter(base, folder)
