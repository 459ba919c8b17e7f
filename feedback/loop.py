"""``tuneloop loop CONFIG``: one pass of continuous retraining per call (issue 16, item 5).

A pass, under the application's loop lock (``loop_locks``: one loop per application and adapter
name; a second one is refused with who holds it and since when):

1. a running canary is judged by its rule (:func:`feedback.canary.decide_and_apply`); while it
   waits, the pass ends there (one experiment at a time);
2. new feedback since the production version's watermark is counted; below
   ``min_new_feedback`` the pass ends (``idle``);
3. the run config is trained in a fresh run folder from the production adapter
   (``sft.init_adapter``), evaluated and gated (the pipeline's report stage writes the verdict
   into the adapter's ``lineage.json``); a candidate whose held-out pass@1 is below production's
   recorded one by more than ``max_heldout_drop`` fails the gate too (:func:`against_production`);
4. the adapter is registered as a candidate with the new watermark and production as parent;
5. a passing candidate starts its canary (or becomes production when there is none yet);
   a failing one stays a candidate with its reasons, never promoted.

Each step's result is saved in the lock row's state, so a pass that crashed resumes at the step
it reached (the pipeline itself skips stages that are complete). The trainer is a callable
(:data:`Trainer`) so tests and other orchestrators can swap it.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Literal

import sqlalchemy as sa
import yaml
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from feedback.canary import CanaryRule, decide_and_apply
from feedback.registration import registration_from_folder
from feedback.registry import (Registration, RegistryError, VersionRecord, app_id, get_head, get_version,
                               register)
from feedback.registry_models import LoopLock
from feedback.store import FeedbackEvent, sessions, utcnow
from feedback.transitions import end_canary, promote, start_canary
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


class LoopConfig(BaseModel):
    """The loop's YAML (paths relative to the file)."""

    model_config = ConfigDict(extra="forbid")
    store_url: str = Field(..., description="SQLAlchemy URL of the feedback store")
    application: str = Field(..., description="application name in the store")
    adapter: str = Field(..., description="adapter name in the registry, e.g. support")
    run_config: str = Field(..., description="the tuneloop run config to train with")
    runs_dir: str = Field("loop_runs", description="one run folder per pass under here")
    min_new_feedback: int = Field(50, ge=1, description="feedback events since the watermark needed to retrain")
    set: dict[str, Any] = Field(default_factory=dict, description="overrides of the run config (dotted keys)")
    canary: CanaryConfig = Field(default_factory=CanaryConfig)
    lock_ttl_s: float = Field(6 * 3600, gt=0, description="a lock older than this is taken over (crashed loop)")
    max_heldout_drop: float = Field(0.0, ge=0, le=1, description="a candidate whose held-out pass@1 is below "
                                    "production's recorded one by more than this fails the gate (reason listed)")
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
    try:
        raw = yaml.safe_load(path.read_text()) or {}
        return LoopConfig(**raw, base_dir=path.resolve().parent)
    except (OSError, yaml.YAMLError, ValueError, TypeError) as exc:
        raise ConfigError(f"cannot read loop config {path}: {exc}", "see feedback.loop.LoopConfig for the keys") from None


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


def run_pass(cfg: LoopConfig, trainer: Trainer = pipeline_trainer, holder: str | None = None) -> PassResult:
    """One pass of the loop (see the module docstring).

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
            result = _steps(s, cfg, trainer, state)
            state = {"last": result.action, "version": result.version}
            return result
        finally:
            release(s, lock, holder, state)


def _steps(s: Session, cfg: LoopConfig, trainer: Trainer, state: dict[str, Any]) -> PassResult:
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
    return _publish(s, cfg, state, production.number if production else None)


def against_production(reg: Registration, production: VersionRecord | None, max_drop: float) -> Registration:
    """``reg`` with its gate failed when its held-out pass@1 (``eval["heldout_pass_at_1"]["tuned"]``)
    is below production's recorded one by more than ``max_drop``; unchanged when either is missing.

    The pipeline's own gate compares the candidate with the base model; this compares the figures
    the two versions' reports recorded (same held-out split when the task set is unchanged).
    """
    mine = (reg.eval.get("heldout_pass_at_1") or {}).get("tuned")
    theirs = ((production.eval if production else {}).get("heldout_pass_at_1") or {}).get("tuned")
    if mine is None or theirs is None or mine >= theirs - max_drop:
        return reg
    reason = (f"held-out pass@1 {mine:.3f} is below production {production.label}'s {theirs:.3f} "
              f"(max_heldout_drop {max_drop})")
    return replace(reg, gate_passed=False, gate_reasons=(*reg.gate_reasons, reason))


def _publish(s: Session, cfg: LoopConfig, state: dict[str, Any], parent: int | None) -> PassResult:
    reg = registration_from_folder(state["adapter"], feedback_watermark=state["watermark"], parent=parent,
                                   config={"loop": cfg.model_dump(mode="json")}, probe=True)
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
