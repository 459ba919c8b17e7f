"""The collector's limits and their enforcement before a request body is parsed (issue 19).

:class:`CollectorSettings` holds what an operator may tune: the body size per request, the
size of one message's ``tool_calls``, the JSON nesting depth, and who may read ``/docs`` and
``/openapi.json``. :class:`BodyGuard` is a plain ASGI middleware that reads at most
``max_body_bytes`` of a write (never more, so a 100 MB body costs 1 MB of memory), answers
``413`` above it and ``422`` for JSON nested deeper than ``max_json_depth`` — before
FastAPI's JSON parser or pydantic see it (both fail with a 500 on very deep input).

What is covered: request size, nesting depth, ids beyond 64 bits (schemas), non-finite numbers
(schemas), lone UTF-16 surrogates (replaced with U+FFFD by the schemas). Not covered: the
rate of requests per key (put a proxy in front for that).
"""

from __future__ import annotations

import os
import re
from typing import Any, Awaitable, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_ID = 2**63 - 1
"""The largest id the store can hold (signed 64-bit, as in PostgreSQL ``BIGINT`` and SQLite)."""


class CollectorSettings(BaseModel):
    """Tunable limits of the collector (``create_app(settings=...)``; :meth:`from_env` for ``serve``).

    Attributes:
        max_body_bytes: largest request body, in bytes (413 above it). Default 1 MB: one
            interaction with its messages.
        max_tool_calls_bytes: largest ``tool_calls`` of one message, as stored JSON, in bytes (413).
        max_json_depth: deepest nesting of arrays/objects in a request body (422 above it); the
            envelope of an interaction uses 4 levels before ``tool_calls`` content starts.
        docs: ``open`` (``/docs``, ``/redoc`` and ``/openapi.json`` for anyone: the development
            default), ``key`` (only ``/openapi.json``, for a valid API key) or ``off``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_body_bytes: int = Field(1_000_000, gt=0)
    max_tool_calls_bytes: int = Field(256_000, gt=0)
    max_json_depth: int = Field(32, ge=4, le=500)
    docs: Literal["open", "key", "off"] = "open"

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> "CollectorSettings":
        """Settings from ``TUNELOOP_COLLECTOR_<FIELD>`` variables (e.g. ``TUNELOOP_COLLECTOR_DOCS=off``).

        Raises:
            pydantic.ValidationError: a variable holds an invalid value.
        """
        env = os.environ if environ is None else environ
        values = {f: env[f"TUNELOOP_COLLECTOR_{f.upper()}"] for f in cls.model_fields
                  if f"TUNELOOP_COLLECTOR_{f.upper()}" in env}
        return cls.model_validate(values)


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth(body: bytes, stop_above: int | None = None) -> int:
    """Deepest nesting of ``[``/``{`` in JSON text ``body`` (strings skipped); 0 for a scalar.

    Stops counting once the depth passes ``stop_above``. Malformed JSON gives some depth; the
    parser reports it afterwards.
    """
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for ch in brackets:
        depth += 1 if ch in (0x5B, 0x7B) else -1
        if depth > deepest:
            deepest = depth
            if stop_above is not None and deepest > stop_above:
                break
    return deepest


Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class BodyGuard:
    """ASGI middleware: bounded read of write bodies, 413 past ``max_body_bytes``, 422 past the depth."""

    def __init__(self, app: Any, settings: CollectorSettings) -> None:
        self.app, self.settings = app, settings

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        limit = self.settings.max_body_bytes
        length = dict(scope.get("headers", [])).get(b"content-length", b"")
        if length.isdigit() and int(length) > limit:
            await self._reject(scope, receive, send, 413, *self._too_big(int(length)))
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await self._reject(scope, receive, send, 413, *self._too_big(size, partial=True))
                return
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        depth_limit = self.settings.max_json_depth
        if json_depth(body, stop_above=depth_limit) > depth_limit:
            await self._reject(scope, receive, send, 422,
                               f"the request body is nested more than {depth_limit} levels deep (max_json_depth)",
                               "flatten tool_calls (or store deep payloads as a JSON string); the limit is the "
                               "collector setting max_json_depth")
            return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    def _too_big(self, size: int, partial: bool = False) -> tuple[str, str]:
        limit = self.settings.max_body_bytes
        seen = f"more than {limit}" if partial else str(size)
        return (f"the request body is {seen} bytes, over the limit of {limit} bytes (max_body_bytes)",
                "send one interaction per request and keep large payloads out of it (store them elsewhere and "
                "send a reference), or raise the collector setting max_body_bytes")

    @staticmethod
    async def _reject(scope: dict[str, Any], receive: Receive, send: Send, status: int, error: str, fix: str) -> None:
        from fastapi.responses import JSONResponse

        await JSONResponse({"error": error, "fix": fix}, status_code=status)(scope, receive, send)
