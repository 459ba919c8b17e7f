"""The ``tuneloop`` command line (Typer): ``tuneloop = sdk.run.cli:app``.

``tuneloop run CONFIG`` runs the whole pipeline; each stage is also its own command
(``tasks build``, ``sft``, ``rl``, ``eval``, ``report``). A re-run skips complete stages.
Errors we raise on purpose print one message with its fix and exit non-zero, without a
traceback (``TUNELOOP_DEBUG=1`` shows it). Other packages add command groups through the
``tuneloop.cli`` entry-point group (``feedback`` adds ``tuneloop feedback serve``).
"""

from __future__ import annotations

import logging
import os
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Optional

import typer
import yaml
from rich.console import Console

from sdk.errors import TuneloopError

# the stage names, spelled here so `tuneloop --help` needs no import of the stages (checked against
# sdk.run.spec.STAGES by a test)
STAGE_NAMES = ("tasks", "sft", "rl", "rl_compare", "eval", "report")

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="tuneloop: your tests and feedback → verified tasks → LoRA SFT + GRPO → a report that proves it.")
tasks_app = typer.Typer(no_args_is_help=True, help="Build and inspect task sets.")
app.add_typer(tasks_app, name="tasks")
console = Console(stderr=True)

ConfigArg = typer.Argument(..., exists=False, help="YAML config, e.g. examples/quickstart/config.yaml")
SetOpt = typer.Option(None, "--set", help="override a config key: --set rl.max_steps=2 (repeatable)")
ForceOpt = typer.Option(False, "--force", help="re-run stages even when complete")


def _overrides(pairs: list[str] | None) -> dict:
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise TuneloopError(f"--set {pair!r} is not KEY=VALUE", "write e.g. --set rl.max_steps=2")
        if not key.strip():
            raise TuneloopError(f"--set {pair!r} has no key before `=`", "write e.g. --set rl.max_steps=2")
        try:
            out[key] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise TuneloopError(f"--set {pair!r}: the value is not valid YAML ({exc.problem or exc})",
                                "quote the value, e.g. --set 'tasks.system_prompt=\"a: b\"', or fix its brackets") from exc
    return out


def _run(config: Path, stages: tuple[str, ...] | None, overrides: list[str] | None, force: bool) -> None:
    logging.basicConfig(level=os.environ.get("TUNELOOP_LOG", "WARNING"))
    if not os.environ.get("TUNELOOP_LOG"):  # its CPU-kernel notice on import is noise on every command
        logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
    show = sys.stderr.isatty() or bool(os.environ.get("TUNELOOP_PROGRESS"))

    def go():
        pipe = _pipeline(config, overrides)
        pipe.progress = show
        from sdk.run.spec import STAGES

        pipe.run(stages or STAGES, force=force)

    try:
        _guard(go)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: re-run the same command to resume[/yellow]")
        raise typer.Exit(130) from None


@app.command()
def run(config: Path = ConfigArg, stage: Optional[list[str]] = typer.Option(
        None, "--stage", help=f"run only these stages (repeatable): {', '.join(STAGE_NAMES)}"),
        set_: Optional[list[str]] = SetOpt, force: bool = ForceOpt) -> None:
    """Run the whole pipeline (or the given stages) into the config's run_dir."""
    _run(config, tuple(stage) if stage else None, set_, force)


@tasks_app.command("build")
def tasks_build(config: Path = ConfigArg, set_: Optional[list[str]] = SetOpt, force: bool = ForceOpt) -> None:
    """Read sources, split, validate references in the sandbox; write tasks/tasks.jsonl."""
    _run(config, ("tasks",), set_, force)


@app.command()
def sft(config: Path = ConfigArg, set_: Optional[list[str]] = SetOpt, force: bool = ForceOpt) -> None:
    """LoRA SFT (needs the tasks stage)."""
    _run(config, ("tasks", "sft"), set_, force)


@app.command()
def rl(config: Path = ConfigArg, set_: Optional[list[str]] = SetOpt, force: bool = ForceOpt) -> None:
    """GRPO with sandboxed rewards (runs missing upstream stages first; the comparison arm when rl.compare is on)."""
    _run(config, ("tasks", "sft", "rl", "rl_compare"), set_, force)


@app.command("eval")
def eval_(config: Path = ConfigArg, set_: Optional[list[str]] = SetOpt, force: bool = ForceOpt) -> None:
    """Evaluate base and tuned model on the held-out and OOD splits."""
    _run(config, ("tasks", "sft", "rl", "eval"), set_, force)


@app.command()
def report(config: Path = ConfigArg, set_: Optional[list[str]] = SetOpt) -> None:
    """Write report.json and report.html from the evaluation, and apply the regression gate."""
    _run(config, ("report",), set_, False)


def _pipeline(config: Path, overrides: list[str] | None):
    from sdk.config import load_config

    if os.getcwd() not in sys.path:  # dotted paths in a config (`pkg.module:Class`) import as under `python -m`
        sys.path.insert(0, os.getcwd())
    cfg = load_config(config, _overrides(overrides))  # validate before the slow torch/transformers imports
    from sdk.run.pipeline import Pipeline

    return Pipeline(cfg, console=console)


def _guard(fn):
    """Run ``fn`` turning our errors into one message with its fix."""
    try:
        return fn()
    except TuneloopError as exc:
        if os.environ.get("TUNELOOP_DEBUG"):
            raise
        console.print(f"[bold red]error:[/bold red] {exc.what}")
        if exc.fix:
            console.print(f"[bold]fix:[/bold] {exc.fix}")
        raise typer.Exit(exc.exit_code) from None


@app.command()
def export(config: Path = ConfigArg, out: Optional[Path] = typer.Option(None, help="default: RUN_DIR/export"),
           dtype: str = typer.Option("bfloat16", help="float32, bfloat16 or float16"),
           set_: Optional[list[str]] = SetOpt) -> None:
    """Merge the tuned adapter into the base model (a folder vLLM serves) and print the serve command."""
    from sdk.errors import ModelError
    from sdk.serve.export import export_merged

    def go():
        pipe = _pipeline(config, set_)
        adapter = pipe.adapter_for_eval()
        if adapter is None:
            raise ModelError(f"no trained adapter in {pipe.run_dir}", "run `tuneloop run CONFIG` first")
        export_merged(pipe.model_path, adapter, out or pipe.layout.export_dir, dtype=dtype)

    _guard(go)


@app.command()
def serve(config: Path = ConfigArg, port: int = typer.Option(8000), set_: Optional[list[str]] = SetOpt) -> None:
    """Serve the base model with the tuned adapter through vLLM (needs the `gpu` extra and a GPU)."""
    import importlib.util
    import shlex

    from sdk.errors import ModelError
    from sdk.serve.export import lora_serve_command

    def go():
        pipe = _pipeline(config, set_)
        adapter = pipe.adapter_for_eval()
        if adapter is None:
            raise ModelError(f"no trained adapter in {pipe.run_dir}", "run `tuneloop run CONFIG` first")
        cmd = lora_serve_command(pipe.model_path, adapter).command + f" --port {port}"
        if importlib.util.find_spec("vllm") is None:
            raise ModelError("vLLM is not installed", f"pip install 'tuneloop[gpu]' on a GPU machine, then run: {cmd}")
        os.execvp("vllm", shlex.split(cmd))

    _guard(go)


def _load_plugins() -> None:
    for ep in entry_points(group="tuneloop.cli"):
        try:
            app.add_typer(ep.load(), name=ep.name)
        except Exception as exc:  # noqa: BLE001 - a broken plug-in must not break the CLI
            logging.getLogger(__name__).warning("CLI plug-in %s failed to load: %s", ep.name, exc)


_load_plugins()

if __name__ == "__main__":
    app()
