"""The stages of a run and what each needs: one :class:`StageSpec` per :class:`Stage`.

This table is the whole stage contract. The pipeline orders, skips, fingerprints and times stages
from it; the CLI lists them from it; the report's cost table takes its stages from it. Adding a
stage is one function ``stage_x(ctx: StageContext) -> StageStats`` and one entry in :data:`SPECS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable

from sdk.run.stage_eval import stage_eval
from sdk.run.stage_report import stage_report
from sdk.run.stage_rl import rl_compare_enabled, stage_rl, stage_rl_compare
from sdk.run.stage_sft import stage_sft
from sdk.run.stage_tasks import stage_tasks

if TYPE_CHECKING:
    from sdk.config import RunConfig
    from sdk.run.bookkeeping import StageStats
    from sdk.run.context import StageContext


class Stage(str, Enum):
    """The stages, in the order a full run executes them."""

    TASKS = "tasks"
    SFT = "sft"
    RL = "rl"
    RL_COMPARE = "rl_compare"
    EVAL = "eval"
    REPORT = "report"


def _always(cfg: "RunConfig") -> bool:
    return True


def _rl_view(cfg: "RunConfig", body: dict[str, Any]) -> dict[str, Any]:
    """``rl.compare`` shapes only rl_compare, except the probe interval both arms share."""
    body["rl"] = {k: v for k, v in body["rl"].items() if k != "compare"}
    if cfg.rl.compare.enabled:
        from sdk.train.compare import probe_every

        body["compare_probe_every"] = probe_every(cfg.rl)
    return body


@dataclass(frozen=True)
class StageSpec:
    """What one stage is and needs.

    Attributes:
        stage: which stage.
        run: the stage function ``(StageContext) -> StageStats``.
        summary: one line for help texts.
        sections: the config sections whose values the stage's fingerprint hashes.
        upstream: the stage whose fingerprint this one carries (a change there redoes this one).
        enabled: whether the config switches the stage on.
        needs_model: resolve the base model before it runs (and fail fast on a bad one).
        needs_sandbox: it executes code: it gets the run's sandbox.
        trains: it writes trainer checkpoints and append-only logs (claimed or cleared before it runs).
        data_version: its fingerprint hashes the tasks stage's data version (tasks, SFT examples,
            preference pairs), so rebuilt data with new content redoes it.
        view: adjusts the hashed config sections (e.g. leaves out a sub-section another stage owns).
        always_runs: it runs on every invocation that names it, complete or not (the report).
        costed: it has a row in the report's cost table.
    """

    stage: Stage
    run: Callable[["StageContext"], "StageStats"]
    summary: str
    sections: tuple[str, ...]
    upstream: Stage | None = None
    enabled: Callable[["RunConfig"], bool] = _always
    needs_model: bool = False
    needs_sandbox: bool = False
    trains: bool = False
    data_version: bool = False
    view: Callable[["RunConfig", dict[str, Any]], dict[str, Any]] | None = None
    always_runs: bool = False
    costed: bool = True


_TRAIN = ("model", "rl", "reward", "sandbox", "seed", "tools")
SPECS: dict[Stage, StageSpec] = {spec.stage: spec for spec in (
    StageSpec(Stage.TASKS, stage_tasks, "read sources, split, validate references in the sandbox",
              ("sources", "tasks", "sandbox", "seed"), needs_sandbox=True),
    StageSpec(Stage.SFT, stage_sft, "LoRA SFT (then DPO when sft.dpo is on)", ("model", "sft", "seed"),
              upstream=Stage.TASKS, enabled=lambda cfg: cfg.sft.enabled, needs_model=True, trains=True,
              data_version=True, needs_sandbox=True),
    StageSpec(Stage.RL, stage_rl, "GRPO with sandboxed rewards from the SFT adapter", _TRAIN, upstream=Stage.SFT,
              enabled=lambda cfg: cfg.rl.enabled, needs_model=True, needs_sandbox=True, trains=True, view=_rl_view),
    StageSpec(Stage.RL_COMPARE, stage_rl_compare, "the schedule comparison's second GRPO arm (rl.compare)", _TRAIN,
              upstream=Stage.SFT, enabled=rl_compare_enabled, needs_model=True, needs_sandbox=True, trains=True,
              costed=False),
    StageSpec(Stage.EVAL, stage_eval, "generate and score base and tuned completions",
              ("model", "eval", "reward", "sandbox", "seed", "tools"), upstream=Stage.RL, needs_model=True,
              needs_sandbox=True),
    StageSpec(Stage.REPORT, stage_report, "compare, gate, write report.json and report.html", ("gate",),
              upstream=Stage.EVAL, always_runs=True, costed=False),
)}
STAGES: tuple[str, ...] = tuple(s.value for s in SPECS)


def parse_stages(names) -> tuple[Stage, ...]:
    """Stage names (strings or :class:`Stage`) as stages, in the given order.

    Raises:
        ConfigError: an unknown name (the message lists the known ones).
    """
    from sdk.errors import ConfigError

    known = {s.value: s for s in Stage}
    unknown = [str(n) for n in names if str(getattr(n, "value", n)) not in known]
    if unknown:
        raise ConfigError(f"unknown stage(s) {unknown}", f"use some of {list(known)}")
    return tuple(known[str(getattr(n, "value", n))] for n in names)


def with_upstream(target: Stage) -> tuple[Stage, ...]:
    """``target`` after every stage it depends on, in run order (e.g. eval → tasks, sft, rl, eval)."""
    chain, cur = [], SPECS[target]
    while True:
        chain.append(cur.stage)
        if cur.upstream is None:
            break
        cur = SPECS[cur.upstream]
    return tuple(s for s in SPECS if s in chain)
