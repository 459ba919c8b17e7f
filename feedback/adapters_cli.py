"""``tuneloop adapters register|list|show|diff|promote|rollback`` (the ``tuneloop.cli`` entry point).

Every command works on one application's adapters in the store at ``--url`` (default
``$TUNELOOP_STORE_URL`` or ``sqlite:///feedback_store.db``). Transitions record who (``--by``,
default the login name), when, and why (``--reason``, required) in the audit log. Errors print one
message and its fix, exit 2 (3 for a gate refusal).
"""

from __future__ import annotations

import getpass
import json
import os
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from sdk.errors import TuneloopError

app = typer.Typer(no_args_is_help=True, help="The adapter registry: versions, lineage, promotion, rollback.")

UrlOpt = typer.Option(None, "--url", help="SQLAlchemy URL of the store (default $TUNELOOP_STORE_URL or "
                      "sqlite:///feedback_store.db)")
AppOpt = typer.Option(..., "--app", "-a", help="application name (as in `tuneloop feedback create-key`)")
ByOpt = typer.Option(None, "--by", help="who does this (default: the login name)")
JsonOpt = typer.Option(False, "--json", help="print JSON on stdout")


def _url(url: str | None) -> str:
    return url or os.environ.get("TUNELOOP_STORE_URL", "sqlite:///feedback_store.db")


def _actor(by: str | None) -> str:
    if by:
        return by
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _run(url: str | None, fn: Callable[[Any], Any]) -> Any:
    """Call ``fn(session)`` on the store, turning our errors into a message, its fix and an exit code."""
    from feedback.store import sessions

    try:
        with sessions(_url(url))() as session:
            return fn(session)
    except TuneloopError as exc:
        echo_error(exc)
        raise typer.Exit(exc.exit_code) from None


def echo_error(exc: TuneloopError) -> None:
    """Print ``error:`` and ``fix:`` on stderr (re-raise instead with ``TUNELOOP_DEBUG=1``)."""
    if os.environ.get("TUNELOOP_DEBUG"):
        raise exc
    typer.echo(f"error: {exc.what}", err=True)
    if exc.fix:
        typer.echo(f"fix: {exc.fix}", err=True)


def _ref(value: str) -> int | str:
    return int(value) if value.isdigit() else value


def _as_dict(v) -> dict[str, Any]:
    from dataclasses import asdict

    d = asdict(v)
    d["label"] = v.label
    d["created_at"] = v.created_at.isoformat() if v.created_at else None
    return d


@app.command("register")
def register_cmd(adapter: Path = typer.Argument(..., help="adapter folder (e.g. runs/x/rl/adapter)"),
                 name: str = typer.Option(..., "--name", "-n", help="adapter name, e.g. support"),
                 application: str = AppOpt, url: Optional[str] = UrlOpt,
                 base_model: Optional[str] = typer.Option(None, help="base model folder (default: from lineage.json)"),
                 watermark: Optional[int] = typer.Option(None, help="last feedback event id in its training data"),
                 data_version: str = typer.Option("", help="version of the data it was trained on"),
                 parent: Optional[int] = typer.Option(None, help="the version number it was trained from"),
                 probe: bool = typer.Option(True, help="record the probe log-probabilities (V3; loads the model)"),
                 by: Optional[str] = ByOpt, reason: str = typer.Option("", help="why"),
                 as_json: bool = JsonOpt) -> None:
    """Register ADAPTER as the next version of NAME (a candidate)."""
    from feedback.registration import registration_from_folder
    from feedback.registry import register

    def go(s):
        reg = registration_from_folder(adapter, base_model=base_model, feedback_watermark=watermark,
                                       data_version=data_version, parent=parent, probe=probe)
        return register(s, application, name, reg, actor=_actor(by), reason=reason)

    v = _run(url, go)
    _print(_as_dict(v) if as_json else f"registered {v.label} (candidate; gate: {_gate(v)})", as_json)


@app.command("list")
def list_cmd(application: str = AppOpt, name: Optional[str] = typer.Option(None, "--name", "-n"),
             url: Optional[str] = UrlOpt, as_json: bool = JsonOpt) -> None:
    """The application's versions with state, gate and lineage summary."""
    from feedback.registry import list_versions

    versions = _run(url, lambda s: list_versions(s, application, name))
    if as_json:
        _print([_as_dict(v) for v in versions], True)
        return
    for v in versions:
        parent = f"@{v.parent}" if v.parent else "-"
        typer.echo(f"{v.label:<20} {v.state:<10} gate={_gate(v):<7} parent={parent:<5} "
                   f"watermark={v.feedback_watermark} sha={v.adapter_sha256[:12]} by={v.created_by}")


@app.command("show")
def show_cmd(name: str = typer.Argument(...), ref: str = typer.Argument(..., help="number, production or canary"),
             application: str = AppOpt, url: Optional[str] = UrlOpt, as_json: bool = JsonOpt) -> None:
    """One version: lineage, evaluation, gate verdict and its audit trail."""
    from feedback.registry import get_version, list_events

    def go(s):
        v = get_version(s, application, name, _ref(ref))
        return v, [e for e in list_events(s, application, name) if e.number == v.number]

    v, events = _run(url, go)
    out = _as_dict(v)
    out["audit"] = [{"action": e.action, "from": e.from_state, "to": e.to_state, "by": e.actor, "why": e.reason,
                     "at": e.at.isoformat()} for e in events]
    _print(out, True) if as_json else typer.echo(json.dumps(out, indent=2, default=str))


@app.command("diff")
def diff_cmd(name: str = typer.Argument(...), a: str = typer.Argument(...), b: str = typer.Argument(...),
             application: str = AppOpt, url: Optional[str] = UrlOpt, as_json: bool = JsonOpt) -> None:
    """What differs between versions A and B of NAME (lineage, config, eval, gate)."""
    from feedback.registry import diff_versions, get_version

    d = _run(url, lambda s: diff_versions(get_version(s, application, name, _ref(a)),
                                          get_version(s, application, name, _ref(b))))
    if as_json:
        _print({k: list(v) for k, v in d.items()}, True)
        return
    for key, (x, y) in d.items():
        typer.echo(f"{key}: {x!r} -> {y!r}")


@app.command("promote")
def promote_cmd(name: str = typer.Argument(...), ref: str = typer.Argument(..., help="number or canary"),
                application: str = AppOpt, url: Optional[str] = UrlOpt,
                reason: str = typer.Option(..., "--reason", help="why (kept in the audit log)"),
                canary: Optional[float] = typer.Option(None, help="start a canary with this traffic fraction instead"),
                min_samples: int = typer.Option(50, help="canary rule: ratings needed per version"),
                max_drop: float = typer.Option(0.05, help="canary rule: largest allowed drop in positive-rating rate"),
                by: Optional[str] = ByOpt, as_json: bool = JsonOpt) -> None:
    """Make version REF production (or, with --canary F, send it F of the traffic under a fixed rule)."""
    from feedback.canary import CanaryRule
    from feedback.transitions import promote, start_canary

    def go(s):
        if canary is None:
            return promote(s, application, name, _ref(ref), actor=_actor(by), reason=reason)
        rule = CanaryRule(min_samples=min_samples, max_drop=max_drop)
        return start_canary(s, application, name, _ref(ref), canary, rule.to_dict(), actor=_actor(by), reason=reason)

    v = _run(url, go)
    _print(_as_dict(v) if as_json else f"{v.label} is now {v.state}", as_json)


@app.command("rollback")
def rollback_cmd(name: str = typer.Argument(...), application: str = AppOpt, url: Optional[str] = UrlOpt,
                 reason: str = typer.Option(..., "--reason", help="why (kept in the audit log)"),
                 canary: bool = typer.Option(False, "--canary", help="end the running canary instead"),
                 by: Optional[str] = ByOpt, as_json: bool = JsonOpt) -> None:
    """Return production to the previous production version (or end the canary with --canary)."""
    from feedback.transitions import end_canary, rollback

    def go(s):
        if canary:
            return end_canary(s, application, name, actor=_actor(by), reason=reason)
        return rollback(s, application, name, actor=_actor(by), reason=reason)

    v = _run(url, go)
    _print(_as_dict(v) if as_json else (f"canary {v.label} rolled back (retired)" if canary
                                        else f"{v.label} is production again"), as_json)


def _gate(v) -> str:
    return {True: "passed", False: "failed", None: "none"}[v.gate_passed]


def _print(value: Any, as_json: bool) -> None:
    typer.echo(json.dumps(value, indent=2, default=str) if as_json else value)


@app.command("serve")
def serve_cmd(application: str = AppOpt, url: Optional[str] = UrlOpt,
              collector: Optional[str] = typer.Option(None, help="read routes from this collector URL (with --key) "
                                                      "instead of the store"),
              key: Optional[str] = typer.Option(None, envvar="TUNELOOP_API_KEY", help="the application's API key"),
              host: str = typer.Option("127.0.0.1"), port: int = typer.Option(8100),
              refresh_s: float = typer.Option(10.0, help="re-read the routes every this many seconds"),
              cache: Optional[Path] = typer.Option(None, help="keep the last routes here (serves during an outage)"),
              vllm: bool = typer.Option(False, "--vllm", help="print the vLLM multi-LoRA command instead (GPU)")) -> None:
    """Serve every live version of the application on one base (CPU, OpenAI-compatible), or print vLLM's command."""
    from feedback.routes import route_table
    from feedback.store import sessions
    from sdk.serve.routes import vllm_command
    from sdk.serve.server import http_routes, serve_cpu

    def from_store():
        with sessions(_url(url), upgrade=False)() as s:
            return route_table(s, application)

    source = http_routes(collector, key) if collector and key else from_store
    table = _run(url, lambda _s: source())
    if vllm:
        typer.echo(_run(url, lambda _s: vllm_command(table, port)))
        return
    serve_cpu(table.base_model, source, host=host, port=port, refresh_s=refresh_s, cache=cache)
