"""Read tuneloop's own feedback store (filled by the collector) as a feedback source.

:class:`CollectorFeedbackSource` is :class:`SqlFeedbackSource` with the mapping written for the
store's schema (:mod:`feedback.store`), so collected feedback goes through the same dedup, F2
scales, F3 time zones, redaction and record building as a company's own table. One row per
feedback event: the interaction's first system message, its last user message (prompt) and
last assistant message (response), the rating normalised in SQL from its stored scale to
[0, 1] (good at 0.7: thumbs up, 4 stars, 7 of 10), and the latest correction by the same user
on that interaction; corrections without any rating by that user are rows too.

Use it by dotted path: ``type: connectors.feedback_collector:CollectorFeedbackSource`` with
``options: {url: sqlite:///feedback_store.db, application: support-bot}``. Not incremental
(``state_dir`` is refused): two id sequences are merged, so no single column only grows.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import model_validator

from connectors.sql_feedback import SqlFeedbackOptions, SqlFeedbackSource

_MSG = ("(SELECT m.content FROM messages m WHERE m.interaction_id = i.id AND m.role = '{role}' "
        "ORDER BY m.position {order} LIMIT 1)")
_SAME_USER = "(c.user_id = {u} OR (c.user_id IS NULL AND {u} IS NULL))"
_COLUMNS = ("i.conversation_id AS conversation_id, i.id AS message_id, {user} AS user_id, {at} AS created_at, "
            + _MSG.format(role="system", order="ASC") + " AS system_prompt, "
            + _MSG.format(role="user", order="DESC") + " AS prompt, "
            + _MSG.format(role="assistant", order="DESC") + " AS response, ")


def collector_query(application: str | None) -> str:
    """The SELECT over the store (portable across SQLite, PostgreSQL and MariaDB)."""
    app_join = "JOIN applications a ON a.id = i.application_id AND a.name = '{}'".format(application) if application else ""
    rated = ("SELECT 2 * f.id AS row_id, " + _COLUMNS.format(user="f.user_id", at="f.created_at")
             + "CASE f.scale WHEN 'thumbs' THEN (f.rating + 1) / 2.0 WHEN 'stars_1_5' THEN (f.rating - 1) / 4.0 "
               "ELSE f.rating / 10.0 END AS rating, "
             + "(SELECT c.content FROM corrections c WHERE c.interaction_id = i.id AND " + _SAME_USER.format(u="f.user_id")
             + " ORDER BY c.id DESC LIMIT 1) AS correction "
             + f"FROM feedback_events f JOIN interactions i ON i.id = f.interaction_id {app_join}")
    corrected = ("SELECT 2 * c.id + 1 AS row_id, " + _COLUMNS.format(user="c.user_id", at="c.created_at")
                 + "NULL AS rating, c.content AS correction "
                 + f"FROM corrections c JOIN interactions i ON i.id = c.interaction_id {app_join} "
                 + "WHERE NOT EXISTS (SELECT 1 FROM feedback_events f WHERE f.interaction_id = c.interaction_id AND "
                 + _SAME_USER.format(u="f.user_id") + ")")
    return f"{rated} UNION ALL {corrected}"


class CollectorFeedbackOptions(SqlFeedbackOptions):
    """Options: ``url`` of the store, optional ``application`` name; the rest as for
    ``sql_feedback`` (``good_threshold`` is on the normalised 0–1 scale, default 0.7)."""

    application: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        data = dict(data or {})
        app = data.get("application")
        if app is not None and not re.fullmatch(r"[\w .@-]{1,200}", str(app)):
            raise ValueError("`application` may hold letters, digits, space, '.', '@', '_' and '-' only")
        if data.get("state_dir"):
            raise ValueError("the collector source is not incremental: remove `state_dir`")
        data.setdefault("url", "sqlite:///feedback_store.db")
        data.setdefault("query", collector_query(app))
        data.setdefault("rating", {"kind": "range", "min": 0, "max": 1})
        data.setdefault("good_threshold", 0.7)
        data.setdefault("timezone", "UTC")
        data.setdefault("columns", {"row_id": "row_id"})
        return data


class CollectorFeedbackSource(SqlFeedbackSource):
    """Training records from tuneloop's own feedback store (see module docstring)."""

    Options = CollectorFeedbackOptions
    name = "collector_feedback"
