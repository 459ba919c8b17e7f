"""Which adapter version served each interaction, recorded without the caller doing anything.

The serving APIs (:mod:`sdk.serve.multi`, vLLM behind the same names) answer with the concrete
version in the response's ``model`` field (``support@3``, never an alias). The LangChain callback
(:mod:`feedback.callback`) records the response's model; here an ORM ``after_insert`` hook on
:class:`~feedback.store.Interaction` links every new interaction whose model is ``name@N`` of a
registered version of its application to that version (``interaction_versions``), in the
collector's own transaction. Importing this module installs the hook (the collector's registry
router does). An interaction naming no registered version is left unattributed.

:func:`feedback_by_version` reads the application's ratings and corrections per version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.orm import Session

from feedback.registry import app_id
from feedback.registry_models import AdapterVersion, InteractionVersion
from feedback.scales import SCALES, normalise
from feedback.store import Correction, FeedbackEvent, Interaction

VERSIONED = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)@(?P<number>\d+)$")


def parse_label(model: str | None) -> tuple[str, int] | None:
    """``("support", 3)`` for ``"support@3"``; ``None`` for anything else (aliases included)."""
    found = VERSIONED.match(model or "")
    return (found["name"], int(found["number"])) if found else None


@event.listens_for(Interaction, "after_insert")
def _attribute(_mapper, connection: sa.Connection, target: Interaction) -> None:
    """Link a just-inserted interaction to the version its ``model`` names (same transaction)."""
    label = parse_label(target.model)
    if label is None:
        return
    vid = connection.execute(sa.select(AdapterVersion.id).where(
        AdapterVersion.application_id == target.application_id, AdapterVersion.name == label[0],
        AdapterVersion.number == label[1])).scalar_one_or_none()
    if vid is not None:
        connection.execute(sa.insert(InteractionVersion).values(interaction_id=target.id, version_id=vid))


@dataclass(frozen=True)
class VersionFeedback:
    """One rating or correction attributed to a version.

    Attributes:
        number: the version number that served the interaction.
        interaction_id, conversation_id, user_id: the interaction and who rated or corrected.
        kind: ``rating`` or ``correction``.
        score: the rating normalised to [0, 1] (:func:`feedback.scales.normalise`); ``None`` for a correction.
        good: the rating reached its scale's good threshold; ``None`` for a correction.
    """

    number: int
    interaction_id: int
    conversation_id: str | None
    user_id: str | None
    kind: str
    score: float | None
    good: bool | None


def feedback_by_version(session: Session, application: str, name: str) -> dict[int, list[VersionFeedback]]:
    """Every rating and correction of ``name``'s versions, keyed by version number (in id order).

    Raises:
        feedback.registry.UnknownError: no such application.
    """
    aid = app_id(session, application)
    out: dict[int, list[VersionFeedback]] = {}
    served = (sa.select(AdapterVersion.number, Interaction.id, Interaction.conversation_id)
              .join(InteractionVersion, InteractionVersion.version_id == AdapterVersion.id)
              .join(Interaction, Interaction.id == InteractionVersion.interaction_id)
              .where(AdapterVersion.application_id == aid, AdapterVersion.name == name))
    ratings = served.add_columns(FeedbackEvent.user_id, FeedbackEvent.rating, FeedbackEvent.scale).join(
        FeedbackEvent, FeedbackEvent.interaction_id == Interaction.id).order_by(FeedbackEvent.id)
    for number, iid, conv, user, rating, scale in session.execute(ratings):
        if rating is None:
            continue
        out.setdefault(number, []).append(VersionFeedback(number, iid, conv, user, "rating", normalise(rating, scale),
                                                          rating >= SCALES[scale].good))
    corrections = served.add_columns(Correction.user_id).join(
        Correction, Correction.interaction_id == Interaction.id).order_by(Correction.id)
    for number, iid, conv, user in session.execute(corrections):
        out.setdefault(number, []).append(VersionFeedback(number, iid, conv, user, "correction", None, None))
    return out


def served_counts(session: Session, application: str, name: str) -> dict[int, int]:
    """Interactions served per version number of ``name``."""
    aid = app_id(session, application)
    rows = session.execute(sa.select(AdapterVersion.number, sa.func.count(InteractionVersion.interaction_id))
                           .join(InteractionVersion, InteractionVersion.version_id == AdapterVersion.id)
                           .where(AdapterVersion.application_id == aid, AdapterVersion.name == name)
                           .group_by(AdapterVersion.number))
    return {n: c for n, c in rows}
