"""``tuneloop feedback ...`` commands, plugged into the CLI through the ``tuneloop.cli`` entry point."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, help="The production feedback collector.")
# the same store as `tuneloop adapters` and `tuneloop loop`: $TUNELOOP_STORE_URL when set
UrlOpt = typer.Option("sqlite:///feedback_store.db", envvar="TUNELOOP_STORE_URL",
                      help="SQLAlchemy URL of the feedback store (default $TUNELOOP_STORE_URL)")


@app.command("serve")
def serve_cmd(url: str = UrlOpt,
              host: str = typer.Option("127.0.0.1", help="interface to bind"),
              port: int = typer.Option(8700, help="TCP port")) -> None:
    """Run the feedback collector (FastAPI) until interrupted. Needs the `serve` extra."""
    try:
        from feedback.service import serve
    except ImportError as exc:
        typer.echo(f"error: the collector needs FastAPI and uvicorn ({exc})\nfix: pip install 'tuneloop[serve]'", err=True)
        raise typer.Exit(2) from None
    serve(url=url, host=host, port=port)


@app.command("create-key")
def create_key_cmd(application: str = typer.Argument(..., help="application name, e.g. support-bot"),
                   url: str = UrlOpt) -> None:
    """Create an API key for APPLICATION and print it once (only its SHA-256 is stored)."""
    from feedback.store import new_api_key

    typer.echo(new_api_key(url, application))


keys_app = typer.Typer(no_args_is_help=True, help="List and revoke the collector's API keys.")
app.add_typer(keys_app, name="keys")


@keys_app.command("list")
def keys_list_cmd(url: str = UrlOpt, application: str = typer.Option(None, help="only this application's keys"),
                  as_json: bool = typer.Option(False, "--json", help="print the keys as JSON on stdout")) -> None:
    """List API keys by prefix (the key itself is never stored): application, created, revoked."""
    import dataclasses
    import json

    from feedback.keys import list_keys

    keys = list_keys(url, application)
    if as_json:
        typer.echo(json.dumps([dataclasses.asdict(k) for k in keys], indent=2))
        return
    for k in keys:
        state = f"revoked {k.revoked_at}" if k.revoked_at else "active"
        typer.echo(f"{k.prefix}…  {k.application:20}  created {k.created_at}  {state}", err=True)
    if not keys:
        typer.echo("no keys: create one with `tuneloop feedback create-key APPLICATION`", err=True)


@keys_app.command("revoke")
def keys_revoke_cmd(prefix: str = typer.Argument(..., help="the key's first characters, as `keys list` shows them"),
                    url: str = UrlOpt) -> None:
    """Revoke one key; the service refuses it from the next request on."""
    from feedback.keys import revoke_key

    try:
        info = revoke_key(url, prefix)
    except LookupError as exc:
        typer.echo(f"error: {exc}\nfix: pass a longer prefix from `tuneloop feedback keys list`", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"revoked {info.prefix}… of {info.application} at {info.revoked_at}", err=True)
