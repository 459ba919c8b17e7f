"""``tuneloop loop CONFIG``: one pass of continuous retraining per call (issue 16, item 5).

A pass, under the application's loop lock (``loop_locks``: one loop per application and adapter
name; a second one is refused with who holds it and since when):

1. a running canary is judged by its rule (:func:`feedback.canary.decide_and_apply`); while it
   waits, the pass ends there (one experiment at a time);
2. new feedback since the production version's watermark is counted; below
   ``min_new_feedback`` the pass ends (``idle``);
3. the run config is trained in a fresh run folder from the production adapter
   (``sft.init_adapter``) by the configured trainer (``trainer:``; the full pipeline by default),
   evaluated and gated (the pipeline's report stage writes the verdict into the adapter's
   ``lineage.json``);
4. candidate and production answer the same held-out tasks and the same tasks replayed from
   recent feedback, with the same seeds (:mod:`feedback.versus`; ``compare:``); a mean paired drop
   beyond ``max_heldout_drop`` / ``compare.max_replay_drop`` fails the gate with the numbers, and
   so does a held-out pass@1 below production's recorded one (:func:`feedback.versus.against_production`);
5. the adapter is registered as a candidate with the new watermark, production as parent and
   the comparison in its ``eval["versus_production"]``;
6. a passing candidate starts its canary (or becomes production when there is none yet);
   a failing one stays a candidate with its reasons, never promoted.

Each step's result is saved in the lock row's state, so a pass that crashed resumes at the step
it reached (the pipeline itself skips stages that are complete). The trainer is a callable
(:data:`Trainer`) and the evaluator a :class:`feedback.versus.PairedEvaluator`, both named in the
YAML as ``module:factory`` (called with the :class:`LoopConfig`) so ``tuneloop loop CONFIG`` from
cron needs no Python glue; tests and other orchestrators can also pass them to :func:`run_pass`.
"""

from __future__ import annotations

import getpass
import importlib
import json
import os
import socket
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Literal

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from feedback.canary import CanaryRule, decide_and_apply
from feedback.registration import registration_from_folder
from feedback.registry import RegistryError, VersionRecord, app_id, get_head, get_version, register
from feedback.registry_models import LoopLock
from feedback.store import FeedbackEvent, sessions, utcnow
from feedback.transitions import end_canary, promote, start_canary
from feedback.versus import (GenerationEvaluator, PairedEvaluator, against_production, as_record, compare_sets,
                             load_tasks, paired, recorded_pairs, replay_tasks, with_comparison)
from sdk.config import expand_env, validated, yaml_mapping
from sdk.errors import ConfigError, GateError

Trainer = Callable[[Path, dict[str, Any], Path], Path]
"""``trainer(run_config, overrides, run_dir) -> adapter folder`` (trained, evaluated and gated)."""


class CanaryConfig(BaseModel):
    """How a new candidate is canaried: traffic share and the decision rule (fixed at start)."""

    model_config = ConfigDict(extra="forbid")
    fraction: float = Field(0.2, gt=0, lt=1, description="share of users/conversations sent to the candidate")
    min_samples: int = Field(50, ge=1, description="ratings per version before a decision")
    max_drop: float = Field(0.05, ge=0, le=1, description="largest allowed drop of the positive-rating rate")
    max_correction_rise: float = Field(1.0, ge=0, le=1, description="largest allowed rise of the correction rate")


class CompareConfig(BaseModel):
    """Candidate against production on the same tasks (:mod:`feedback.versus`)."""

    model_config = ConfigDict(extra="forbid")
    heldout: str | None = Field(None, description="JSONL of held-out tasks (id, prompt, reference[, seed]) for the "
                                "default evaluator")
    replay_limit: int = Field(40, ge=0, description="most recent rated interactions replayed to both (0: none)")
    max_replay_drop: float = Field(0.0, ge=0, le=1, description="largest allowed mean drop on the replayed tasks")
    max_tokens: int = Field(48, ge=1, description="new tokens per answer (default evaluator)")
    evaluator: str | None = Field(None, description="module:factory returning a PairedEvaluator, called with the "
                                  "LoopConfig (default: generation + token F1 against the references)")


class LoopConfig(BaseModel):
    """The loop's YAML (paths relative to the file)."""

    model_config = ConfigDict(extra="forbid")
    store_url: str = Field(..., description="SQLAlchemy URL of the feedback store")
    application: str = Field(..., description="application name in the store")
    adapter: str = Field(..., description="adapter name in the registry, e.g. support")
    run_config: str = Field(..., description="the tuneloop run config to train with")
    trainer: str = Field("pipeline", description="pipeline (tuneloop run, every stage) or module:factory returning "
                         "a Trainer, called with the LoopConfig")
    runs_dir: str = Field("loop_runs", description="one run folder per pass under here")
    min_new_feedback: int = Field(50, ge=1, description="feedback events since the watermark needed to retrain")
    set: dict[str, Any] = Field(default_factory=dict, description="overrides of the run config (dotted keys)")
    canary: CanaryConfig = Field(default_factory=CanaryConfig)
    lock_ttl_s: float = Field(6 * 3600, gt=0, description="a lock older than this is taken over (crashed loop)")
    max_heldout_drop: float = Field(0.0, ge=0, le=1, description="a candidate whose held-out score (paired, same "
                                    "tasks and seeds; or recorded pass@1) is below production's by more than this "
                                    "fails the gate (reason listed)")
    compare: CompareConfig = Field(default_factory=CompareConfig)
    serve_url: str | None = Field(None, description="a tuneloop server to refresh and check (V3) after a publish; "
                                  "a canary that fails the check is rolled back")
    base_dir: Path = Field(Path("."), exclude=True)

    def path(self, p: str) -> Path:
        """``p`` relative to the config file."""
        q = Path(os.path.expanduser(p))
        return q if q.is_absolute() else (self.base_dir / q).resolve()


def load_loop_config(path: str | Path) -> LoopConfig:
    """Read and validate a loop YAML. Raises :class:`ConfigError` with the field that is wrong."""
    path = Path(path)
    raw = expand_env(yaml_mapping(path, keys="`store_url:`, `application:`, `adapter:` and `run_config:`"))
    return validated(LoopConfig, {**raw, "base_dir": path.resolve().parent}, f"loop config {path}")


class LoopLockedError(RegistryError):
    """Another loop holds the lock of this application and adapter."""


@dataclass(frozen=True)
class PassResult:
    """What one pass did: ``action``, a sentence, and the version it concerned (if any)."""

    action: Literal["canary-wait", "canary-promote", "canary-rollback", "idle", "gate-failed", "canary-started",
                    "promoted-first", "publish-failed"]
    detail: str
    version: int | None = None


def holder_id() -> str:
    """``user@host:pid`` of this process."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}:{os.getpid()}"


def acquire(session: Session, aid: int, name: str, holder: str, ttl_s: float) -> LoopLock:
    """Take the loop lock (a free or expired one). Raises :class:`LoopLockedError` naming the holder."""
    try:
        session.add(LoopLock(application_id=aid, name=name, state_json="{}"))
        session.commit()
    except IntegrityError:
        session.rollback()
    now = utcnow()
    lock = session.scalars(sa.select(LoopLock).where(LoopLock.application_id == aid, LoopLock.name == name)).one()
    taken = session.execute(sa.update(LoopLock).where(
        LoopLock.id == lock.id, sa.or_(LoopLock.holder.is_(None), LoopLock.holder == holder, LoopLock.expires_at < now))
        .values(holder=holder, acquired_at=now, expires_at=now + timedelta(seconds=ttl_s))
        .execution_options(synchronize_session=False)).rowcount
    session.commit()
    session.expire_all()
    lock = session.get(LoopLock, lock.id)
    if taken != 1:
        raise LoopLockedError(f"the loop of {name} is held by {lock.holder} since {lock.acquired_at:%Y-%m-%d %H:%M:%S} "
                              f"UTC (until {lock.expires_at:%H:%M:%S} unless released)",
                              "wait for that pass to finish; a crashed loop's lock is taken over after lock_ttl_s")
    return lock


def release(session: Session, lock: LoopLock, holder: str, state: dict[str, Any]) -> None:
    """Give the lock back, keeping ``state`` (where the last pass got to)."""
    session.execute(sa.update(LoopLock).where(LoopLock.id == lock.id, LoopLock.holder == holder)
                    .values(holder=None, expires_at=None, state_json=json.dumps(state, default=str))
                    .execution_options(synchronize_session=False))
    session.commit()


def new_feedback(session: Session, aid: int, after: int) -> tuple[int, int]:
    """(count, highest id) of the application's feedback events with id > ``after``."""
    count, top = session.execute(sa.select(sa.func.count(FeedbackEvent.id), sa.func.max(FeedbackEvent.id))
                                 .where(FeedbackEvent.application_id == aid, FeedbackEvent.id > after)).one()
    return int(count), int(top or after)


def pipeline_trainer(run_config: Path, overrides: dict[str, Any], run_dir: Path) -> Path:
    """The default :data:`Trainer`: ``tuneloop run`` (every stage) into ``run_dir``; a failed gate is
    recorded in the adapter's lineage, so :class:`GateError` is not an error here."""
    from sdk.config import load_config
    from sdk.run.pipeline import Pipeline

    cfg = load_config(run_config, {**overrides, "run_dir": str(run_dir)})
    pipe = Pipeline(cfg, progress=False)
    try:
        pipe.run()
    except GateError:
        pass
    finally:
        pipe.close()
    adapter = pipe.adapter_for_eval()
    if adapter is None:
        raise ConfigError(f"the run in {run_dir} trained no adapter", "enable sft or rl in the run config")
    return adapter


def from_dotted(ref: str, cfg: LoopConfig) -> Any:
    """Call the factory ``module:attr`` with ``cfg`` (what ``trainer:`` and ``compare.evaluator:`` name).

    Raises:
        ConfigError: not ``module:attr``, or the module or attribute cannot be found.
    """
    module, _, attr = ref.partition(":")
    try:
        factory = getattr(importlib.import_module(module), attr, None) if module and attr else None
    except ImportError as exc:
        raise ConfigError(f"cannot import {module!r} named in the loop config: {exc}",
                          "check the module path (it must be importable from where tuneloop runs)") from None
    if factory is None:
        raise ConfigError(f"{ref!r} is not module:attr or has no such attribute", "e.g. mypkg.loop:make_trainer")
    return factory(cfg)


def make_trainer(cfg: LoopConfig) -> Trainer:
    """The trainer ``cfg.trainer`` names."""
    return pipeline_trainer if cfg.trainer == "pipeline" else from_dotted(cfg.trainer, cfg)


def make_evaluator(cfg: LoopConfig, base: str) -> PairedEvaluator:
    """The evaluator ``cfg.compare.evaluator`` names, else :class:`GenerationEvaluator` on ``base``."""
    c = cfg.compare
    if c.evaluator:
        return from_dotted(c.evaluator, cfg)
    return GenerationEvaluator(base, load_tasks(cfg.path(c.heldout)) if c.heldout else [], c.max_tokens)


def run_pass(cfg: LoopConfig, trainer: Trainer | None = None, holder: str | None = None,
             evaluator: PairedEvaluator | None = None) -> PassResult:
    """One pass of the loop (see the module docstring); ``trainer`` and ``evaluator`` default to the
    ones the config names (:func:`make_trainer`, :func:`make_evaluator`).

    Raises:
        LoopLockedError: another loop holds the lock. ConfigError, RegistryError: bad config or
        registry state (the lock is released and the state kept for the next pass).
    """
    holder = holder or holder_id()
    make = sessions(cfg.store_url)
    with make() as s:
        aid = app_id(s, cfg.application)
        lock = acquire(s, aid, cfg.adapter, holder, cfg.lock_ttl_s)
        state = json.loads(lock.state_json or "{}")
        try:
            result = _steps(s, cfg, trainer or make_trainer(cfg), state, evaluator)
            state = {"last": result.action, "version": result.version}
            return result
        finally:
            release(s, lock, holder, state)


def _steps(s: Session, cfg: LoopConfig, trainer: Trainer, state: dict[str, Any],
           evaluator: PairedEvaluator | None) -> PassResult:
    """The pass body; ``state`` is updated in place after each step that is costly to redo."""
    head = _head(s, cfg)
    if head is not None and head.canary is not None:
        d = decide_and_apply(s, cfg.application, cfg.adapter, actor="tuneloop loop")
        return PassResult(f"canary-{d.action}", d.reason, head.canary)  # type: ignore[arg-type]
    production = get_version(s, cfg.application, cfg.adapter, "production") if head and head.production else None
    watermark = (production.feedback_watermark or 0) if production else 0
    if "adapter" not in state:
        if "run_dir" not in state:  # a fresh pass (a resumed one keeps its folder and watermark)
            count, top = new_feedback(s, app_id(s, cfg.application), watermark)
            if count < cfg.min_new_feedback:
                return PassResult("idle", f"{count} feedback events since watermark {watermark}; "
                                          f"min_new_feedback is {cfg.min_new_feedback}")
            overrides = dict(cfg.set)
            if production is not None:
                overrides["sft.init_adapter"] = production.adapter_path
            state.update(step="training", run_dir=str(cfg.path(cfg.runs_dir) / f"pass-{top}"), watermark=top,
                         overrides=overrides)
            _save(s, cfg, state)
        state["adapter"] = str(trainer(cfg.path(cfg.run_config), state["overrides"], Path(state["run_dir"])))
        _save(s, cfg, state)
    if production is not None and "compare" not in state:
        state["compare"] = versus_production(s, cfg, state, production, evaluator)
        _save(s, cfg, state)
    return _publish(s, cfg, state, production.number if production else None)


def versus_production(s: Session, cfg: LoopConfig, state: dict[str, Any], production: VersionRecord,
                      evaluator: PairedEvaluator | None) -> dict[str, Any]:
    """Candidate ``state["adapter"]`` against ``production`` on the held-out tasks and the tasks replayed
    from the ``compare.replay_limit`` latest rated interactions up to the new watermark (same seeds);
    the :func:`feedback.versus.as_record` of the two comparisons."""
    ev = evaluator or make_evaluator(cfg, production.base_model)
    sets = {"heldout": ev.heldout(),
            "replay": replay_tasks(s, app_id(s, cfg.application), state["watermark"], cfg.compare.replay_limit)
            if cfg.compare.replay_limit else []}
    drops = {"heldout": cfg.max_heldout_drop, "replay": cfg.compare.max_replay_drop}
    found = compare_sets(ev, state["adapter"], production.adapter_path, sets, drops)
    note = {}
    if not sets["heldout"]:  # pipeline runs: their own verifier-scored held-out rows
        pairs = recorded_pairs(state["adapter"], production.adapter_path)
        if isinstance(pairs, str):
            note = {"heldout_note": f"no held-out pairs: {pairs}"}
        else:
            found[0] = paired("heldout", *pairs, cfg.max_heldout_drop)
            note = {"heldout_note": "pass rates from both runs' eval/tuned.jsonl (same tasks, seed and eval settings)"}
    return {"production": production.label, **as_record(found), **note}


def _publish(s: Session, cfg: LoopConfig, state: dict[str, Any], parent: int | None) -> PassResult:
    reg = registration_from_folder(state["adapter"], feedback_watermark=state["watermark"], parent=parent,
                                   config={"loop": cfg.model_dump(mode="json")}, probe=True)
    if "compare" in state:
        reg = with_comparison(reg, state["compare"])
    if parent is not None and reg.gate_passed:
        reg = against_production(reg, get_version(s, cfg.application, cfg.adapter, parent), cfg.max_heldout_drop)
    v = register(s, cfg.application, cfg.adapter, reg, actor="tuneloop loop", reason=f"retrained to {state['watermark']}")
    state.clear()
    if v.gate_passed is not True:
        return PassResult("gate-failed", f"{v.label} stays a candidate: " + "; ".join(v.gate_reasons or ("not gated",)),
                          v.number)
    if parent is None:
        promote(s, cfg.application, cfg.adapter, v.number, actor="tuneloop loop", reason="first version, gate passed")
        return PassResult("promoted-first", f"{v.label} is the first production version", v.number)
    rule = CanaryRule(min_samples=cfg.canary.min_samples, max_drop=cfg.canary.max_drop,
                      max_correction_rise=cfg.canary.max_correction_rise)
    start_canary(s, cfg.application, cfg.adapter, v.number, cfg.canary.fraction, rule.to_dict(),
                 actor="tuneloop loop", reason=f"candidate trained on feedback up to {v.feedback_watermark}")
    problem = _check_published(cfg, v)
    if problem:
        end_canary(s, cfg.application, cfg.adapter, actor="tuneloop loop", reason=f"publish check failed: {problem}")
        return PassResult("publish-failed", f"{v.label} rolled back: {problem}", v.number)
    return PassResult("canary-started", f"{v.label} gets {cfg.canary.fraction:.0%} of traffic", v.number)


def _check_published(cfg: LoopConfig, version) -> str | None:
    """Refresh the configured server and run :func:`feedback.publish.verify_served`; the problem or None."""
    if not cfg.serve_url:
        return None
    import httpx

    from feedback.publish import verify_served
    from sdk.serve.preflight import ServeError

    with httpx.Client(base_url=cfg.serve_url, timeout=60) as client:
        try:
            client.post("/v1/tuneloop/refresh")
            verify_served(client, version)
        except (ServeError, httpx.HTTPError) as exc:
            return getattr(exc, "what", None) or f"{type(exc).__name__}: {exc}"
    return None


def _head(s: Session, cfg: LoopConfig):
    try:
        return get_head(s, cfg.application, cfg.adapter)
    except RegistryError:
        return None


def _save(s: Session, cfg: LoopConfig, state: dict[str, Any]) -> None:
    """Persist the pass state in the lock row (read back by a resumed pass)."""
    aid = app_id(s, cfg.application)
    s.execute(sa.update(LoopLock).where(LoopLock.application_id == aid, LoopLock.name == cfg.adapter)
              .values(state_json=json.dumps(state, default=str)).execution_options(synchronize_session=False))
    s.commit()
