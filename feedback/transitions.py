"""State transitions of adapter versions: candidate → canary → production → retired (issue 16).

Every transition goes through :func:`_commit_move`: one conditional
``UPDATE adapter_heads ... WHERE row_version = :seen`` (optimistic concurrency). Of two
concurrent promotions of the same adapter name exactly one updates the row; the other matches no
row, rolls back and gets a :class:`~feedback.registry.ConflictError` naming the winner. On
SQLite the UPDATE waits for the other writer (busy timeout) and then sees its commit; on
PostgreSQL (read committed) the UPDATE blocks on the row lock and re-checks the condition.

Rules: only a version whose gate passed can be canaried or promoted (the refusal lists the
gate's reasons); a canary needs a production version to compare against; a rollback returns
production to the version that was production before it (the audit log replayed as a stack:
promotions push, rollbacks pop; an error when there is none). Each
transition writes audit rows (who, when, why) in the same transaction.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from feedback.registry import (ConflictError, GateRefusedError, UnknownError, VersionRecord, app_id, head_row,
                               to_record, version_row)
from feedback.registry_models import AdapterHead, AdapterVersion, RegistryEvent
from feedback.store import utcnow


def _gate_ok(row: AdapterVersion, action: str) -> None:
    if row.gate_passed is True:
        return
    reasons = json.loads(row.gate_reasons_json)
    why = ("the regression gate failed it: " + "; ".join(reasons or ["(no reason recorded)"])
           if row.gate_passed is False else "no regression gate judged it")
    raise GateRefusedError(f"{row.name}@{row.number} cannot be {action}: {why}",
                           "train a better candidate and register it, or run its report with the gate on")


def _commit_move(session: Session, head: AdapterHead, updates: dict[str, Any],
                 moves: list[tuple[AdapterVersion, str, str]], actor: str, reason: str,
                 details: dict[str, Any] | None = None) -> None:
    """Apply ``updates`` to the head if nobody moved it since it was read, then the version states
    (``moves``: row, new state, action) and their audit rows; commit.

    Raises:
        ConflictError: another transition of this adapter name committed first.
    """
    seen = head.row_version
    result = session.execute(sa.update(AdapterHead).where(AdapterHead.id == head.id, AdapterHead.row_version == seen)
                             .values(**updates, row_version=seen + 1).execution_options(synchronize_session=False))
    if result.rowcount != 1:
        session.rollback()
        session.expire_all()
        fresh = session.get(AdapterHead, head.id)
        winner = session.get(AdapterVersion, fresh.production_id) if fresh.production_id else None
        raise ConflictError(f"another change to {head.name} committed first (production is now "
                            f"{f'{winner.name}@{winner.number}' if winner else 'none'})",
                            "look at `tuneloop adapters list` and retry if it is still wanted")
    for row, state, action in moves:
        session.add(RegistryEvent(application_id=row.application_id, name=row.name, version_id=row.id, action=action,
                                  from_state=row.state, to_state=state, actor=actor, reason=reason,
                                  details_json=json.dumps(details or {}, default=str)))
        row.state = state
    session.commit()
    session.expire_all()


def promote(session: Session, application: str, name: str, ref: int | str, actor: str, reason: str,
            details: dict[str, Any] | None = None) -> VersionRecord:
    """Make version ``ref`` production; the previous production version is retired.

    Raises:
        UnknownError: no such version. GateRefusedError: its gate failed or never ran (reasons
        listed). ConflictError: it is production already, or a concurrent change won.
    """
    aid = app_id(session, application)
    row = version_row(session, aid, name, ref)
    head = head_row(session, aid, name)
    _gate_ok(row, "promoted")
    if row.state == "production":
        raise ConflictError(f"{name}@{row.number} is production already", "promote another version")
    moves = [(row, "production", "promote")]
    if head.production_id:
        moves.append((session.get(AdapterVersion, head.production_id), "retired", "retire"))
    updates: dict[str, Any] = {"production_id": row.id}
    if head.canary_id == row.id:
        updates.update(canary_id=None, canary_fraction=0.0, canary_rule_json=None, canary_started_at=None)
    _commit_move(session, head, updates, moves, actor, reason, details)
    return to_record(session, session.get(AdapterVersion, row.id), application)


def start_canary(session: Session, application: str, name: str, ref: int | str, fraction: float,
                 rule: dict[str, Any], actor: str, reason: str) -> VersionRecord:
    """Send ``fraction`` (0 < f < 1) of ``name``'s traffic to candidate ``ref``, judged by ``rule``
    (fixed now; see :class:`feedback.canary.CanaryRule`).

    Raises:
        UnknownError, GateRefusedError, ConflictError (not a candidate, a canary already running,
        no production version to compare against, or a concurrent change won); ValueError for a
        fraction outside (0, 1).
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"canary fraction {fraction} is not between 0 and 1 (exclusive)")
    aid = app_id(session, application)
    row = version_row(session, aid, name, ref)
    head = head_row(session, aid, name)
    _gate_ok(row, "canaried")
    if row.state != "candidate":
        raise ConflictError(f"{name}@{row.number} is {row.state}, not a candidate", "canary a new candidate")
    if head.canary_id:
        current = session.get(AdapterVersion, head.canary_id)
        raise ConflictError(f"{name}@{current.number} is already in canary",
                            f"end it first: `tuneloop adapters rollback {name} --canary` or promote it")
    if not head.production_id:
        raise ConflictError(f"{name} has no production version for the canary to be compared with",
                            f"promote {name}@{row.number} directly: `tuneloop adapters promote {name} {row.number}`")
    updates = {"canary_id": row.id, "canary_fraction": fraction, "canary_rule_json": json.dumps(rule),
               "canary_started_at": utcnow()}
    _commit_move(session, head, updates, [(row, "canary", "canary")], actor, reason, {"fraction": fraction, "rule": rule})
    return to_record(session, session.get(AdapterVersion, row.id), application)


def end_canary(session: Session, application: str, name: str, actor: str, reason: str,
               details: dict[str, Any] | None = None) -> VersionRecord:
    """Roll the running canary back: it is retired and all traffic returns to production.

    Raises:
        UnknownError: no canary is running. ConflictError: a concurrent change won.
    """
    aid = app_id(session, application)
    head = head_row(session, aid, name)
    if not head.canary_id:
        raise UnknownError(f"{name} has no canary running", "start one with `tuneloop adapters promote --canary`")
    row = session.get(AdapterVersion, head.canary_id)
    updates = {"canary_id": None, "canary_fraction": 0.0, "canary_rule_json": None, "canary_started_at": None}
    _commit_move(session, head, updates, [(row, "retired", "canary-rollback")], actor, reason, details)
    return to_record(session, session.get(AdapterVersion, row.id), application)


def rollback(session: Session, application: str, name: str, actor: str, reason: str) -> VersionRecord:
    """Return production to the latest earlier production version (gate passed); the current one is retired.

    Raises:
        UnknownError: ``name`` has no production version. ConflictError: no earlier production
        version exists, or a concurrent change won.
    """
    aid = app_id(session, application)
    head = head_row(session, aid, name)
    if not head.production_id:
        raise UnknownError(f"{name} has no production version to roll back", "promote a version first")
    current = session.get(AdapterVersion, head.production_id)
    stack = _production_stack(session, aid, name)
    earlier = session.get(AdapterVersion, stack[-2]) if len(stack) >= 2 else None
    if earlier is None:
        raise ConflictError(f"{name}@{current.number} is the first production version of {name} (after earlier "
                            "rollbacks, if any): there is no earlier one to roll back to",
                            f"promote another version: `tuneloop adapters promote {name} N`")
    moves = [(earlier, "production", "rollback"), (current, "retired", "rollback")]
    _commit_move(session, head, {"production_id": earlier.id}, moves, actor, reason)
    return to_record(session, session.get(AdapterVersion, earlier.id), application)


def _production_stack(session: Session, aid: int, name: str) -> list[int]:
    """Version ids that were production, oldest first, replayed from the audit log: a promotion
    pushes, a rollback pops (so rolling back twice goes two promotions back, never forward)."""
    stack: list[int] = []
    for action, vid in session.execute(
            sa.select(RegistryEvent.action, RegistryEvent.version_id)
            .where(RegistryEvent.application_id == aid, RegistryEvent.name == name,
                   RegistryEvent.to_state == "production").order_by(RegistryEvent.id)):
        if action == "rollback":
            stack.pop()
        else:
            stack.append(vid)
    return stack
