"""A langchain-core callback that records an application's LLM calls into the collector.

:class:`FeedbackCallbackHandler` is a ``BaseCallbackHandler`` (langchain-core's extension
point): on ``on_chat_model_start`` / ``on_llm_start`` it remembers the prompt and the start
time; on ``on_llm_end`` it posts the interaction (messages, response, tool calls, model,
latency) to ``POST /v1/interactions`` with the LangChain ``run_id`` as both ``external_id``
and ``Idempotency-Key`` (a retried post never doubles a record). A rating can be attached
later by run id with :meth:`FeedbackCallbackHandler.rate`.

The stored ``model`` is the version that answered when the response names one (the tuneloop
servers answer with ``name@N`` in the OpenAI ``model`` field, which LangChain keeps as
``response_metadata["model_name"]``), so a request for ``support@production`` is recorded as,
say, ``support@3`` and the collector attributes it to that version (:mod:`feedback.attribution`)
without the caller doing anything.

It never breaks the application: a failed post is logged and kept in ``errors`` unless
``raise_on_error`` is set.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
import uuid
from typing import Any
from uuid import UUID

import httpx
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult

log = logging.getLogger(__name__)
_VERSIONED = re.compile(r"^[A-Za-z0-9._-]+@\d+$")  # as feedback.attribution.VERSIONED
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content or []]
    return "".join(parts)


class FeedbackCallbackHandler(BaseCallbackHandler):
    """Record LLM calls in the feedback collector.

    Args:
        client: an ``httpx.Client`` whose ``base_url`` is the collector and whose headers carry
            ``X-API-Key`` (tests pass FastAPI's ``TestClient``); or give ``base_url`` and ``api_key``.
        conversation_id, user_id: stored with every interaction (set per request if needed).
        raise_on_error: raise instead of logging when the collector cannot be reached.
    """

    raise_error = False

    def __init__(self, client: httpx.Client | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 conversation_id: str | None = None, user_id: str | None = None, raise_on_error: bool = False) -> None:
        if client is None:
            if not (base_url and api_key):
                raise ValueError("give an httpx client, or base_url and api_key of the collector")
            client = httpx.Client(base_url=base_url, headers={"X-API-Key": api_key}, timeout=10)
        self.client = client
        self.conversation_id, self.user_id = conversation_id, user_id
        self.raise_on_error = raise_on_error
        self.errors: list[str] = []
        self._pending: dict[UUID, tuple[list[dict[str, Any]], str | None, float]] = {}

    # -- LangChain hooks ------------------------------------------------------------------

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID,
                            **kwargs: Any) -> None:
        """Remember the chat prompt (first batch item) of ``run_id``."""
        msgs = [{"role": _ROLES.get(m.type, "user"), "content": _text(m.content)} for m in messages[0]]
        self._pending[run_id] = (msgs, self._model(serialized, kwargs), time.monotonic())

    def on_llm_start(self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any) -> None:
        """Remember the text prompt (first batch item) of ``run_id``."""
        self._pending[run_id] = ([{"role": "user", "content": prompts[0]}], self._model(serialized, kwargs),
                                 time.monotonic())

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Post the finished interaction."""
        pending = self._pending.pop(run_id, None)
        if pending is None or not response.generations or not response.generations[0]:
            return
        msgs, model, started = pending
        gen = response.generations[0][0]
        answer: dict[str, Any] = {"role": "assistant", "content": gen.text}
        if isinstance(gen, ChatGeneration) and getattr(gen.message, "tool_calls", None):
            answer["tool_calls"] = [dict(tc) for tc in gen.message.tool_calls]
        model = _served_version(response, gen) or model or (response.llm_output or {}).get("model_name")
        body = {"external_id": str(run_id), "conversation_id": self.conversation_id, "user_id": self.user_id,
                "model": model, "latency_ms": round((time.monotonic() - started) * 1000, 3), "messages": msgs + [answer]}
        self._post("/v1/interactions", body, str(run_id))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget a failed call (nothing to rate)."""
        self._pending.pop(run_id, None)

    # -- ratings --------------------------------------------------------------------------

    def rate(self, run_id: UUID | str, rating: float | None, *, scale: str = "thumbs", comment: str | None = None,
             user_id: str | None = None, idempotency_key: str | None = None) -> int | None:
        """Attach a rating to the interaction of ``run_id``; returns the feedback id (None on failure).

        The idempotency key defaults to a hash of the rating's content, so calling ``rate`` again with
        the same arguments (a retry after a timeout) stores the rating once; a different rating or
        comment is a new event.
        """
        body = {"external_id": str(run_id), "rating": rating, "scale": scale, "comment": comment,
                "user_id": user_id or self.user_id}
        stable = hashlib.sha256(json.dumps(["rate", body], sort_keys=True, default=str).encode()).hexdigest()
        return self._post("/v1/feedback", body, idempotency_key or stable)

    def _post(self, path: str, body: dict[str, Any], key: str) -> int | None:
        try:
            response = self.client.post(path, json=body, headers={"Idempotency-Key": key})
            if response.status_code != 201:
                raise RuntimeError(f"{path} answered {response.status_code}: {response.text[:300]}")
            return response.json()["id"]
        except Exception as exc:  # noqa: BLE001 - recording must never break the application
            if self.raise_on_error:
                raise
            self.errors.append(f"{type(exc).__name__}: {exc}")
            log.warning("tuneloop feedback: could not record %s: %s", path, exc)
            return None

    @staticmethod
    def _model(serialized: dict[str, Any] | None, kwargs: dict[str, Any]) -> str | None:
        params = kwargs.get("invocation_params") or {}
        for key in ("model_name", "model", "model_id"):
            if params.get(key):
                return str(params[key])
        return (serialized or {}).get("name") or ((serialized or {}).get("id") or [None])[-1]


def _served_version(response: LLMResult, gen: Any) -> str | None:
    """The ``name@N`` the server says answered (message metadata first, then ``llm_output``), or None."""
    meta = getattr(getattr(gen, "message", None), "response_metadata", None) or {}
    for value in (meta.get("model_name"), meta.get("model"), (response.llm_output or {}).get("model_name")):
        if isinstance(value, str) and _VERSIONED.match(value):
            return value
    return None
