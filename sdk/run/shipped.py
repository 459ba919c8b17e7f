"""The adapter a run ships as ``tuned``: the newest trained one, or the one chosen on validation.

With ``eval.select: validation`` (the default) the eval stage chooses among the SFT-only, RL-midway
and RL-end adapters (:func:`candidate_adapters`; the rule is :mod:`sdk.eval.select`, the stage part
:mod:`sdk.run.stage_select`) and records the choice in ``eval/selection.json`` with a stamp of
every candidate's files. Every consumer of "the run's adapter" (the eval stage's ``tuned`` rows, the
report's header and lineage verdict, ``export`` and ``serve``) asks :func:`shipped_adapter`. A
choice whose candidates changed since it was made (retrained, replaced) is not trusted: the newest
adapter stands until the eval stage chooses again. ``eval.select: last`` always ships the newest.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdk.run.layout import RunLayout

if TYPE_CHECKING:
    from sdk.config import RunConfig

LINEAGE_FILE = "lineage.json"  # rewritten by the report's verdict: not part of an adapter's stamp


def newest_adapter(cfg: "RunConfig", layout: RunLayout) -> Path | None:
    """The newest trained adapter: RL's if ``rl`` is on and saved one, else SFT's, else None."""
    for stage, enabled in (("rl", cfg.rl.enabled), ("sft", cfg.sft.enabled)):
        path = layout.adapter(stage)
        if enabled and (path / "adapter_config.json").is_file():
            return path
    return None


def candidate_adapters(cfg: "RunConfig", layout: RunLayout) -> list[tuple[str, Path]]:
    """``[(label, adapter folder)]`` in training order when RL saved the newest adapter: ``sft`` (SFT
    on and saved), ``rl_midway`` (``rl.eval_midway`` and saved), then ``rl`` (the RL end); ``[]``
    when the newest adapter is not RL's (nothing to choose between)."""
    newest = newest_adapter(cfg, layout)
    if newest is None or newest != layout.adapter("rl"):
        return []
    out = []
    sft, mid = layout.adapter("sft"), layout.midway_adapter("rl")
    if cfg.sft.enabled and (sft / "adapter_config.json").is_file():
        out.append(("sft", sft))
    if cfg.rl.eval_midway and (mid / "adapter_config.json").is_file():
        out.append(("rl_midway", mid))
    return out + [("rl", newest)]


def adapter_stamp(path: Path) -> str:
    """16 hex of a hash over the name, size and modification time of every file in the adapter
    folder but its lineage (which the report rewrites); "" when the folder is missing."""
    path = Path(path)
    if not path.is_dir():
        return ""
    parts = [(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in sorted(path.iterdir())
             if f.is_file() and f.name != LINEAGE_FILE]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def read_selection(layout: RunLayout) -> dict[str, Any] | None:
    """``eval/selection.json`` as written by the eval stage, or None (missing or unreadable)."""
    try:
        data = json.loads(layout.selection_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def shipped_adapter(cfg: "RunConfig", layout: RunLayout) -> Path | None:
    """The adapter the run ships (see the module docstring): the validation choice when
    ``eval.select`` is ``validation`` and the recorded choice still matches every candidate's files,
    else :func:`newest_adapter`."""
    newest = newest_adapter(cfg, layout)
    if newest is None or cfg.eval.select != "validation":
        return newest
    sel = read_selection(layout)
    if not sel or not current_choice(sel, layout):
        return newest
    return layout.root / sel["adapter"]


def current_choice(sel: dict[str, Any], layout: RunLayout) -> bool:
    """Whether a recorded selection still describes the adapters on disk: its shipped adapter is one
    of its candidates and every candidate's stamp matches :func:`adapter_stamp` now."""
    stamps = sel.get("stamps")
    if not isinstance(stamps, dict) or sel.get("adapter") not in stamps:
        return False
    return all(adapter_stamp(layout.root / rel) == stamp for rel, stamp in stamps.items())
