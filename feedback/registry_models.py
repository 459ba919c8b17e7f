"""The adapter registry's tables (issue 16), on the feedback store's declarative base.

Replaces the dead ``training_runs``/``adapters`` tables of migration 0001 (dropped by 0002):

- ``adapter_versions``: one row per registered adapter version of an application's adapter
  name, numbered 1, 2, ... per (application, name), with its full lineage, evaluation, gate
  verdict and state (candidate, canary, production, retired).
- ``adapter_heads``: one row per (application, name) naming its production and canary versions,
  the canary's traffic fraction and decision rule, and a ``row_version`` that every transition
  bumps with a conditional UPDATE, so concurrent promotions resolve to exactly one winner.
- ``registry_events``: the audit log, one row per transition (who, when, why, from, to).
- ``loop_locks``: one retraining loop per (application, name) at a time, and where it stopped.
- ``interaction_versions``: which adapter version served an interaction (attribution).

ORM rows stay in ``feedback``: :mod:`feedback.registry` turns them into frozen records.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from feedback.store import Base, UTCDateTime, utcnow

STATES = ("candidate", "canary", "production", "retired")


class AdapterVersion(Base):
    """One registered adapter version with its lineage (JSON columns hold text)."""

    __tablename__ = "adapter_versions"
    __table_args__ = (UniqueConstraint("application_id", "name", "number"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    application_id: Mapped[int] = mapped_column(ForeignKey("applications.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    number: Mapped[int]
    state: Mapped[str] = mapped_column(String(20), default="candidate")
    adapter_path: Mapped[str] = mapped_column(Text)
    adapter_sha256: Mapped[str] = mapped_column(String(64))
    lora_rank: Mapped[int]
    base_model: Mapped[str] = mapped_column(Text)
    base_model_sha256: Mapped[str] = mapped_column(String(64))
    taskset_version: Mapped[str] = mapped_column(String(200), default="")
    data_version: Mapped[str] = mapped_column(String(200), default="")
    feedback_watermark: Mapped[int | None]
    config_json: Mapped[str] = mapped_column(Text, default="{}")
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("adapter_versions.id"))
    code_version: Mapped[str] = mapped_column(String(200), default="")
    eval_json: Mapped[str] = mapped_column(Text, default="{}")
    gate_passed: Mapped[bool | None]
    gate_reasons_json: Mapped[str] = mapped_column(Text, default="[]")
    probe_json: Mapped[str | None] = mapped_column(Text)
    created_by: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class AdapterHead(Base):
    """The live pointers of one (application, name); ``row_version`` guards every transition."""

    __tablename__ = "adapter_heads"
    __table_args__ = (UniqueConstraint("application_id", "name"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    application_id: Mapped[int] = mapped_column(ForeignKey("applications.id"))
    name: Mapped[str] = mapped_column(String(200))
    production_id: Mapped[int | None] = mapped_column(ForeignKey("adapter_versions.id"))
    canary_id: Mapped[int | None] = mapped_column(ForeignKey("adapter_versions.id"))
    canary_fraction: Mapped[float] = mapped_column(default=0.0)
    canary_rule_json: Mapped[str | None] = mapped_column(Text)
    canary_started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    row_version: Mapped[int] = mapped_column(default=0)


class RegistryEvent(Base):
    """One audited transition: ``action`` took ``version_id`` from ``from_state`` to ``to_state``."""

    __tablename__ = "registry_events"
    id: Mapped[int] = mapped_column(primary_key=True)
    application_id: Mapped[int] = mapped_column(ForeignKey("applications.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    version_id: Mapped[int] = mapped_column(ForeignKey("adapter_versions.id"), index=True)
    action: Mapped[str] = mapped_column(String(30))
    from_state: Mapped[str | None] = mapped_column(String(20))
    to_state: Mapped[str] = mapped_column(String(20))
    actor: Mapped[str] = mapped_column(String(200))
    reason: Mapped[str] = mapped_column(Text, default="")
    details_json: Mapped[str] = mapped_column(Text, default="{}")
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class LoopLock(Base):
    """The retraining loop lock of one (application, name) and its resume state (JSON)."""

    __tablename__ = "loop_locks"
    __table_args__ = (UniqueConstraint("application_id", "name"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    application_id: Mapped[int] = mapped_column(ForeignKey("applications.id"))
    name: Mapped[str] = mapped_column(String(200))
    holder: Mapped[str | None] = mapped_column(String(200))
    acquired_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    state_json: Mapped[str] = mapped_column(Text, default="{}")


class InteractionVersion(Base):
    """The adapter version that produced an interaction's answer."""

    __tablename__ = "interaction_versions"
    interaction_id: Mapped[int] = mapped_column(ForeignKey("interactions.id"), primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("adapter_versions.id"), index=True)
