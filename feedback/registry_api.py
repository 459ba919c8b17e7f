"""The adapter registry through the collector's API (issue 16), authorised per application.

Every endpoint needs an application's API key (``X-API-Key`` or ``Authorization: Bearer``) and
sees only that application's adapters. The audit actor is ``<by> (key <prefix>)``.

- ``GET  /v1/adapters``: versions; ``GET /v1/adapters/{name}/versions/{ref}``: one (number or alias);
- ``POST /v1/adapters/{name}/versions``: register (a :class:`~feedback.registry.Registration`);
- ``GET  /v1/adapters/{name}/diff?a=&b=``; ``GET /v1/adapters/{name}/events``: the audit log;
- ``POST /v1/adapters/{name}/promote`` ``{version, reason, canary_fraction?, rule?}``;
- ``POST /v1/adapters/{name}/rollback`` ``{reason, canary?}``;
- ``GET  /v1/adapters/{name}/metrics``: live metrics per version; ``GET .../feedback``: per version;
- ``POST /v1/adapters/{name}/canary/decide``: apply the canary's rule; ``GET .../canary``: HTML page;
- ``GET  /v1/routes``: what a server should load (:class:`sdk.serve.routes.RouteTable` as JSON).

Errors are ``{"error", "fix"}`` with the registry error's status (404 unknown, 409 refused).
:func:`install` adds the router and its error handler to the collector app (one line in
``create_app``); importing this module installs the attribution hook (:mod:`feedback.attribution`).
"""

from __future__ import annotations

import html
from dataclasses import asdict
from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, Depends, FastAPI, Header, Request
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from feedback import attribution  # noqa: F401 - installs the attribution hook for the collector
from feedback.canary import CanaryRule, decide_and_apply, version_metrics
from feedback.registry import (Registration, RegistryError, diff_versions, get_head, get_version, list_events,
                               list_versions, register)
from feedback.routes import route_table
from feedback.store import ApiKey, Application, hash_key
from feedback.transitions import end_canary, promote, start_canary

router = APIRouter(prefix="/v1", tags=["adapters"])


class _AuthError(RegistryError):
    status = 401


def _db(request: Request) -> Any:
    with request.app.state.sessions() as session:
        yield session


def _caller(session: Session = Depends(_db), x_api_key: str | None = Header(None),
            authorization: str | None = Header(None)) -> tuple[str, str]:
    """(application name, key prefix) of the presented API key. Raises 401."""
    key = x_api_key or (authorization[7:] if authorization and authorization.lower().startswith("bearer ") else None)
    if not key:
        raise _AuthError("missing API key", "send it in the X-API-Key header")
    row = session.execute(sa.select(Application.name, ApiKey.prefix, ApiKey.revoked_at)
                          .join(ApiKey, ApiKey.application_id == Application.id)
                          .where(ApiKey.key_hash == hash_key(key))).one_or_none()
    if row is None or row.revoked_at is not None:
        raise _AuthError("unknown or revoked API key", "create one with `tuneloop feedback create-key APP`")
    return row.name, row.prefix


class PromoteIn(BaseModel):
    """Promote a version (or start its canary when ``canary_fraction`` is set)."""

    model_config = ConfigDict(extra="forbid")
    version: int | str = Field(..., description="version number, or `canary`")
    reason: str = Field(..., min_length=1, max_length=2000, description="why (audit log)")
    by: str = Field("api", max_length=100, description="who (audit log; the key prefix is added)")
    canary_fraction: float | None = Field(None, gt=0, lt=1, description="start a canary with this share of traffic")
    rule: dict[str, Any] | None = Field(None, description="canary rule: min_samples, max_drop, max_correction_rise")


class RollbackIn(BaseModel):
    """Roll production back to its previous version (or end the canary)."""

    model_config = ConfigDict(extra="forbid")
    reason: str = Field(..., min_length=1, max_length=2000)
    by: str = Field("api", max_length=100)
    canary: bool = Field(False, description="end the running canary instead")


def _out(v) -> dict[str, Any]:
    d = asdict(v)
    d["label"] = v.label
    return d


@router.get("/adapters")
def adapters(name: str | None = None, session: Session = Depends(_db), caller=Depends(_caller)) -> JSONResponse:
    """The application's adapter versions."""
    return JSONResponse(_json([_out(v) for v in list_versions(session, caller[0], name)]))


@router.get("/adapters/{name}/versions/{ref}")
def show(name: str, ref: str, session: Session = Depends(_db), caller=Depends(_caller)) -> JSONResponse:
    """One version (number, ``production`` or ``canary``)."""
    return JSONResponse(_json(_out(get_version(session, caller[0], name, ref))))


@router.post("/adapters/{name}/versions", status_code=201)
def register_version(name: str, body: dict[str, Any], session: Session = Depends(_db),
                     caller=Depends(_caller)) -> JSONResponse:
    """Register a version from its :class:`Registration` fields (plus optional ``by``, ``reason``)."""
    by, reason = body.pop("by", "api"), body.pop("reason", "")
    try:
        reg = Registration(**{**body, "gate_reasons": tuple(body.get("gate_reasons", ()))})
    except TypeError as exc:
        raise RegistryError(f"invalid registration: {exc}", "send the fields of feedback.registry.Registration") from None
    v = register(session, caller[0], name, reg, actor=f"{by} (key {caller[1]})", reason=reason)
    return JSONResponse(_json(_out(v)), status_code=201)


@router.get("/adapters/{name}/diff")
def diff(name: str, a: str, b: str, session: Session = Depends(_db), caller=Depends(_caller)) -> JSONResponse:
    """Fields that differ between versions ``a`` and ``b``."""
    d = diff_versions(get_version(session, caller[0], name, a), get_version(session, caller[0], name, b))
    return JSONResponse(_json({k: list(v) for k, v in d.items()}))


@router.get("/adapters/{name}/events")
def events(name: str, session: Session = Depends(_db), caller=Depends(_caller)) -> JSONResponse:
    """The audit log of ``name``."""
    return JSONResponse(_json([asdict(e) for e in list_events(session, caller[0], name)]))


@router.post("/adapters/{name}/promote")
def promote_version(name: str, body: PromoteIn, session: Session = Depends(_db), caller=Depends(_caller)) -> JSONResponse:
    """Promote a version, or start its canary."""
    actor = f"{body.by} (key {caller[1]})"
    ref = int(body.version) if str(body.version).isdigit() else body.version
    if body.canary_fraction is None:
        v = promote(session, caller[0], name, ref, actor=actor, reason=body.reason)
    else:
        rule = CanaryRule(**(body.rule or {})).to_dict()
        v = start_canary(session, caller[0], name, ref, body.canary_fraction, rule, actor=actor, reason=body.reason)
    return JSONResponse(_json(_out(v)))


@router.post("/adapters/{name}/rollback")
def rollback_version(name: str, body: RollbackIn, session: Session = Depends(_db),
                     caller=Depends(_caller)) -> JSONResponse:
    """Roll production back, or end the canary."""
    from feedback.transitions import rollback

    actor = f"{body.by} (key {caller[1]})"
    v = (end_canary(session, caller[0], name, actor=actor, reason=body.reason) if body.canary
         else rollback(session, caller[0], name, actor=actor, reason=body.reason))
    return JSONResponse(_json(_out(v)))


@router.get("/adapters/{name}/metrics")
def metrics(name: str, session: Session = Depends(_db), caller=Depends(_caller)) -> JSONResponse:
    """Live metrics per version (positive-rating and correction rates with 95 % intervals)."""
    return JSONResponse(_json({n: asdict(m) for n, m in version_metrics(session, caller[0], name).items()}))


@router.get("/adapters/{name}/feedback")
def feedback(name: str, session: Session = Depends(_db), caller=Depends(_caller)) -> JSONResponse:
    """Ratings and corrections per version number."""
    from feedback.attribution import feedback_by_version

    rows = feedback_by_version(session, caller[0], name)
    return JSONResponse(_json({n: [asdict(r) for r in items] for n, items in rows.items()}))


@router.post("/adapters/{name}/canary/decide")
def canary_decide(name: str, session: Session = Depends(_db), caller=Depends(_caller)) -> JSONResponse:
    """Apply the running canary's rule now (promote, roll back or wait)."""
    d = decide_and_apply(session, caller[0], name, actor=f"canary-rule (key {caller[1]})")
    return JSONResponse(_json(asdict(d)))


@router.get("/adapters/{name}/canary", response_class=HTMLResponse)
def canary_page(name: str, session: Session = Depends(_db), caller=Depends(_caller)) -> HTMLResponse:
    """A report page: the canary, its rule, per-version metrics and the audit trail."""
    head, rows = get_head(session, caller[0], name), version_metrics(session, caller[0], name)
    cells = "".join(f"<tr><td>{name}@{m.number}</td><td>{m.served}</td><td>{m.ratings}</td>"
                    f"<td>{_pct(m.positive_rate)} [{m.positive_interval[0]:.2f}, {m.positive_interval[1]:.2f}]</td>"
                    f"<td>{_pct(m.correction_rate)}</td></tr>" for m in rows.values())
    log = "".join(f"<li>{e.at:%Y-%m-%d %H:%M:%S} {html.escape(e.actor)}: {e.action} {name}@{e.number} "
                  f"{e.from_state} → {e.to_state} — {html.escape(e.reason)}</li>" for e in list_events(session, caller[0], name))
    body = (f"<!DOCTYPE html><html><head><title>{html.escape(name)} canary</title></head><body>"
            f"<h1>{html.escape(name)}</h1><p>production: @{head.production}; canary: @{head.canary} "
            f"({head.canary_fraction:.0%} of traffic); rule: {html.escape(str(head.canary_rule))}</p>"
            "<table border=1><tr><th>version</th><th>served</th><th>ratings</th><th>positive rate [95% CI]</th>"
            f"<th>correction rate</th></tr>{cells}</table><h2>Audit log</h2><ul>{log}</ul></body></html>")
    return HTMLResponse(body)


@router.get("/routes")
def routes(session: Session = Depends(_db), caller=Depends(_caller)) -> JSONResponse:
    """What a server of this application loads: every live version and the aliases."""
    return JSONResponse(route_table(session, caller[0]).model_dump(mode="json"))


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.1%}"


def _json(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value, default=str))


async def _registry_error(_: Request, exc: RegistryError) -> JSONResponse:
    return JSONResponse({"error": exc.what, "fix": exc.fix}, status_code=exc.status)


def install(app: FastAPI) -> None:
    """Add the registry endpoints and their error handler to the collector ``app``."""
    app.include_router(router)
    app.add_exception_handler(RegistryError, _registry_error)
