"""Request and response records of the collector API (the ORM never leaves ``feedback``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from feedback.scales import SCALES, ScaleName


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MessageIn(_In):
    """One chat message; ``tool_calls`` as the provider returned them (any JSON)."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = Field(..., max_length=200_000)
    tool_calls: list[dict[str, Any]] | None = None


class InteractionIn(_In):
    """One LLM call to record. ``external_id``: the caller's id (e.g. a LangChain run id),
    unique per application, usable later to attach feedback."""

    external_id: str | None = Field(None, max_length=200)
    conversation_id: str | None = Field(None, max_length=200)
    user_id: str | None = Field(None, max_length=200)
    model: str | None = Field(None, max_length=200)
    latency_ms: float | None = Field(None, ge=0)
    messages: list[MessageIn] = Field(..., min_length=1, max_length=1000)


class _Target(_In):
    interaction_id: int | None = None
    external_id: str | None = Field(None, max_length=200)
    user_id: str | None = Field(None, max_length=200)

    @model_validator(mode="after")
    def _one(self) -> "_Target":
        if (self.interaction_id is None) == (self.external_id is None):
            raise ValueError("give exactly one of `interaction_id` or `external_id`")
        return self


class FeedbackIn(_Target):
    """A rating of an interaction: ``rating`` on ``scale`` (``None`` = a comment only)."""

    rating: float | None = None
    scale: ScaleName = "thumbs"
    comment: str | None = Field(None, max_length=20_000)

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

    content: str = Field(..., min_length=1, max_length=200_000)


class Created(BaseModel):
    """Answer to a write: the new row's id (the same id when a retry is replayed)."""

    id: int
    replayed: bool = False


class FeedbackOut(BaseModel):
    """A stored feedback event."""

    id: int
    interaction_id: int
    user_id: str | None
    rating: float | None
    scale: str
    comment: str | None
    created_at: datetime


class Page(BaseModel):
    """A page of results; pass ``next_after`` as ``after`` for the next page (None: last page)."""

    items: list[FeedbackOut]
    next_after: int | None
