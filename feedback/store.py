"""tuneloop's own feedback store: SQLAlchemy 2.0 typed ORM (issue 5, part 2).

Tables: applications and their API keys (only a SHA-256 hash and an 8-char prefix are kept),
interactions (one LLM call: model, latency, conversation, user) with their messages, feedback
events (ratings on a declared scale), corrections, idempotency records for every write,
ingestion cursors (watermarks of incremental readers). The adapter registry's tables (versions
with lineage, heads, audit log, loop locks, attribution) are in :mod:`feedback.registry_models`.

Typed reads for the readers outside ``feedback``: :func:`iter_feedback` (rating events) and
:func:`iter_unrated_corrections`, both keyset-paginated by id and returning plain
:class:`FeedbackItem` records, never ORM objects.

The schema is created and upgraded by the Alembic migrations shipped in
``feedback/migrations`` (:func:`migrate`); SQLite by default (WAL mode, busy timeout),
PostgreSQL in production. ORM objects stay in ``feedback``; the service turns them into
pydantic records (:mod:`feedback.schemas`), the typed reads below into :class:`FeedbackItem`,
before they leave.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Literal

import sqlalchemy as sa
from sqlalchemy import ForeignKey, String, Text, UniqueConstraint, event
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship, sessionmaker


def utcnow() -> datetime:
    """Aware current UTC time."""
    return datetime.now(timezone.utc)


_SQLITE_UTC = "%(year)04d-%(month)02d-%(day)02d %(hour)02d:%(minute)02d:%(second)02d.%(microsecond)06d+00:00"


class UTCDateTime(sa.types.TypeDecorator):
    """A timestamp column that is aware UTC both ways, on every backend.

    Written: an aware value converted to UTC (a naive one is taken as UTC, the store's convention);
    on SQLite, which has no time zone, as ISO text ending in ``+00:00`` (SQLAlchemy's own SQLite
    format drops the offset, so rows read back by any client, e.g. a ``sql_feedback`` source on the
    store's tables, were naive). Read: aware UTC (rows written naive before are taken as UTC).
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: sa.engine.Dialect) -> sa.types.TypeEngine:
        """SQLite: text with the ``+00:00`` offset; elsewhere the backend's own aware timestamp."""
        if dialect.name == "sqlite":
            from sqlalchemy.dialects.sqlite import DATETIME

            return dialect.type_descriptor(DATETIME(timezone=True, storage_format=_SQLITE_UTC))
        return dialect.type_descriptor(sa.DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: sa.engine.Dialect) -> datetime | None:
        """The value as aware UTC (``None`` stays ``None``)."""
        return None if value is None else (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)

    def process_result_value(self, value: datetime | None, dialect: sa.engine.Dialect) -> datetime | None:
        """The stored value as aware UTC (``None`` stays ``None``)."""
        return self.process_bind_param(value, dialect)


class Base(DeclarativeBase):
    """Declarative base of the store."""


class Application(Base):
    """An application that sends feedback (one per product/assistant)."""

    __tablename__ = "applications"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    keys: Mapped[list["ApiKey"]] = relationship(back_populates="application")


class ApiKey(Base):
    """An API key of an application; the key itself is never stored, only its SHA-256."""

    __tablename__ = "api_keys"
    id: Mapped[int] = mapped_column(primary_key=True)
    application_id: Mapped[int] = mapped_column(ForeignKey("applications.id"), index=True)
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    application: Mapped[Application] = relationship(back_populates="keys")


class Interaction(Base):
    """One production LLM call. ``external_id`` is the caller's id (e.g. a LangChain run id)."""

    __tablename__ = "interactions"
    __table_args__ = (UniqueConstraint("application_id", "external_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    application_id: Mapped[int] = mapped_column(ForeignKey("applications.id"), index=True)
    external_id: Mapped[str | None] = mapped_column(String(200))
    conversation_id: Mapped[str | None] = mapped_column(String(200), index=True)
    user_id: Mapped[str | None] = mapped_column(String(200))
    model: Mapped[str | None] = mapped_column(String(200))
    latency_ms: Mapped[float | None]
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    messages: Mapped[list["ChatMessage"]] = relationship(back_populates="interaction", order_by="ChatMessage.position")


class ChatMessage(Base):
    """A message of an interaction; ``tool_calls`` is JSON text or NULL."""

    __tablename__ = "messages"
    id: Mapped[int] = mapped_column(primary_key=True)
    interaction_id: Mapped[int] = mapped_column(ForeignKey("interactions.id"), index=True)
    position: Mapped[int]
    role: Mapped[str] = mapped_column(String(20))
    content: Mapped[str] = mapped_column(Text)
    tool_calls: Mapped[str | None] = mapped_column(Text)
    interaction: Mapped[Interaction] = relationship(back_populates="messages")


class FeedbackEvent(Base):
    """A rating of an interaction by a user; ``rating`` in the units of ``scale``."""

    __tablename__ = "feedback_events"
    id: Mapped[int] = mapped_column(primary_key=True)
    application_id: Mapped[int] = mapped_column(ForeignKey("applications.id"), index=True)
    interaction_id: Mapped[int] = mapped_column(ForeignKey("interactions.id"), index=True)
    user_id: Mapped[str | None] = mapped_column(String(200))
    rating: Mapped[float | None]
    scale: Mapped[str] = mapped_column(String(20))
    comment: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)


class Correction(Base):
    """A user's corrected response for an interaction."""

    __tablename__ = "corrections"
    id: Mapped[int] = mapped_column(primary_key=True)
    application_id: Mapped[int] = mapped_column(ForeignKey("applications.id"), index=True)
    interaction_id: Mapped[int] = mapped_column(ForeignKey("interactions.id"), index=True)
    user_id: Mapped[str | None] = mapped_column(String(200))
    content: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class IdempotencyRecord(Base):
    """The first response to a write with this key; a retry with the same key replays it."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("application_id", "key"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    application_id: Mapped[int] = mapped_column(ForeignKey("applications.id"))
    key: Mapped[str] = mapped_column(String(200))
    request_hash: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int]
    response: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class IngestionCursor(Base):
    """Watermark of an incremental reader, by name."""

    __tablename__ = "ingestion_cursors"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    watermark: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)


def make_engine(url: str) -> sa.Engine:
    """An engine; SQLite gets WAL, a 30 s busy timeout and foreign keys on."""
    engine = sa.create_engine(url, connect_args={"timeout": 30} if url.startswith("sqlite") else {})
    if engine.dialect.name == "sqlite":
        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record) -> None:  # noqa: ANN001
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()
    return engine


def migrate(url: str, revision: str = "head") -> None:
    """Bring the database at ``url`` to ``revision`` with the shipped Alembic migrations."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    cfg.attributes["url"] = url
    command.upgrade(cfg, revision)


def sessions(url: str, upgrade: bool = True) -> sessionmaker[Session]:
    """A session factory for ``url``, migrating the schema first when ``upgrade``."""
    if upgrade:
        migrate(url)
    return sessionmaker(make_engine(url), expire_on_commit=False)


def hash_key(key: str) -> str:
    """SHA-256 hex of an API key (keys are 256-bit random, so no salt or slow hash is needed)."""
    return hashlib.sha256(key.encode()).hexdigest()


def create_api_key(session: Session, app_name: str) -> str:
    """Create (or reuse) application ``app_name`` and a new API key for it; returns the key once."""
    app = session.scalars(sa.select(Application).where(Application.name == app_name)).one_or_none()
    if app is None:
        app = Application(name=app_name)
        session.add(app)
        session.flush()
    key = "tl_" + secrets.token_urlsafe(32)
    session.add(ApiKey(application_id=app.id, prefix=key[:8], key_hash=hash_key(key)))
    session.commit()
    return key


def new_api_key(url: str, app_name: str) -> str:
    """Migrate the store at ``url`` if needed, then create an API key for ``app_name`` (printed once
    by ``tuneloop feedback create-key``; only its hash is stored)."""
    with sessions(url)() as session:
        return create_api_key(session, app_name)


# -- typed reads ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FeedbackItem:
    """One rating event, or one correction no rating accompanies, with its interaction's text.

    Attributes:
        kind: ``rating`` (a feedback event) or ``correction`` (a correction on an interaction its
            user did not rate).
        id: the feedback event's id (``rating``) or the correction's id (``correction``).
        interaction_id: the rated or corrected interaction.
        conversation_id: the interaction's conversation, if the caller sent one.
        user_id: the user who rated or corrected (``None``: anonymous).
        created_at: when the rating or correction was stored (aware UTC on every backend).
        system_prompt: the interaction's first system message (``None`` if it has none).
        prompt: its last user message; response: its last assistant message (``None`` if absent).
        rating: in the units of ``scale`` (:mod:`feedback.scales`); ``None`` for a comment only
            and for a correction.
        scale: the rating's scale name; ``None`` for a correction.
        correction: for a rating, the latest correction by the same user (``None`` matching
            ``None``) on that interaction; for a correction, its text.
    """

    kind: Literal["rating", "correction"]
    id: int
    interaction_id: int
    conversation_id: str | None
    user_id: str | None
    created_at: datetime
    system_prompt: str | None
    prompt: str | None
    response: str | None
    rating: float | None
    scale: str | None
    correction: str | None


def _message(role: str, last: bool) -> sa.ScalarSelect:
    """The content of the interaction's first (or last) message of ``role``, as a scalar subquery."""
    order = ChatMessage.position.desc() if last else ChatMessage.position.asc()
    return (sa.select(ChatMessage.content).where(ChatMessage.interaction_id == Interaction.id, ChatMessage.role == role)
            .order_by(order).limit(1).scalar_subquery())


def _texts() -> tuple:
    return (Interaction.conversation_id, _message("system", last=False).label("system_prompt"),
            _message("user", last=True).label("prompt"), _message("assistant", last=True).label("response"))


def _in_application(stmt: sa.Select, application: str | None) -> sa.Select:
    if application is None:
        return stmt
    return stmt.join(Application, Application.id == Interaction.application_id).where(Application.name == application)


def iter_feedback(session: Session, application: str | None = None, after: int | None = None,
                  batch_size: int = 1000) -> Iterator[FeedbackItem]:
    """Rating events in id order, each with its interaction's text and the rater's latest correction.

    Args:
        application: only interactions of the application of this name (``None``: all).
        after: only events whose id is greater (a keyset watermark; ``None``: from the start).
        batch_size: rows fetched per round trip (streamed; memory stays flat).
    Raises:
        sqlalchemy.exc.DBAPIError: the database cannot be read (e.g. the schema is not migrated).
    """
    correction = (sa.select(Correction.content)
                  .where(Correction.interaction_id == Interaction.id,
                         Correction.user_id.is_not_distinct_from(FeedbackEvent.user_id))
                  .order_by(Correction.id.desc()).limit(1).scalar_subquery())
    stmt = (sa.select(FeedbackEvent.id, FeedbackEvent.interaction_id, FeedbackEvent.user_id, FeedbackEvent.created_at,
                      *_texts(), FeedbackEvent.rating, FeedbackEvent.scale, correction.label("correction"))
            .join(Interaction, Interaction.id == FeedbackEvent.interaction_id))
    stmt = _in_application(stmt, application)
    if after is not None:
        stmt = stmt.where(FeedbackEvent.id > after)
    for row in session.execute(stmt.order_by(FeedbackEvent.id), execution_options={"yield_per": batch_size}):
        yield FeedbackItem(kind="rating", **row._asdict())


def iter_unrated_corrections(session: Session, application: str | None = None, after: int | None = None,
                             batch_size: int = 1000) -> Iterator[FeedbackItem]:
    """Corrections on interactions their user did not rate, in id order (rated ones come with
    their rating from :func:`iter_feedback`). Args and errors as for :func:`iter_feedback`."""
    rated = sa.exists().where(FeedbackEvent.interaction_id == Correction.interaction_id,
                              FeedbackEvent.user_id.is_not_distinct_from(Correction.user_id))
    stmt = (sa.select(Correction.id, Correction.interaction_id, Correction.user_id, Correction.created_at, *_texts(),
                      sa.null().label("rating"), sa.null().label("scale"), Correction.content.label("correction"))
            .join(Interaction, Interaction.id == Correction.interaction_id).where(~rated))
    stmt = _in_application(stmt, application)
    if after is not None:
        stmt = stmt.where(Correction.id > after)
    for row in session.execute(stmt.order_by(Correction.id), execution_options={"yield_per": batch_size}):
        yield FeedbackItem(kind="correction", **row._asdict())
