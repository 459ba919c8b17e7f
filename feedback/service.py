"""The feedback collector: a FastAPI service over the store (issue 5, part 3).

Endpoints (all need an application's API key in ``X-API-Key`` or ``Authorization: Bearer``):

- ``POST /v1/interactions``: record an LLM call (messages, model, latency, ids) → 201 ``{id}``;
- ``POST /v1/feedback``: rate an interaction (by our id or the caller's ``external_id``);
- ``POST /v1/corrections``: attach a corrected response;
- ``GET /v1/feedback?after=&limit=``: the application's feedback, keyset-paginated by id;
- ``GET /healthz``: liveness (no key).

Every write needs an ``Idempotency-Key`` header (after Stripe's API): the first response is
stored with the write in one transaction; a retry with the same key and body replays it
(``replayed: true``) and writes nothing; the same key with another body is ``409``. Two
concurrent requests with one key are resolved by the unique constraint: one commits, the
other rolls back and replays. Errors are JSON ``{"error", "fix"}`` with 400/401/404/409/413/422.

Limits (:class:`feedback.limits.CollectorSettings`, ``TUNELOOP_COLLECTOR_*`` variables for
``serve``): bodies over ``max_body_bytes`` (1 MB) and ``tool_calls`` over ``max_tool_calls_bytes``
are 413 naming the limit; JSON nested deeper than ``max_json_depth`` (32), ids beyond 2^63 - 1
and non-finite numbers are 422. ``/docs``, ``/redoc`` and ``/openapi.json`` are open by default
(development); ``docs="key"`` serves only ``/openapi.json`` and only for a valid API key,
``docs="off"`` serves none.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable

import sqlalchemy as sa
from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from feedback.limits import MAX_ID, BodyGuard, CollectorSettings
from feedback.registry_api import install as install_registry
from feedback.schemas import CorrectionIn, Created, FeedbackIn, FeedbackOut, InteractionIn, Page
from feedback.store import (ApiKey, ChatMessage, Correction, FeedbackEvent, IdempotencyRecord, Interaction,
                            hash_key, sessions)


class ApiError(Exception):
    """An HTTP error with a ``fix`` hint, rendered as ``{"error", "fix"}``."""

    def __init__(self, status: int, error: str, fix: str) -> None:
        super().__init__(error)
        self.status, self.error, self.fix = status, error, fix


def _authenticate(session: Session, x_api_key: str | None, authorization: str | None) -> int:
    """The application id of the presented API key. Raises :class:`ApiError` 401."""
    key = x_api_key or (authorization[7:] if authorization and authorization.lower().startswith("bearer ") else None)
    if not key:
        raise ApiError(401, "missing API key", "send it in the X-API-Key header")
    row = session.scalars(sa.select(ApiKey).where(ApiKey.key_hash == hash_key(key))).one_or_none()
    if row is None or row.revoked_at is not None:
        raise ApiError(401, "unknown or revoked API key",
                       "create one with `tuneloop feedback create-key APPLICATION --url STORE_URL`; "
                       "`tuneloop feedback keys list` shows which keys exist and which are revoked")
    return row.application_id


def _idem_key(idempotency_key: str | None = Header(None)) -> str:
    if not idempotency_key or len(idempotency_key) > 200:
        raise ApiError(400, "missing or over-long Idempotency-Key header",
                       "send a unique Idempotency-Key (<= 200 chars) with every write; reuse it on retries")
    return idempotency_key


def _write(session: Session, app_id: int, key: str, body: Any, do: Callable[[], int]) -> JSONResponse:
    """Run ``do`` (which adds rows and returns the new id) once per idempotency key."""
    digest = hashlib.sha256(body.model_dump_json().encode()).hexdigest()
    replay = _replay(session, app_id, key, digest)
    if replay is not None:
        return replay
    try:
        new_id = do()
        payload = Created(id=new_id).model_dump()
        session.add(IdempotencyRecord(application_id=app_id, key=key, request_hash=digest, status_code=201,
                                      response=json.dumps(payload)))
        session.commit()
    except IntegrityError:
        session.rollback()
        replay = _replay(session, app_id, key, digest)
        if replay is None:
            raise ApiError(409, "the write conflicts with existing data (duplicate external_id?)",
                           "use a new external_id, or the same Idempotency-Key to retry") from None
        return replay
    return JSONResponse(payload, status_code=201)


def _target(session: Session, app_id: int, body: Any) -> int:
    """The interaction id named by ``body`` (id or external_id) within the application; 404 otherwise."""
    cond = (Interaction.id == body.interaction_id if body.interaction_id is not None
            else Interaction.external_id == body.external_id)
    found = session.scalars(sa.select(Interaction.id).where(cond, Interaction.application_id == app_id)).one_or_none()
    if found is None:
        raise ApiError(404, "no such interaction for this application", "record it with POST /v1/interactions first")
    return found


def _replay(session: Session, app_id: int, key: str, digest: str) -> JSONResponse | None:
    rec = session.scalars(sa.select(IdempotencyRecord).where(IdempotencyRecord.application_id == app_id,
                                                             IdempotencyRecord.key == key)).one_or_none()
    if rec is None:
        return None
    if rec.request_hash != digest:
        raise ApiError(409, "this Idempotency-Key was used with a different request body",
                       "use a new Idempotency-Key for a new write")
    return JSONResponse({**json.loads(rec.response), "replayed": True}, status_code=rec.status_code)


def serve(url: str = "sqlite:///feedback_store.db", host: str = "127.0.0.1", port: int = 8700,
          settings: CollectorSettings | None = None) -> None:
    """Run the collector with uvicorn until interrupted (``tuneloop feedback serve``); settings
    default to :meth:`CollectorSettings.from_env`."""
    import socket

    import uvicorn

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        try:  # a busy port printed uvicorn's raw traceback
            probe.bind((host, port))
        except OSError as exc:
            raise SystemExit(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}\n"
                             f"fix: pass another --port, or stop what is using {port}") from None
    uvicorn.run(create_app(url, settings=settings or CollectorSettings.from_env()), host=host, port=port,
                log_level="info")


async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
    return JSONResponse({"error": exc.error, "fix": exc.fix}, status_code=exc.status)


async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
    problems = "; ".join(f"{'.'.join(map(str, e['loc'][1:])) or 'body'}: {e['msg']}" for e in exc.errors())
    return JSONResponse({"error": f"invalid request: {problems}", "fix": "see the API schema at /docs"},
                        status_code=422)


def _db(request: Request) -> Any:
    """One session of the app's store per request."""
    with request.app.state.sessions() as session:
        yield session


def _application(session: Session = Depends(_db), x_api_key: str | None = Header(None),
                 authorization: str | None = Header(None)) -> int:
    return _authenticate(session, x_api_key, authorization)


router = APIRouter()


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """Liveness (no key needed)."""
    return {"status": "ok"}


@router.post("/v1/interactions", status_code=201, response_model=Created)
def post_interaction(body: InteractionIn, request: Request, session: Session = Depends(_db), app_id: int = Depends(_application),
                     key: str = Depends(_idem_key)) -> JSONResponse:
    """Record an LLM call (messages, model, latency, ids)."""
    tool_calls = _tool_calls(body, request.app.state.settings)

    def do() -> int:
        row = Interaction(application_id=app_id, external_id=body.external_id, conversation_id=body.conversation_id,
                          user_id=body.user_id, model=body.model, latency_ms=body.latency_ms)
        session.add(row)
        session.flush()
        session.add_all(ChatMessage(interaction_id=row.id, position=i, role=m.role, content=m.content,
                                    tool_calls=tool_calls[i]) for i, m in enumerate(body.messages))
        return row.id
    return _write(session, app_id, key, body, do)


@router.post("/v1/feedback", status_code=201, response_model=Created)
def post_feedback(body: FeedbackIn, session: Session = Depends(_db), app_id: int = Depends(_application),
                  key: str = Depends(_idem_key)) -> JSONResponse:
    """Rate an interaction (by our id or the caller's ``external_id``)."""
    def do() -> int:
        row = FeedbackEvent(application_id=app_id, interaction_id=_target(session, app_id, body), user_id=body.user_id,
                            rating=body.rating, scale=body.scale, comment=body.comment)
        session.add(row)
        session.flush()
        return row.id
    return _write(session, app_id, key, body, do)


@router.post("/v1/corrections", status_code=201, response_model=Created)
def post_correction(body: CorrectionIn, session: Session = Depends(_db), app_id: int = Depends(_application),
                    key: str = Depends(_idem_key)) -> JSONResponse:
    """Attach a corrected response to an interaction."""
    def do() -> int:
        row = Correction(application_id=app_id, interaction_id=_target(session, app_id, body), user_id=body.user_id,
                         content=body.content)
        session.add(row)
        session.flush()
        return row.id
    return _write(session, app_id, key, body, do)


@router.get("/v1/feedback", response_model=Page)
def list_feedback(after: int = Query(0, ge=0, le=MAX_ID, description="only events with a greater id (a keyset cursor)"),
                  limit: int = Query(100, ge=1, le=1000, description="page size"),
                  session: Session = Depends(_db), app_id: int = Depends(_application)) -> Page:
    """The application's feedback, keyset-paginated by id."""
    rows = session.scalars(sa.select(FeedbackEvent).where(FeedbackEvent.application_id == app_id,
                                                          FeedbackEvent.id > after)
                           .order_by(FeedbackEvent.id).limit(limit + 1)).all()
    items = [FeedbackOut.model_validate(r, from_attributes=True) for r in rows[:limit]]
    return Page(items=items, next_after=items[-1].id if len(rows) > limit else None)


def _tool_calls(body: InteractionIn, settings: CollectorSettings) -> list[str | None]:
    """Each message's ``tool_calls`` as stored JSON text. Raises :class:`ApiError` 413 past the limit."""
    out: list[str | None] = []
    for i, m in enumerate(body.messages):
        text = json.dumps(m.tool_calls) if m.tool_calls is not None else None
        if text is not None and len(text.encode()) > settings.max_tool_calls_bytes:
            raise ApiError(413, f"messages[{i}].tool_calls is {len(text.encode())} bytes, over the limit of "
                                f"{settings.max_tool_calls_bytes} bytes (max_tool_calls_bytes)",
                           "store large tool payloads elsewhere and send a reference, or raise the collector "
                           "setting max_tool_calls_bytes")
        out.append(text)
    return out


def _openapi_for_key(request: Request, _: int = Depends(_application)) -> JSONResponse:
    """The OpenAPI schema, for a valid API key (``docs="key"``)."""
    app = request.app
    return JSONResponse(get_openapi(title=app.title, version=app.version, routes=app.routes))


def create_app(url: str = "sqlite:///feedback_store.db", upgrade: bool = True,
               settings: CollectorSettings | None = None) -> FastAPI:
    """The collector app over the store at ``url`` (migrated to the latest schema when ``upgrade``).

    Args:
        settings: limits and docs access (default :class:`CollectorSettings`: 1 MB bodies, docs open).
    Raises:
        sqlalchemy.exc.OperationalError: the database cannot be reached at start-up.
    """
    settings = settings or CollectorSettings()
    open_docs = settings.docs == "open"
    app = FastAPI(title="tuneloop feedback collector", version="1", docs_url="/docs" if open_docs else None,
                  redoc_url="/redoc" if open_docs else None, openapi_url="/openapi.json" if open_docs else None)
    app.state.settings = settings
    app.state.sessions = sessions(url, upgrade=upgrade)
    if settings.docs == "key":
        app.add_api_route("/openapi.json", _openapi_for_key, methods=["GET"], include_in_schema=False)
    app.add_middleware(BodyGuard, settings=settings)
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.include_router(router)
    install_registry(app)  # issue 16: /v1/adapters..., /v1/routes (feedback.registry_api)
    return app
