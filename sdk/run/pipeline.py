"""The main job: sources → task set → LoRA SFT → GRPO → evaluation → report, in a run folder.

:meth:`Pipeline.run` walks the stages of :data:`sdk.run.spec.SPECS` in order. Each stage writes its
outputs under the run folder (:class:`sdk.run.layout.RunLayout`) and, last, a marker
``state/<stage>.json`` holding a fingerprint of everything it depends on (its config sections and
the upstream stage's fingerprint; after the tasks stage, the data version too). A re-run skips a
stage whose marker matches, so a crashed run resumes at the stage that did not finish (and TRL
resumes inside that stage from its last checkpoint); changing a stage's config re-runs it and
everything downstream. ``force=True`` re-runs every stage named. ``rl_compare`` (``rl.compare``)
hangs off ``sft`` beside ``rl``: nothing downstream depends on it, so changing only the comparison
re-runs only it and the report.

The run owns one sandbox (created when the first stage that executes code starts, closed when the
run ends) and resolves the base model once, before the first stage that needs it.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from sdk.config import RunConfig
from sdk.errors import ConfigError
from sdk.run.bookkeeping import StageClock, StageStats, read_marker, write_marker
from sdk.run.context import RunInputs, StageContext, adapter_for_eval
from sdk.run.health import refuse_stage
from sdk.run.layout import RunLayout
from sdk.run.spec import SPECS, STAGES, Stage, StageSpec, parse_stages
from sdk.train.quiet import quiet_warnings
from sdk.types import canonical_json

__all__ = ["Pipeline", "STAGES", "Stage", "config_diff"]


def config_diff(before: Any, after: Any, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """``(dotted key, old, new)`` for every leaf that differs between two JSON-like values."""
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for key in sorted(set(before) | set(after)):
            out += config_diff(before.get(key), after.get(key), f"{prefix}{key}.")
        return out
    return [] if before == after else [(prefix.rstrip("."), before, after)]

# the CLI command that brings a stage (and everything before it) up to date
_COMMAND = {Stage.TASKS: "tasks build", Stage.SFT: "sft", Stage.RL: "rl", Stage.RL_COMPARE: "rl",
            Stage.EVAL: "eval", Stage.REPORT: "report"}


class Pipeline:
    """Runs stages of one :class:`RunConfig` into ``cfg.run_path``.

    Args:
        cfg: the validated config.
        console: where progress and summaries go (stderr by default).
        progress: show progress bars (off in tests).
    """

    def __init__(self, cfg: RunConfig, console: Console | None = None, progress: bool = True) -> None:
        self.cfg = cfg
        self.layout = RunLayout(cfg.run_path)
        self.run_dir = self.layout.root
        self.console = console or Console(stderr=True)
        self.progress = progress
        self.inputs = RunInputs(self.layout)
        self._model_path: str | None = None
        self._sandbox = None

    # ----- bookkeeping ---------------------------------------------------------------
    def fingerprint_body(self, stage: str | Stage) -> dict[str, Any]:
        """What the stage's fingerprint hashes: its config sections (as the spec's view shows them),
        the upstream stage's fingerprint and, where the spec says so, the task set's data version."""
        spec = SPECS[Stage(stage)]
        dump = self.cfg.model_dump(mode="json")
        body: dict[str, Any] = {k: dump.get(k) for k in spec.sections}
        if spec.view is not None:
            body = spec.view(self.cfg, body)
        if spec.upstream is not None:
            body["upstream"] = self.fingerprint(spec.upstream)
        if spec.data_version and self.layout.counts_json.is_file():
            counts = self.inputs.counts()
            body["taskset"] = counts.get("data_version", counts.get("version"))
        return body

    def fingerprint(self, stage: str | Stage) -> str:
        """Hash (16 hex) of :meth:`fingerprint_body`."""
        return hashlib.sha256(canonical_json(self.fingerprint_body(stage)).encode()).hexdigest()[:16]

    def is_complete(self, stage: str | Stage) -> bool:
        """True when the stage's marker exists and matches the current fingerprint."""
        marker = read_marker(self.layout.marker(Stage(stage).value))
        return marker is not None and marker.get("fingerprint") == self.fingerprint(stage)

    def stats(self, stage: str | Stage) -> dict[str, Any]:
        """The recorded stats of a finished stage (empty when it has not run)."""
        return (read_marker(self.layout.marker(Stage(stage).value)) or {}).get("stats", {})

    def stage_enabled(self, stage: str | Stage) -> bool:
        """Whether the config switches ``stage`` on (its spec's ``enabled``)."""
        return SPECS[Stage(stage)].enabled(self.cfg)

    def adapter_for_eval(self) -> Path | None:
        """The adapter the run ships (:func:`sdk.run.shipped.shipped_adapter`): chosen on validation, else
        the newest (RL's, else SFT's), else None (base only)."""
        return adapter_for_eval(self.cfg, self.layout)

    # ----- shared resources ----------------------------------------------------------
    @property
    def model_path(self) -> str:
        """The resolved base model (fetched and converted on first use)."""
        if self._model_path is None:
            from sdk.models import local_model_name, resolve_model

            name = local_model_name(self.cfg.model.name, self.cfg.base_dir)
            with self.console.status(f"resolving model {name} (first use fetches and converts it)"):
                self._model_path = resolve_model(name, self.cfg.model.cache_dir)
        return self._model_path

    @property
    def sandbox(self):
        """The run's one sandbox, created on first use from ``cfg.sandbox``."""
        if self._sandbox is None:
            from sdk.sandbox import make_sandbox

            self._sandbox = make_sandbox(self.cfg.sandbox)
        return self._sandbox

    def close(self) -> None:
        """Release the sandbox workers."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def context(self, spec: StageSpec) -> StageContext:
        """What ``spec``'s stage receives (the model and sandbox only when the spec asks for them)."""
        return StageContext(cfg=self.cfg, layout=self.layout, inputs=self.inputs, console=self.console,
                            progress=self.progress, fingerprint=self.fingerprint(spec.stage),
                            complete=frozenset(s.value for s in SPECS if self.is_complete(s)),
                            model_path=self.model_path if spec.needs_model else "",
                            sandbox=self.sandbox if spec.needs_sandbox else None)

    # ----- running -------------------------------------------------------------------
    def run(self, stages: Sequence[str | Stage] = STAGES, force: bool = False,
            redo: Sequence[str | Stage] = ()):
        """Run ``stages`` in order, skipping complete ones.

        Args:
            stages: the stages to run, in run order.
            force: redo every stage of ``stages`` even when complete.
            redo: redo only these (a command's own stages: ``tuneloop sft --force`` redoes SFT, not
                the tasks stage it may have to run first).
        Returns:
            the :class:`sdk.eval.report.EvalReport` when the report stage ran, else None.
        Raises:
            ConfigError: an unknown stage name, an unwritable run folder, or a stage whose input
                (an enabled upstream stage) is missing or out of date and not among ``stages``.
            GateError: the regression gate failed (after the report is written).
        """
        todo = parse_stages(stages)
        again = set(todo) if force else set(parse_stages(redo))
        self._start_run_folder()
        report = None
        try:
            self._fail_fast(todo, again)  # before the slow library imports: a typo costs seconds
            quiet_warnings()  # the libraries' own settings wait for a stage that uses them (_run_one)
            for stage in todo:
                out = self._run_one(SPECS[stage], stage in again)
                if out is not None and stage is Stage.REPORT:
                    report = out.output
        finally:
            self.close()
        return report

    def _start_run_folder(self) -> None:
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self.layout.config_json.write_text(self.cfg.model_dump_json(indent=2))
        except OSError as exc:
            raise ConfigError(f"cannot write the run folder {self.run_dir}: {exc.strerror or exc}",
                              "set `run_dir` (or --set run_dir=...) to a writable folder path") from exc

    def _fail_fast(self, todo: tuple[Stage, ...], again: set[Stage]) -> None:
        """Check every source's options and resolve the model before hours of work."""
        from sdk.run.stage_tasks import check_sources

        pending = [s for s in todo if s in again or not self.is_complete(s)]
        if Stage.TASKS in pending:
            check_sources(self.cfg)  # a typo in the last source must not wait for the first to be read
        if any(SPECS[s].needs_model for s in pending):
            _ = self.model_path

    def _run_one(self, spec: StageSpec, force: bool) -> StageStats | None:
        """Run one stage unless it is complete or disabled; returns its stats (None when not run)."""
        name = spec.stage.value
        if not force and not spec.always_runs and self.is_complete(spec.stage):
            self.console.print(f"[dim]· {name}: complete, skipped (use --force to redo)[/dim]")
            return None
        if not spec.enabled(self.cfg):
            self.console.print(f"[dim]· {name}: disabled in config[/dim]")
            return None
        self.check_inputs(spec.stage)
        refuse_stage(name, self.inputs.counts().get("health") or [])
        if spec.stage is not Stage.TASKS:  # torch, transformers, datasets: seconds that `tasks build` skips
            from sdk.train.common import quiet_libraries

            quiet_libraries()
        self.console.rule(f"[bold]{name}")
        # a stage being redone is not complete until it finishes again: a crash or kill inside a
        # --force re-run must not leave the old marker vouching for half-rewritten outputs
        self.layout.marker(name).unlink(missing_ok=True)
        self._claim_checkpoints(spec, force)
        ctx = self.context(spec)
        with StageClock() as clock:
            stats = spec.run(ctx)
        stats = stats.timed(clock)
        if ctx.scorers:  # the stage scored completions through ctx.score: how many repeats were not re-run
            memo = ctx.scorers[0]
            stats.extra["score_memo"] = {"scored": memo.misses, "reused": memo.hits}
            self.console.print(f"  score memo: {memo.hits} repeated completions reused, {memo.misses} scored")
        if spec.stage is Stage.TASKS:
            self.inputs.forget()
        write_marker(self.layout.marker(name), self.fingerprint(spec.stage), stats, self.fingerprint_body(spec.stage))
        return stats

    def stale_inputs(self, stage: str | Stage) -> list[tuple[Stage, str]]:
        """The enabled upstream stages of ``stage`` (all the way to the tasks stage) that are not
        current, each with why: ``has not run`` or ``changed since it ran``."""
        out = []
        up = SPECS[Stage(stage)].upstream
        while up is not None:
            spec = SPECS[up]
            if spec.enabled(self.cfg) and not self.is_complete(up):
                marker = read_marker(self.layout.marker(up.value))
                out.append((up, "has not run" if marker is None else self._why_changed(up, marker)))
            up = spec.upstream
        return out

    def _why_changed(self, stage: Stage, marker: dict[str, Any]) -> str:
        """``changed since it ran``, naming the settings that differ from the marker's (``key old → new``)."""
        before = marker.get("inputs")
        if not isinstance(before, dict):
            return "changed since it ran (its config or an earlier stage changed)"
        now = self.fingerprint_body(stage)
        diffs = config_diff({k: v for k, v in before.items() if k != "upstream"},
                            {k: v for k, v in now.items() if k != "upstream"})
        if not diffs:
            return "changed since it ran (an earlier stage changed)"
        shown = ", ".join(f"{k} {a!r} → {b!r}" for k, a, b in diffs[:4]) + (" …" if len(diffs) > 4 else "")
        return f"changed since it ran ({shown})"

    def check_inputs(self, stage: str | Stage) -> None:
        """Refuse to run ``stage`` on missing or out-of-date inputs.

        Raises:
            ConfigError: names each stale upstream stage, why, and the command that brings it up to date.
        """
        stale = self.stale_inputs(stage)
        if stale:
            what = "; ".join(f"{s.value} {why}" for s, why in stale)
            cmd = _COMMAND[SPECS[Stage(stage)].upstream]  # runs the whole missing chain up to this input
            raise ConfigError(f"{Stage(stage).value} needs current inputs, but {what}",
                              f"run `tuneloop {cmd} CONFIG` (or `tuneloop run CONFIG` for the whole chain) "
                              "with the same --set options, then this command again")

    def _claim_checkpoints(self, spec: StageSpec, force: bool) -> None:
        """Keep a stage's trainer checkpoints only if they were written under the same fingerprint.

        TRL resumes from the newest checkpoint it finds; after a crash that is right, but after a
        config change (or ``--force``) it would silently continue the old run instead of training
        the new one. The checkpoints folder records the fingerprint it belongs to; a mismatch, a
        missing record or ``force`` deletes it (and the stage's adapter) before the stage runs. A stage
        that starts fresh (no checkpoint left) also loses the append-only logs of the earlier run
        (:data:`sdk.run.layout.STAGE_LOGS`); a resumed one keeps appending to them.
        """
        name = spec.stage.value
        ckpts, owner = self.layout.checkpoints(name), self.layout.checkpoints_owner(name)
        want = self.fingerprint(spec.stage)
        if ckpts.exists() and (force or not owner.is_file() or owner.read_text().strip() != want):
            shutil.rmtree(ckpts)
            shutil.rmtree(self.layout.adapter(name), ignore_errors=True)
        if spec.trains:
            if not any(ckpts.glob("checkpoint-*")):  # a fresh start: logs of an earlier run would mix in
                for log in self.layout.stage_logs(name):
                    log.unlink(missing_ok=True)
            ckpts.mkdir(parents=True, exist_ok=True)
            owner.write_text(want + "\n")
