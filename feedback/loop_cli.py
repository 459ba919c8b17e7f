"""``tuneloop loop CONFIG [--watch]`` (the ``tuneloop.cli`` entry point ``loop``): one pass of
:mod:`feedback.loop` per call, so cron or an orchestrator can schedule it; ``--watch`` repeats
passes every ``--interval`` seconds until interrupted."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import typer

from feedback.adapters_cli import echo_error
from sdk.errors import TuneloopError

app = typer.Typer(help="Continuous retraining from production feedback (one pass per call).",
                  invoke_without_command=True, no_args_is_help=True,
                  context_settings={"allow_interspersed_args": True})  # `loop CONFIG --watch` as well as `loop --watch CONFIG`


@app.callback()
def loop(config: Path = typer.Argument(..., help="loop YAML (store_url, application, adapter, run_config, ...)"),
         watch: bool = typer.Option(False, "--watch", help="keep running passes"),
         interval: float = typer.Option(300.0, help="seconds between passes with --watch"),
         as_json: bool = typer.Option(False, "--json", help="print each pass's result as JSON")) -> None:
    """Judge the canary, or retrain on new feedback, register the candidate and start its canary."""
    from feedback.loop import load_loop_config, run_pass

    while True:
        try:
            result = run_pass(load_loop_config(config))
        except TuneloopError as exc:
            echo_error(exc)
            if not watch:
                raise typer.Exit(exc.exit_code) from None
        else:
            typer.echo(json.dumps(asdict(result)) if as_json else f"{result.action}: {result.detail}")
        if not watch:
            return
        time.sleep(interval)
