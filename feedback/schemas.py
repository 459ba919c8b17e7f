"""Request and response records of the collector API (the ORM never leaves ``feedback``).

Every field carries a description (it shows in ``/openapi.json``). Hostile values are refused
here, as 422s, before the store sees them: ids beyond signed 64 bits (the drivers overflow),
non-finite numbers (``1e999`` parses as infinity), and ratings off their scale. Lone UTF-16
surrogates (``"\\ud83c"`` without its pair, field case L2) cannot be stored as UTF-8: a valid
pair is joined, a lone one becomes U+FFFD, and a warning is logged. So does a NUL character
(PostgreSQL refuses U+0000 in text: it was a 500 there and a 201 on SQLite).
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from feedback.limits import MAX_ID
from feedback.scales import SCALES, ScaleName

log = logging.getLogger(__name__)


def _has_surrogate(text: str) -> bool:
    return "\x00" in text or any("\ud800" <= ch <= "\udfff" for ch in text)


def _fix_text(text: str) -> str:
    """Join surrogate pairs, replace lone surrogates and NUL (PostgreSQL refuses it in text) with U+FFFD."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").replace("\x00", "\ufffd")


def clean_surrogates(value: Any) -> Any:
    """``value`` (str, or JSON lists/dicts of them) with lone surrogates and NULs replaced; logs a warning if any."""
    found = False

    def walk(v: Any) -> Any:
        nonlocal found
        if isinstance(v, str):
            if _has_surrogate(v):
                found = True
                return _fix_text(v)
            return v
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        return v

    out = walk(value)
    if found:
        log.warning("lone UTF-16 surrogates or NUL characters in a request were replaced with U+FFFD")
    return out


Text = Annotated[str, BeforeValidator(clean_surrogates)]
"""A string whose lone surrogates are replaced (see the module docstring)."""

Id = Annotated[int, Field(ge=1, le=MAX_ID, description="a row id of the store (1 to 2^63 - 1)")]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MessageIn(_In):
    """One chat message; ``tool_calls`` as the provider returned them (any JSON)."""

    role: Literal["system", "user", "assistant", "tool"] = Field(..., description="who wrote the message")
    content: Text = Field(..., max_length=200_000, description="the message text (at most 200,000 characters)")
    tool_calls: Annotated[list[dict[str, Any]] | None, BeforeValidator(clean_surrogates)] = Field(
        None, description="the provider's tool calls, as JSON objects (size: the collector's max_tool_calls_bytes; "
                          "nesting: max_json_depth)")


class InteractionIn(_In):
    """One LLM call to record. ``external_id``: the caller's id (e.g. a LangChain run id),
    unique per application, usable later to attach feedback."""

    external_id: Text | None = Field(None, max_length=200,
                                     description="the caller's id of this call, unique per application")
    conversation_id: Text | None = Field(None, max_length=200, description="groups the calls of one conversation")
    user_id: Text | None = Field(None, max_length=200, description="the end user (any stable pseudonym)")
    model: Text | None = Field(None, max_length=200, description="the model that answered")
    latency_ms: float | None = Field(None, ge=0, allow_inf_nan=False,
                                     description="wall time of the call in milliseconds (finite, >= 0)")
    messages: list[MessageIn] = Field(..., min_length=1, max_length=1000,
                                      description="the conversation, oldest first, ending with the answer")


class _Target(_In):
    interaction_id: Id | None = Field(None, description="our id of the interaction (from POST /v1/interactions)")
    external_id: Text | None = Field(None, max_length=200, description="or the caller's id of the interaction")
    user_id: Text | None = Field(None, max_length=200, description="the user giving the feedback")

    @model_validator(mode="after")
    def _one(self) -> "_Target":
        if (self.interaction_id is None) == (self.external_id is None):
            raise ValueError("give exactly one of `interaction_id` or `external_id`")
        return self


class FeedbackIn(_Target):
    """A rating of an interaction: ``rating`` on ``scale`` (``None`` = a comment only)."""

    rating: float | None = Field(None, allow_inf_nan=False,
                                 description="the rating in the units of `scale`; null for a comment only")
    scale: ScaleName = Field("thumbs", description="thumbs (+1/-1), stars_1_5 or scale_0_10")
    comment: Text | None = Field(None, max_length=20_000, description="free text (at most 20,000 characters)")

    @model_validator(mode="after")
    def _range(self) -> "FeedbackIn":
        lo, hi = SCALES[self.scale].min, SCALES[self.scale].max
        if self.rating is not None and not lo <= self.rating <= hi:
            raise ValueError(f"rating {self.rating} is outside the {self.scale} scale [{lo:g}, {hi:g}]")
        if self.scale == "thumbs" and self.rating not in (None, -1, 1):
            raise ValueError("a thumbs rating is +1 or -1")
        return self


class CorrectionIn(_Target):
    """A corrected response for an interaction."""

    content: Text = Field(..., min_length=1, max_length=200_000,
                          description="the response the user wanted (at most 200,000 characters)")


class Created(BaseModel):
    """Answer to a write: the new row's id (the same id when a retry is replayed)."""

    id: int = Field(..., description="id of the new row")
    replayed: bool = Field(False, description="true when this is the stored answer to an earlier identical write")


class FeedbackOut(BaseModel):
    """A stored feedback event."""

    id: int = Field(..., description="the event's id (pass the last one as `after` to page on)")
    interaction_id: int = Field(..., description="the rated interaction")
    user_id: str | None = Field(..., description="who rated")
    rating: float | None = Field(..., description="in the units of `scale`")
    scale: str = Field(..., description="the rating's scale")
    comment: str | None = Field(..., description="free text")
    created_at: datetime = Field(..., description="when the event was stored (UTC, with its offset)")

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        """SQLite hands back naive datetimes; the store writes UTC, so say so."""
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


class Page(BaseModel):
    """A page of results; pass ``next_after`` as ``after`` for the next page (None: last page)."""

    items: list[FeedbackOut] = Field(..., description="events in id order")
    next_after: int | None = Field(..., description="`after` for the next page; null on the last page")
