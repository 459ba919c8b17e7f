"""The registry as serving routes: :func:`route_table` builds the plain
:class:`sdk.serve.routes.RouteTable` a server of one application loads (its candidate, canary and
production versions, on one base model, each with its registered digest and probe, which the server
checks before serving it); :func:`sdk.serve.routes.vllm_command` turns it into the vLLM multi-LoRA
command line."""

from __future__ import annotations

import json

import sqlalchemy as sa
from sqlalchemy.orm import Session

from feedback.registry import RegistryError, app_id
from feedback.registry_models import AdapterHead, AdapterVersion
from sdk.serve.routes import RoutedAdapter, RoutedName, RouteTable

LIVE = ("candidate", "canary", "production")


def route_table(session: Session, application: str) -> RouteTable:
    """The application's live versions and aliases.

    Raises:
        UnknownError: no such application. RegistryError: live versions on different base models
        (one server shares one base).
    """
    aid = app_id(session, application)
    rows = session.scalars(sa.select(AdapterVersion).where(AdapterVersion.application_id == aid,
                                                           AdapterVersion.state.in_(LIVE))
                           .order_by(AdapterVersion.name, AdapterVersion.number)).all()
    bases = {r.base_model_sha256: r.base_model for r in rows}
    if len(bases) > 1:
        raise RegistryError(f"the live versions of {application} use {len(bases)} base models "
                            f"({', '.join(sorted(bases.values()))}); one server serves one base",
                            "retire the versions on the other base, or run one server per base")
    numbers = {r.id: r.number for r in rows}
    heads = session.scalars(sa.select(AdapterHead).where(AdapterHead.application_id == aid)).all()
    return RouteTable(
        application=application, base_model=next(iter(bases.values()), ""),
        adapters=tuple(RoutedAdapter(name=r.name, number=r.number, path=r.adapter_path, sha256=r.adapter_sha256,
                                     rank=r.lora_rank, state=r.state, **_probe(r.probe_json)) for r in rows),
        names=tuple(RoutedName(name=h.name, production=numbers.get(h.production_id), canary=numbers.get(h.canary_id),
                               canary_fraction=h.canary_fraction) for h in heads))


def _probe(probe_json: str | None) -> dict:
    """The registered probe (V3) as :class:`RoutedAdapter` fields, so the server checks it on load."""
    if not probe_json:
        return {}
    probe = json.loads(probe_json)
    return {"probe_prompt": probe.get("prompt", ""), "probe": tuple(probe.get("logprobs", ()))}
