"""``tuneloop feedback ...`` commands, plugged into the CLI through the ``tuneloop.cli`` entry point."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, help="The production feedback collector.")


@app.command("serve")
def serve_cmd(url: str = typer.Option("sqlite:///feedback_store.db", help="SQLAlchemy URL of the feedback store"),
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
                   url: str = typer.Option("sqlite:///feedback_store.db", help="SQLAlchemy URL of the feedback store")) -> None:
    """Create an API key for APPLICATION and print it once (only its SHA-256 is stored)."""
    from feedback.store import new_api_key

    typer.echo(new_api_key(url, application))
