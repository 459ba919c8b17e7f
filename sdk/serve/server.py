"""An OpenAI-compatible server of many adapter versions on one base (CPU; issue 16, item 2).

``POST /v1/chat/completions`` answers with the version the request's ``model`` resolves to
(:func:`sdk.serve.routes.resolve`: ``name@3``, ``name@production``, ``name@canary``, or ``name``
with a sticky canary split by the request's ``user`` field or ``X-Conversation-Id`` header).
Every response names the version that produced it: the OpenAI ``model`` field is the concrete
``name@N`` (LangChain's ``response_metadata["model_name"]``), repeated in ``tuneloop.version``,
with the registered digest, and in the ``X-Tuneloop-Version`` header. A model that is not loaded
is a 404 listing what is. ``GET /v1/models`` lists the loaded versions and aliases;
``GET /v1/tuneloop/probe?model=`` returns a version's probe log-probabilities (V3).

Routes come from a callable (e.g. :func:`http_routes` over the collector's ``GET /v1/routes``)
polled by :class:`RouteKeeper`. When the registry cannot be reached the last known routes keep
serving and the failure is logged (and shown in ``/healthz``); the last table is also kept in a
cache file when one is given, so a restart during an outage still serves.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from fastapi import FastAPI, Header, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from sdk.serve.multi import MultiAdapterModel
from sdk.serve.preflight import ServeError
from sdk.serve.routes import NotServedError, RouteTable, aliases, resolve

log = logging.getLogger(__name__)
RouteSource = Callable[[], RouteTable]


class RouteKeeper:
    """The current :class:`RouteTable`: refreshed from ``source``, the last good one kept on failure.

    Args:
        source: returns the current table (raises when the registry is unreachable).
        model: synced to every new table (loads/unloads versions).
        cache: a JSON file holding the last good table (read when ``source`` fails at start).
    Raises:
        ServeError: at start, the source fails and there is no cached table.
    """

    def __init__(self, source: RouteSource, model: MultiAdapterModel, cache: str | Path | None = None) -> None:
        self.source, self.model, self.cache = source, model, Path(cache) if cache else None
        self.table: RouteTable | None = None
        self.last_ok: float | None = None
        self.last_error: str | None = None
        if not self.refresh():
            cached = self._read_cache()
            if cached is None:
                raise ServeError(f"the registry cannot be reached and no routes are cached: {self.last_error}",
                                 "start the collector (or fix the routes URL/key) and start the server again")
            log.warning("serving the cached routes from %s", self.cache)
            self._apply(cached)

    def refresh(self) -> bool:
        """Fetch and apply the routes; on failure log it, keep the current ones and return False."""
        try:
            table = self.source()
        except Exception as exc:  # noqa: BLE001 - any failure of the registry keeps the last routes serving
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.warning("registry unreachable (%s); serving the last known routes (%s)", self.last_error,
                        ", ".join(sorted(self.model.loaded)) or "none")
            return False
        self._apply(table)
        self.last_ok, self.last_error = time.time(), None
        if self.cache is not None:
            self.cache.write_text(table.model_dump_json(indent=2))
        return True

    def _apply(self, table: RouteTable) -> None:
        if table != self.table:
            self.model.sync(table)
            self.table = table

    def _read_cache(self) -> RouteTable | None:
        if self.cache is None or not self.cache.is_file():
            return None
        return RouteTable.model_validate_json(self.cache.read_text())

    def poll(self, every_s: float, stop: threading.Event) -> None:
        """Refresh every ``every_s`` seconds until ``stop`` is set (run in a daemon thread)."""
        while not stop.wait(every_s):
            self.refresh()


def http_routes(base_url: str, api_key: str, timeout_s: float = 5.0) -> RouteSource:
    """A route source reading the collector's ``GET /v1/routes`` with an application's key."""
    import httpx

    def fetch() -> RouteTable:
        r = httpx.get(base_url.rstrip("/") + "/v1/routes", headers={"X-API-Key": api_key}, timeout=timeout_s)
        r.raise_for_status()
        return RouteTable.model_validate(r.json())
    return fetch


class ChatMessageIn(BaseModel):
    """One chat message (text content)."""

    model_config = ConfigDict(extra="ignore")
    role: str
    content: str | list[dict[str, Any]] = ""


class ChatRequest(BaseModel):
    """The subset of OpenAI's chat-completions request this server honours (other fields ignored)."""

    model_config = ConfigDict(extra="ignore")
    model: str
    messages: list[ChatMessageIn] = Field(..., min_length=1)
    max_tokens: int | None = Field(None, ge=1, le=4096)
    max_completion_tokens: int | None = Field(None, ge=1, le=4096)
    temperature: float = Field(0.0, ge=0, le=2)
    seed: int | None = None
    user: str | None = None
    stream: bool = False


def _text(content: str | list[dict[str, Any]]) -> str:
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def _error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)


def create_server(model: MultiAdapterModel, keeper: RouteKeeper, refresh_s: float | None = None) -> FastAPI:
    """The FastAPI app over ``model`` and ``keeper`` (polling every ``refresh_s`` seconds when set)."""
    app = FastAPI(title="tuneloop adapter server", version="1")
    stop = threading.Event()
    if refresh_s:
        threading.Thread(target=keeper.poll, args=(refresh_s, stop), daemon=True).start()
    app.state.stop = stop

    @app.post("/v1/chat/completions")
    def chat(body: ChatRequest, x_conversation_id: str | None = Header(None)) -> JSONResponse:
        """OpenAI chat completions; the answer names the version that produced it."""
        if body.stream:
            return _error(400, "streaming is not supported by the CPU server", "invalid_request_error")
        try:
            label = resolve(keeper.table, body.model, body.user or x_conversation_id, set(model.loaded))
        except NotServedError as exc:
            return _error(404, exc.what, "model_not_found")
        messages = [{"role": m.role, "content": _text(m.content)} for m in body.messages]
        gen = model.generate(label, messages, body.max_completion_tokens or body.max_tokens or 64, body.temperature,
                             body.seed)
        payload = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
                   "model": label, "system_fingerprint": f"tuneloop:{label}",
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": gen.text},
                                "finish_reason": gen.finish_reason}],
                   "usage": {"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
                             "total_tokens": gen.prompt_tokens + gen.completion_tokens},
                   "tuneloop": {"version": label, "requested": body.model, "adapter_sha256": model.loaded[label]}}
        return JSONResponse(payload, headers={"X-Tuneloop-Version": label})

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        """Loaded versions (with digests), aliases, and versions refused with why."""
        return {"object": "list", "data": [{"id": label, "object": "model", "owned_by": "tuneloop",
                                            "sha256": sha} for label, sha in sorted(model.loaded.items())],
                "aliases": aliases(keeper.table) if keeper.table else [], "refused": dict(model.problems)}

    @app.get("/v1/tuneloop/probe")
    def probe(wanted: str = Query(..., alias="model", description="a loaded label or alias")) -> JSONResponse:
        """Probe log-probabilities of ``?model=``."""
        try:
            label = resolve(keeper.table, wanted, None, set(model.loaded))
        except NotServedError as exc:
            return _error(404, exc.what, "model_not_found")
        return JSONResponse({"version": label, **model.probe(label)})

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        """Liveness, loaded versions and the registry's reachability."""
        return {"status": "ok", "loaded": sorted(model.loaded), "registry_error": keeper.last_error,
                "routes_refreshed_at": keeper.last_ok}

    @app.post("/v1/tuneloop/refresh")
    def refresh() -> dict[str, Any]:
        """Re-read the routes now (after a promotion)."""
        return {"refreshed": keeper.refresh(), "loaded": sorted(model.loaded), "registry_error": keeper.last_error}

    return app


def serve_cpu(base_dir: str, source: RouteSource, host: str = "127.0.0.1", port: int = 8100,
              refresh_s: float = 10.0, cache: str | Path | None = None) -> None:
    """Run the CPU server with uvicorn until interrupted."""
    import uvicorn

    model = MultiAdapterModel(base_dir)
    app = create_server(model, RouteKeeper(source, model, cache), refresh_s)
    uvicorn.run(app, host=host, port=port, log_level="info")


def write_table(table: RouteTable, path: str | Path) -> None:
    """Write ``table`` as JSON (a hand-made routes file for :func:`file_routes`)."""
    Path(path).write_text(json.dumps(table.model_dump(mode="json"), indent=2))


def file_routes(path: str | Path) -> RouteSource:
    """A route source reading a JSON :class:`RouteTable` file (no registry needed)."""
    return lambda: RouteTable.model_validate_json(Path(path).read_text())
