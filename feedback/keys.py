"""API keys of the collector: list and revoke (``tuneloop feedback keys …``).

Keys are 256-bit random strings shown once at creation (``tuneloop feedback create-key``); the store
keeps only their SHA-256 and a short prefix, which is how a key is named here. A revoked key is
refused by the service at once (``revoked_at`` is checked on every request).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import sqlalchemy as sa

from feedback.store import ApiKey, Application, sessions


@dataclass(frozen=True)
class KeyInfo:
    """One key as listed: its id, application, prefix (the first characters of the key), when it was
    created and, if so, revoked (ISO-8601 UTC)."""

    id: int
    application: str
    prefix: str
    created_at: str
    revoked_at: str | None


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).isoformat(timespec="seconds")


def list_keys(url: str, application: str | None = None) -> list[KeyInfo]:
    """Every key of the store at ``url`` (of one application when given), oldest first."""
    with sessions(url)() as session:
        query = sa.select(ApiKey, Application.name).join(Application).order_by(ApiKey.id)
        if application is not None:
            query = query.where(Application.name == application)
        return [KeyInfo(k.id, name, k.prefix, _iso(k.created_at), _iso(k.revoked_at))
                for k, name in session.execute(query).all()]


def revoke_key(url: str, prefix: str) -> KeyInfo:
    """Revoke the one key whose prefix starts with ``prefix``.

    Raises:
        LookupError: no key, or more than one key, matches (the message says which).
    """
    with sessions(url)() as session:
        rows = session.execute(sa.select(ApiKey, Application.name).join(Application)
                               .where(ApiKey.prefix.startswith(prefix))).all()
        if len(rows) != 1:
            known = ", ".join(k.prefix for k in list_keys(url)) or "none"
            raise LookupError(f"{len(rows)} keys match prefix {prefix!r} (keys: {known})")
        key, name = rows[0]
        if key.revoked_at is None:
            key.revoked_at = datetime.now(timezone.utc)
            session.commit()
        return KeyInfo(key.id, name, key.prefix, _iso(key.created_at), _iso(key.revoked_at))
