"""The main job: sources → task set → LoRA SFT → GRPO → evaluation → report, in a run folder.

Each stage writes its outputs under ``run_dir/<stage>/`` and, last, a ``state/<stage>.json``
marker holding a fingerprint of everything it depends on (its config sections and the upstream
stage's fingerprint). A re-run skips a stage whose marker matches, so a crashed run resumes at
the stage that did not finish (and TRL resumes inside that stage from its last checkpoint);
changing a stage's config re-runs it and everything downstream. ``force=True`` re-runs all.
``rl_compare`` (the schedule comparison, ``rl.compare``) hangs off ``sft`` beside ``rl``: nothing
downstream depends on it, so changing only the comparison re-runs only it and the report.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from sdk.config import RunConfig
from sdk.errors import ConfigError
from sdk.tasks.records import canonical_json
from sdk.train.common import StageClock, StageStats, write_json

log = logging.getLogger(__name__)

STAGES: tuple[str, ...] = ("tasks", "sft", "rl", "rl_compare", "eval", "report")
_DEPS: dict[str, tuple[str, ...]] = {
    "tasks": ("sources", "tasks", "sandbox", "seed"),
    "sft": ("model", "sft", "seed"),
    "rl": ("model", "rl", "reward", "sandbox", "seed", "tools"),
    "rl_compare": ("model", "rl", "reward", "sandbox", "seed", "tools"),
    "eval": ("model", "eval", "reward", "sandbox", "seed", "tools"),
    "report": ("gate",),
}
# the stage whose fingerprint each stage carries: rl_compare starts from the SFT adapter, and
# nothing downstream uses its output, so a changed comparison redoes only rl_compare (and the report)
_UPSTREAM: dict[str, str] = {"sft": "tasks", "rl": "sft", "rl_compare": "sft", "eval": "rl", "report": "eval"}


# append-only per-stage logs, cleared when a training stage starts from scratch (kept on resume)
STAGE_LOGS = ("log.jsonl", "rewards.jsonl", "traces.jsonl", "too_long.jsonl", "bad_rows.jsonl")

class Pipeline:
    """Runs stages of one :class:`RunConfig` into ``cfg.run_path``.

    Args:
        cfg: the validated config.
        console: where progress and summaries go.
        progress: show progress bars (off in tests).
    """

    def __init__(self, cfg: RunConfig, console: Console | None = None, progress: bool = True) -> None:
        self.cfg = cfg
        self.run_dir = cfg.run_path
        self.console = console or Console(stderr=True)
        self.progress = progress
        self._model_path: str | None = None
        self._sandbox = None

    # ----- bookkeeping ---------------------------------------------------------------
    def fingerprint(self, stage: str) -> str:
        """Hash of the stage's config sections and the upstream stage's fingerprint; stages after
        ``tasks`` also hash the data version (tasks, SFT examples, preference pairs), so a rebuilt task
        set with new content redoes them."""
        dump = self.cfg.model_dump(mode="json")
        body: dict[str, Any] = {k: dump.get(k) for k in _DEPS[stage]}
        if stage == "rl":  # rl.compare shapes only rl_compare, except the shared probe interval
            body["rl"] = {k: v for k, v in body["rl"].items() if k != "compare"}
            if self.cfg.rl.compare.enabled:
                from sdk.train.compare import probe_every

                body["compare_probe_every"] = probe_every(self.cfg.rl)
        if stage in _UPSTREAM:
            body["upstream"] = self.fingerprint(_UPSTREAM[stage])
            counts = self.run_dir / "tasks" / "counts.json"
            if stage == "sft" and counts.is_file():
                try:
                    data = json.loads(counts.read_text())
                    body["taskset"] = data.get("data_version", data.get("version"))
                except json.JSONDecodeError:
                    body["taskset"] = None
        return hashlib.sha256(canonical_json(body).encode()).hexdigest()[:16]

    def state_path(self, stage: str) -> Path:
        """Where the stage's completion marker lives: ``run_dir/state/<stage>.json``."""
        return self.run_dir / "state" / f"{stage}.json"

    def is_complete(self, stage: str) -> bool:
        """True when the stage's marker exists and matches the current fingerprint."""
        path = self.state_path(stage)
        if not path.is_file():
            return False
        try:
            return json.loads(path.read_text()).get("fingerprint") == self.fingerprint(stage)
        except json.JSONDecodeError:
            return False

    def stats(self, stage: str) -> dict[str, Any]:
        """The recorded stats of a completed stage (empty when not run)."""
        path = self.state_path(stage)
        return json.loads(path.read_text()).get("stats", {}) if path.is_file() else {}

    def _mark(self, stage: str, stats: StageStats) -> None:
        data = {k: v for k, v in stats.__dict__.items() if k != "extra"}
        data.update({k: v for k, v in stats.extra.items() if k != "log_history"})
        write_json(self.state_path(stage), {"fingerprint": self.fingerprint(stage), "stats": data})

    # ----- shared resources ----------------------------------------------------------
    @property
    def model_path(self) -> str:
        """The resolved base model (fetched and converted on first use)."""
        if self._model_path is None:
            from sdk.models import resolve_model

            with self.console.status(f"resolving model {self.cfg.model.name} (first use fetches and converts it)"):
                self._model_path = resolve_model(self.cfg.model.name, self.cfg.model.cache_dir)
        return self._model_path

    @property
    def sandbox(self):
        """The sandbox, created on first use from ``cfg.sandbox``."""
        if self._sandbox is None:
            from sdk.sandbox import make_sandbox

            self._sandbox = make_sandbox(self.cfg.sandbox)
        return self._sandbox

    def close(self) -> None:
        """Release the sandbox workers."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    # ----- running -------------------------------------------------------------------
    def run(self, stages: Sequence[str] = STAGES, force: bool = False) -> dict[str, Any]:
        """Run ``stages`` in order, skipping complete ones unless ``force``.

        Returns the report dict when the report stage ran, else ``{}``.
        Raises:
            ConfigError: an unknown stage name.
            GateError: the regression gate failed (after the report is written).
        """
        from sdk import stages as impl

        unknown = [s for s in stages if s not in STAGES]
        if unknown:
            raise ConfigError(f"unknown stage(s) {unknown}", f"use some of {list(STAGES)}")
        from sdk.train.common import quiet_libraries

        quiet_libraries()
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            (self.run_dir / "config.json").write_text(self.cfg.model_dump_json(indent=2))
        except OSError as exc:
            raise ConfigError(f"cannot write the run folder {self.run_dir}: {exc.strerror or exc}",
                              "set `run_dir` (or --set run_dir=...) to a writable folder path") from exc
        result: dict[str, Any] = {}
        try:
            if "tasks" in stages and (force or not self.is_complete("tasks")):
                self.check_sources()  # a typo in the last source must not wait for the first to be read
            if any(s in ("sft", "rl", "rl_compare", "eval") and (force or not self.is_complete(s)) for s in stages):
                _ = self.model_path  # fail fast on a bad model before hours of work
            for stage in stages:
                if not force and self.is_complete(stage) and stage != "report":
                    self.console.print(f"[dim]· {stage}: complete, skipped (use --force to redo)[/dim]")
                    continue
                if not self.stage_enabled(stage):
                    self.console.print(f"[dim]· {stage}: disabled in config[/dim]")
                    continue
                self.console.rule(f"[bold]{stage}")
                # a stage being redone is not complete until it finishes again: a crash or kill inside a
                # --force re-run must not leave the old marker vouching for half-rewritten outputs
                self.state_path(stage).unlink(missing_ok=True)
                self._claim_checkpoints(stage, force)
                with StageClock(stage) as clock:
                    out = getattr(impl, f"stage_{stage}")(self)
                stats = out if isinstance(out, StageStats) else StageStats(stage)
                stats.wall_s, stats.cpu_s = clock.wall_s, clock.cpu_s
                if stage == "report":
                    result = out.extra.get("report", {})
                self._mark(stage, stats)
        finally:
            self.close()
        return result

    def stage_enabled(self, stage: str) -> bool:
        """False for ``sft``/``rl`` switched off in the config, and for ``rl_compare`` unless both
        ``rl.enabled`` and ``rl.compare.enabled``."""
        if stage == "rl_compare":
            return self.cfg.rl.enabled and self.cfg.rl.compare.enabled
        return getattr(self.cfg, stage).enabled if stage in ("sft", "rl") else True

    def _claim_checkpoints(self, stage: str, force: bool) -> None:
        """Keep a stage's trainer checkpoints only if they were written under the same fingerprint.

        TRL resumes from the newest checkpoint it finds; after a crash that is right, but after a
        config change (or ``--force``) it would silently continue the old run instead of training
        the new one. The checkpoints folder records the fingerprint it belongs to; a mismatch, a
        missing record or ``force`` deletes it (and the stage's adapter) before the stage runs. A stage
        that starts fresh (no checkpoint left) also loses the append-only logs of the earlier run
        (:data:`STAGE_LOGS`); a resumed one keeps appending to them.
        """
        import shutil

        ckpts = self.run_dir / stage / "checkpoints"
        owner = ckpts / "FINGERPRINT"
        want = self.fingerprint(stage)
        if ckpts.exists() and (force or not owner.is_file() or owner.read_text().strip() != want):
            shutil.rmtree(ckpts)
            shutil.rmtree(self.run_dir / stage / "adapter", ignore_errors=True)
        if stage in ("sft", "rl", "rl_compare"):
            if not any(ckpts.glob("checkpoint-*")):  # a fresh start: logs of an earlier run would mix in
                for name in STAGE_LOGS:
                    (self.run_dir / stage / name).unlink(missing_ok=True)
            ckpts.mkdir(parents=True, exist_ok=True)
            owner.write_text(want + "\n")

    def check_sources(self) -> None:
        """Resolve every source type and validate its options, reading nothing.

        Raises:
            ConfigError: an unknown source type or invalid connector options (names the source).
        """
        from sdk.sources import resolve_source

        for i, src in enumerate(self.cfg.sources):
            try:
                resolve_source(src.type)(src.options, self.cfg.base_dir, src.domain)
            except ConfigError as exc:
                raise ConfigError(f"sources[{i}] ({src.type}): {exc.what}", exc.fix) from exc

    def adapter_for_eval(self) -> Path | None:
        """The newest adapter: GRPO's if it ran, else SFT's, else None (base only)."""
        for stage in ("rl", "sft"):
            path = self.run_dir / stage / "adapter"
            if getattr(self.cfg, stage).enabled and (path / "adapter_config.json").is_file():
                return path
        return None
