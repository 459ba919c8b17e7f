"""The adapter registry (issue 16): versions with lineage, reads, and registration.

Each application names its adapters (e.g. ``support``); every registered folder becomes the next
version ``support@1``, ``support@2``, ... with its full lineage (base model and its hash, task-set
and data versions, the feedback watermark it was trained up to, config, parent version, code
version), evaluation results and gate verdict. State changes (candidate → canary → production →
retired) live in :mod:`feedback.transitions`; every change is one row of the audit log.

ORM rows never leave this module and :mod:`feedback.transitions`: callers get frozen
:class:`VersionRecord`, :class:`HeadRecord` and :class:`EventRecord`. Every function is scoped to
one application (the API authorises it by API key; the CLI names it).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field, fields
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version as pkg_version
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from feedback.registry_models import AdapterHead, AdapterVersion, RegistryEvent
from feedback.store import Application
from sdk.errors import TuneloopError

ALIASES = ("production", "canary")


class RegistryError(TuneloopError):
    """A registry request that cannot be done; ``status`` is its HTTP status in the API."""

    status = 409


class UnknownError(RegistryError):
    """No such application, adapter name or version."""

    status = 404


class GateRefusedError(RegistryError):
    """The version's gate failed (or never ran): it cannot be canaried or promoted."""

    status = 409
    exit_code = 3


class ConflictError(RegistryError):
    """Another transition won the race, or the state does not allow this one."""


@dataclass(frozen=True)
class Registration:
    """What is registered: an adapter folder and everything that made it.

    Attributes:
        adapter_path: the adapter folder (``adapter_config.json`` + weights).
        adapter_sha256: :func:`sdk.serve.preflight.adapter_digest` of it.
        lora_rank: its largest rank (``r`` or a ``rank_pattern`` value).
        base_model, base_model_sha256: the base it was trained on and that base's digest.
        taskset_version, data_version: content versions of the tasks and of the data read.
        feedback_watermark: the last feedback event id the training data included.
        config: the training config (JSON-able dict).
        parent: the version number it was trained from (same name), or ``None``.
        code_version: tuneloop's version and commit.
        eval: evaluation results (e.g. held-out pass@1 of base and tuned).
        gate_passed, gate_reasons: the regression gate's verdict (``None``: never judged).
        probe: ``{"prompt", "token_ids", "logprobs"}`` from the trained model (V3), or ``None``.
    """

    adapter_path: str
    adapter_sha256: str
    lora_rank: int
    base_model: str
    base_model_sha256: str
    taskset_version: str = ""
    data_version: str = ""
    feedback_watermark: int | None = None
    config: dict[str, Any] = field(default_factory=dict)
    parent: int | None = None
    code_version: str = ""
    eval: dict[str, Any] = field(default_factory=dict)
    gate_passed: bool | None = None
    gate_reasons: tuple[str, ...] = ()
    probe: dict[str, Any] | None = None


@dataclass(frozen=True)
class VersionRecord(Registration):
    """A registered version: its :class:`Registration` plus identity and state."""

    application: str = ""
    name: str = ""
    number: int = 0
    state: str = "candidate"
    created_by: str = ""
    created_at: datetime | None = None

    @property
    def label(self) -> str:
        """``name@number``, the model name clients send and responses carry."""
        return f"{self.name}@{self.number}"


@dataclass(frozen=True)
class HeadRecord:
    """The live pointers of an adapter name: production and canary numbers, canary fraction and rule."""

    name: str
    production: int | None
    canary: int | None
    canary_fraction: float
    canary_rule: dict[str, Any] | None
    canary_started_at: datetime | None


@dataclass(frozen=True)
class EventRecord:
    """One audit-log row: ``actor`` moved ``name@number`` from ``from_state`` to ``to_state``."""

    id: int
    name: str
    number: int
    action: str
    from_state: str | None
    to_state: str
    actor: str
    reason: str
    at: datetime
    details: dict[str, Any]


def app_id(session: Session, application: str) -> int:
    """The id of ``application``. Raises :class:`UnknownError` when it does not exist."""
    found = session.scalars(sa.select(Application.id).where(Application.name == application)).one_or_none()
    if found is None:
        raise UnknownError(f"no application {application!r} in the store",
                           f"create it with `tuneloop feedback create-key {application}`")
    return found


def to_record(session: Session, row: AdapterVersion, application: str) -> VersionRecord:
    """The frozen record of an ORM version row (its parent as a number)."""
    parent = session.get(AdapterVersion, row.parent_id).number if row.parent_id else None
    return VersionRecord(
        adapter_path=row.adapter_path, adapter_sha256=row.adapter_sha256, lora_rank=row.lora_rank,
        base_model=row.base_model, base_model_sha256=row.base_model_sha256, taskset_version=row.taskset_version,
        data_version=row.data_version, feedback_watermark=row.feedback_watermark, config=json.loads(row.config_json),
        parent=parent, code_version=row.code_version, eval=json.loads(row.eval_json), gate_passed=row.gate_passed,
        gate_reasons=tuple(json.loads(row.gate_reasons_json)),
        probe=json.loads(row.probe_json) if row.probe_json else None, application=application, name=row.name,
        number=row.number, state=row.state, created_by=row.created_by, created_at=row.created_at)


def head_row(session: Session, aid: int, name: str, create: bool = False) -> AdapterHead:
    """The head row of (application, name); created when ``create``. Raises :class:`UnknownError`."""
    row = session.scalars(sa.select(AdapterHead).where(AdapterHead.application_id == aid,
                                                       AdapterHead.name == name)).one_or_none()
    if row is None and create:
        row = AdapterHead(application_id=aid, name=name, row_version=0, canary_fraction=0.0)
        session.add(row)
        session.flush()
    if row is None:
        raise UnknownError(f"no adapter named {name!r} is registered", "register one: `tuneloop adapters register`")
    return row


def version_row(session: Session, aid: int, name: str, ref: int | str) -> AdapterVersion:
    """The version ``ref`` (a number, or ``production``/``canary``) of ``name``.

    Raises:
        UnknownError: no such version or alias target; the message lists the versions there are.
    """
    number: int | None
    if isinstance(ref, str) and ref in ALIASES:
        head = head_row(session, aid, name)
        vid = head.production_id if ref == "production" else head.canary_id
        row = session.get(AdapterVersion, vid) if vid else None
    else:
        try:
            number = int(ref)
        except ValueError:
            raise UnknownError(f"{ref!r} is not a version number or alias", "use a number or production/canary") from None
        row = session.scalars(sa.select(AdapterVersion).where(AdapterVersion.application_id == aid,
                                                              AdapterVersion.name == name,
                                                              AdapterVersion.number == number)).one_or_none()
    if row is None:
        have = session.scalars(sa.select(AdapterVersion.number).where(AdapterVersion.application_id == aid,
                                                                      AdapterVersion.name == name)
                               .order_by(AdapterVersion.number)).all()
        raise UnknownError(f"no version {name}@{ref} (registered: {', '.join(f'@{n}' for n in have) or 'none'})",
                           "list them with `tuneloop adapters list`")
    return row


def register(session: Session, application: str, name: str, reg: Registration, actor: str,
             reason: str = "") -> VersionRecord:
    """Register ``reg`` as the next version of ``name`` (state ``candidate``), audited.

    Raises:
        UnknownError: unknown application or parent version.
    """
    aid = app_id(session, application)
    parent_id = version_row(session, aid, name, reg.parent).id if reg.parent is not None else None
    for _ in range(8):  # a concurrent registration may take the number: retry with the next one
        head_row(session, aid, name, create=True)
        top = session.scalar(sa.select(sa.func.max(AdapterVersion.number)).where(
            AdapterVersion.application_id == aid, AdapterVersion.name == name)) or 0
        row = AdapterVersion(
            application_id=aid, name=name, number=top + 1, state="candidate", adapter_path=reg.adapter_path,
            adapter_sha256=reg.adapter_sha256, lora_rank=reg.lora_rank, base_model=reg.base_model,
            base_model_sha256=reg.base_model_sha256, taskset_version=reg.taskset_version,
            data_version=reg.data_version, feedback_watermark=reg.feedback_watermark,
            config_json=json.dumps(reg.config, sort_keys=True, default=str), parent_id=parent_id,
            code_version=reg.code_version or code_version(), eval_json=json.dumps(reg.eval, default=str),
            gate_passed=reg.gate_passed, gate_reasons_json=json.dumps(list(reg.gate_reasons)),
            probe_json=json.dumps(reg.probe) if reg.probe else None, created_by=actor)
        session.add(row)
        try:
            session.flush()
            session.add(RegistryEvent(application_id=aid, name=name, version_id=row.id, action="register",
                                      from_state=None, to_state="candidate", actor=actor, reason=reason))
            session.commit()
            return to_record(session, row, application)
        except IntegrityError:
            session.rollback()
    raise ConflictError(f"could not allocate a version number for {name} (8 concurrent registrations won)",
                        "retry the registration")


def get_version(session: Session, application: str, name: str, ref: int | str) -> VersionRecord:
    """Version ``ref`` (number or alias) of ``name``. Raises :class:`UnknownError`."""
    return to_record(session, version_row(session, app_id(session, application), name, ref), application)


def list_versions(session: Session, application: str, name: str | None = None) -> list[VersionRecord]:
    """Every version of the application (of ``name`` only, when given), by name then number."""
    aid = app_id(session, application)
    stmt = sa.select(AdapterVersion).where(AdapterVersion.application_id == aid)
    if name is not None:
        stmt = stmt.where(AdapterVersion.name == name)
    rows = session.scalars(stmt.order_by(AdapterVersion.name, AdapterVersion.number)).all()
    return [to_record(session, r, application) for r in rows]


def get_head(session: Session, application: str, name: str) -> HeadRecord:
    """The production/canary pointers of ``name``. Raises :class:`UnknownError`."""
    aid = app_id(session, application)
    head = head_row(session, aid, name)
    number = {v.id: v.number for v in session.scalars(sa.select(AdapterVersion).where(
        AdapterVersion.id.in_([i for i in (head.production_id, head.canary_id) if i])))}
    return HeadRecord(name=name, production=number.get(head.production_id), canary=number.get(head.canary_id),
                      canary_fraction=head.canary_fraction,
                      canary_rule=json.loads(head.canary_rule_json) if head.canary_rule_json else None,
                      canary_started_at=head.canary_started_at)


def list_events(session: Session, application: str, name: str | None = None) -> list[EventRecord]:
    """The audit log of the application (of ``name`` only, when given), oldest first."""
    aid = app_id(session, application)
    stmt = (sa.select(RegistryEvent, AdapterVersion.number).join(AdapterVersion, AdapterVersion.id == RegistryEvent.version_id)
            .where(RegistryEvent.application_id == aid))
    if name is not None:
        stmt = stmt.where(RegistryEvent.name == name)
    return [EventRecord(id=e.id, name=e.name, number=n, action=e.action, from_state=e.from_state, to_state=e.to_state,
                        actor=e.actor, reason=e.reason, at=e.at, details=json.loads(e.details_json))
            for e, n in session.execute(stmt.order_by(RegistryEvent.id)).all()]


_DIFF_SKIP = {"application", "name", "number", "created_at", "probe"}


def diff_versions(a: VersionRecord, b: VersionRecord) -> dict[str, tuple[Any, Any]]:
    """Fields that differ between two versions: ``{field: (a's value, b's value)}``; config and
    eval dicts are compared key by key (``config.sft.lora.r``)."""
    out: dict[str, tuple[Any, Any]] = {}
    for f in fields(VersionRecord):
        if f.name in _DIFF_SKIP:
            continue
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, dict) and isinstance(y, dict):
            out.update(_dict_diff(f.name, x, y))
        elif x != y:
            out[f.name] = (x, y)
    return out


def _dict_diff(prefix: str, x: dict, y: dict) -> dict[str, tuple[Any, Any]]:
    out: dict[str, tuple[Any, Any]] = {}
    for key in sorted(set(x) | set(y), key=str):
        a, b = x.get(key), y.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out.update(_dict_diff(f"{prefix}.{key}", a, b))
        elif a != b:
            out[f"{prefix}.{key}"] = (a, b)
    return out


def code_version() -> str:
    """``tuneloop <version>`` plus the git commit of the checkout when there is one."""
    try:
        ver = pkg_version("tuneloop")
    except PackageNotFoundError:
        ver = "unknown"
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=Path(__file__).parent, text=True,
                             capture_output=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    return f"tuneloop {ver}" + (f" ({sha})" if sha else "")
