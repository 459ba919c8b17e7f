"""Where every artefact of a run lives: :class:`RunLayout` is the only owner of run-folder paths.

A run folder (``run_dir`` of the config) holds one sub-folder per stage and a ``state/`` folder of
completion markers::

    config.json                     the validated config of the last invocation
    state/<stage>.json              {"fingerprint": ..., "stats": {...}} once a stage finished
    tasks/tasks.jsonl               the task set (+ tasks.quarantine.jsonl), sft_examples.jsonl,
          preference_pairs.jsonl, counts.json
    sft/adapter, sft/log_history.json, sft/log.jsonl, sft/checkpoints/   (DPO: sft/dpo, sft/adapter_sft)
    rl/adapter, rl/log_history.json, rl/rewards.jsonl, rl/traces.jsonl, rl/heldout_curve.json
    rl_compare/...                  the same for the schedule comparison's second arm
    eval/base.jsonl, eval/tuned.jsonl   rows with raw completions (rescoring needs no generation); with
          eval.select: validation also eval/selection.json and eval/validation/<candidate>.jsonl
    report.json, report.html
    export/                         the merged model of ``tuneloop export``

Everything else asks a :class:`RunLayout` for a path instead of spelling one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# append-only per-stage logs, cleared when a training stage starts from scratch (kept on resume)
STAGE_LOGS = ("log.jsonl", "rewards.jsonl", "traces.jsonl", "too_long.jsonl", "bad_rows.jsonl")
CURVE_FILE = "heldout_curve.json"


@dataclass(frozen=True)
class RunLayout:
    """The paths of one run folder (nothing is created or read by constructing it).

    Args:
        root: the run folder (``RunConfig.run_path``).
    """

    root: Path

    # ----- run level -----------------------------------------------------------------
    @property
    def config_json(self) -> Path:
        """The validated config of the last invocation (``config.json``)."""
        return self.root / "config.json"

    def marker(self, stage: str) -> Path:
        """The completion marker of ``stage``: ``state/<stage>.json``."""
        return self.root / "state" / f"{stage}.json"

    def stage_dir(self, stage: str) -> Path:
        """The output folder of ``stage`` (``tasks``, ``sft``, ``rl``, ``rl_compare``, ``eval``)."""
        return self.root / stage

    @property
    def report_json(self) -> Path:
        """The report as JSON."""
        return self.root / "report.json"

    @property
    def report_html(self) -> Path:
        """The report as one self-contained HTML page."""
        return self.root / "report.html"

    @property
    def export_dir(self) -> Path:
        """Default folder of the merged model written by ``tuneloop export``."""
        return self.root / "export"

    # ----- tasks stage ----------------------------------------------------------------
    @property
    def tasks_jsonl(self) -> Path:
        """The task set (its quarantine sits beside it as ``tasks.quarantine.jsonl``)."""
        return self.root / "tasks" / "tasks.jsonl"

    @property
    def quarantine_jsonl(self) -> Path:
        """Tasks quarantined while building the task set, with reasons."""
        return self.root / "tasks" / "tasks.quarantine.jsonl"

    @property
    def sft_examples_jsonl(self) -> Path:
        """SFT examples from feedback sources."""
        return self.root / "tasks" / "sft_examples.jsonl"

    @property
    def preference_pairs_jsonl(self) -> Path:
        """Preference pairs (chosen/rejected) from feedback sources, for DPO."""
        return self.root / "tasks" / "preference_pairs.jsonl"

    @property
    def counts_json(self) -> Path:
        """Per-source counts, splits, task-set and data versions, quarantine reasons."""
        return self.root / "tasks" / "counts.json"

    # ----- training stages -------------------------------------------------------------
    def adapter(self, stage: str) -> Path:
        """The LoRA adapter folder a training stage saved (``<stage>/adapter``)."""
        return self.stage_dir(stage) / "adapter"

    def midway_adapter(self, stage: str) -> Path:
        """The adapter a training stage saved half way (``<stage>/midway/adapter``, ``rl.eval_midway``)."""
        return self.stage_dir(stage) / "midway" / "adapter"

    def checkpoints(self, stage: str) -> Path:
        """The trainer checkpoints of a training stage (``<stage>/checkpoints``)."""
        return self.stage_dir(stage) / "checkpoints"

    def checkpoints_owner(self, stage: str) -> Path:
        """The fingerprint the checkpoints of ``stage`` were written under."""
        return self.checkpoints(stage) / "FINGERPRINT"

    def log_history(self, stage: str) -> Path:
        """The trainer's log history of ``stage`` (TRL keys, one dict per logged step)."""
        return self.stage_dir(stage) / "log_history.json"

    def stage_logs(self, stage: str) -> tuple[Path, ...]:
        """The append-only logs of a training stage (:data:`STAGE_LOGS`)."""
        return tuple(self.stage_dir(stage) / name for name in STAGE_LOGS)

    def rewards_jsonl(self, stage: str) -> Path:
        """One line per scored GRPO completion of ``stage`` (``rl`` or ``rl_compare``)."""
        return self.stage_dir(stage) / "rewards.jsonl"

    def traces_jsonl(self, stage: str) -> Path:
        """Multi-turn tool rollout traces of ``stage``."""
        return self.stage_dir(stage) / "traces.jsonl"

    def heldout_curve(self, stage: str) -> Path:
        """The held-out probe curve of a GRPO arm (``<stage>/heldout_curve.json``)."""
        return self.stage_dir(stage) / CURVE_FILE

    # ----- eval stage -----------------------------------------------------------------
    def eval_rows(self, label: str) -> Path:
        """Evaluation rows of one side (``base`` or ``tuned``), raw completions included."""
        return self.root / "eval" / f"{label}.jsonl"

    def validation_rows(self, label: str) -> Path:
        """A candidate adapter's rows on the validation split (``eval/validation/<label>.jsonl``), the
        rows the shipped adapter is chosen on (``eval.select: validation``)."""
        return self.root / "eval" / "validation" / f"{label}.jsonl"

    @property
    def selection_json(self) -> Path:
        """Which adapter ships as ``tuned`` and why (``eval/selection.json``, ``eval.select: validation``)."""
        return self.root / "eval" / "selection.json"
