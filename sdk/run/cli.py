"""The ``tuneloop`` command line (Typer): ``tuneloop = sdk.run.cli:app``.

``tuneloop run CONFIG`` runs the whole pipeline; each stage is also its own command
(``tasks build``, ``sft``, ``rl``, ``eval``, ``report``) that first runs whatever upstream stage is
missing. A re-run skips complete stages; ``--force`` redoes the command's own stages only. A stage
whose inputs are out of date is refused with the command that brings them up to date. Human output
goes to stderr; ``--json`` prints the command's result on stdout. Errors we raise on purpose print
one message with its fix and exit non-zero, without a traceback (``TUNELOOP_DEBUG=1`` shows it).
Other packages add command groups through the ``tuneloop.cli`` entry-point group (``feedback``
adds ``tuneloop feedback serve``).
"""

from __future__ import annotations

import logging
import os
import sys
from importlib.metadata import PackageNotFoundError, entry_points, version
from pathlib import Path
from typing import Optional

import typer
import yaml
from rich.markup import escape

from sdk.errors import TuneloopError
from sdk.run.output import configure, console, emit, errors, live_progress, run_result, tasks_result

# the stage names, spelled here so `tuneloop --help` needs no import of the stages (checked against
# sdk.run.spec.STAGES by a test)
STAGE_NAMES = ("tasks", "sft", "rl", "rl_compare", "eval", "report")

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="tuneloop: your tests and feedback → verified tasks → LoRA SFT + GRPO → a report that proves it.")
tasks_app = typer.Typer(no_args_is_help=True, help="Build and inspect task sets.")
app.add_typer(tasks_app, name="tasks")

ConfigArg = typer.Argument(..., exists=False, help="YAML config, e.g. examples/quickstart/config.yaml")
SetOpt = typer.Option(None, "--set", help="override a config key: --set rl.max_steps=2, --set sources.0.limit=5 "
                      "(dotted keys; numbers index lists; the value is YAML; repeatable)")
ForceOpt = typer.Option(False, "--force", help="redo this command's stages even when complete (not their inputs)")
JsonOpt = typer.Option(False, "--json", help="print the result as JSON on stdout")


def _version() -> str:
    try:
        return version("tuneloop")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"tuneloop {_version()}")
        raise typer.Exit()


@app.callback()
def main(quiet: bool = typer.Option(False, "-q", "--quiet", help="errors only on stderr"),
         verbose: bool = typer.Option(False, "-v", "--verbose", help="show library warnings and logs"),
         _v: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                 help="print the version and exit")) -> None:
    """tuneloop: your tests and feedback → verified tasks → LoRA SFT + GRPO → a report that proves it."""
    configure(quiet, verbose)


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


def _run(config: Path, stages: tuple[str, ...] | None, overrides: list[str] | None, force: bool,
         as_json: bool = False, redo: tuple[str, ...] = ()) -> None:
    """Run ``stages`` (all when None); ``force`` redoes ``redo`` (the command's own stages), or every
    stage named when ``redo`` is empty."""
    def go():
        pipe = _pipeline(config, overrides)
        pipe.progress = live_progress()
        from sdk.run.spec import STAGES

        todo = stages or STAGES
        report = pipe.run(todo, force=force and not redo, redo=redo if force else ())
        emit(run_result(pipe, todo, report), as_json)

    try:
        _guard(go, as_json)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: re-run the same command to resume[/yellow]")
        raise typer.Exit(130) from None


@app.command()
def run(config: Path = ConfigArg, stage: Optional[list[str]] = typer.Option(
        None, "--stage", help=f"run only these stages (repeatable): {', '.join(STAGE_NAMES)}"),
        set_: Optional[list[str]] = SetOpt, force: bool = ForceOpt, as_json: bool = JsonOpt) -> None:
    """Run the whole pipeline (or the given stages) into the config's run_dir."""
    _run(config, tuple(stage) if stage else None, set_, force, as_json)


@tasks_app.command("build")
def tasks_build(config: Path = ConfigArg, set_: Optional[list[str]] = SetOpt, force: bool = ForceOpt,
                as_json: bool = JsonOpt) -> None:
    """Read sources, split, validate references in the sandbox; write tasks/tasks.jsonl."""
    _run(config, ("tasks",), set_, force, as_json)


@tasks_app.command("show")
def tasks_show(config: Path = ConfigArg, set_: Optional[list[str]] = SetOpt, as_json: bool = JsonOpt) -> None:
    """Show the built task set: splits per domain, sources, quarantine reasons, health warnings, files."""
    def go():
        pipe = _pipeline(config, set_)
        if not pipe.layout.counts_json.is_file():
            raise TuneloopError(f"no task set in {pipe.run_dir}", "run `tuneloop tasks build CONFIG` first")
        result = tasks_result(pipe)
        from sdk.run.health import print_task_summary

        print_task_summary(result, console)
        emit(result, as_json)

    _guard(go, as_json)


@tasks_app.command("prompt")
def tasks_prompt(config: Path = ConfigArg,
                 task: str = typer.Argument(..., help="task id, a unique prefix of it, or a locator pkg/mod.py::func"),
                 raw: bool = typer.Option(False, "--raw", help="the messages, not the chat template's text"),
                 set_: Optional[list[str]] = SetOpt, as_json: bool = JsonOpt) -> None:
    """Print a task's prompt exactly as the model sees it (chat template, or raw messages).

    Through the model's chat template when the model is on this machine, else the raw messages."""
    def go():
        pipe = _pipeline(config, set_)
        if not pipe.layout.tasks_jsonl.is_file():
            raise TuneloopError(f"no task set in {pipe.run_dir}", "run `tuneloop tasks build CONFIG` first")
        from sdk.run.prompt_view import show_prompt
        from sdk.tasks.taskset import TaskSet

        from sdk.models import local_model_name

        cfg = pipe.cfg
        out = show_prompt(TaskSet.load(pipe.layout.tasks_jsonl), task, local_model_name(cfg.model.name, cfg.base_dir),
                          cfg.model.cache_dir, raw)
        console.print(f"[bold]{out['id']}[/bold] {out['locator']} ({out['where']}); rendered by {out['rendered_by']}")
        if not as_json:
            sys.stdout.write(out["text"] + ("" if out["text"].endswith("\n") else "\n"))
        emit(out, as_json)

    _guard(go, as_json)


@app.command()
def sft(config: Path = ConfigArg, set_: Optional[list[str]] = SetOpt, force: bool = ForceOpt,
        as_json: bool = JsonOpt) -> None:
    """LoRA SFT (builds the task set first if it is missing)."""
    _run(config, ("tasks", "sft"), set_, force, as_json, redo=("sft",))


@app.command()
def rl(config: Path = ConfigArg, set_: Optional[list[str]] = SetOpt, force: bool = ForceOpt,
       as_json: bool = JsonOpt) -> None:
    """GRPO with sandboxed rewards (runs missing upstream stages first; the comparison arm when rl.compare is on)."""
    _run(config, ("tasks", "sft", "rl", "rl_compare"), set_, force, as_json, redo=("rl", "rl_compare"))


@app.command("eval")
def eval_(config: Path = ConfigArg, set_: Optional[list[str]] = SetOpt, force: bool = ForceOpt,
          as_json: bool = JsonOpt) -> None:
    """Evaluate base and tuned model on the held-out and OOD splits."""
    _run(config, ("tasks", "sft", "rl", "eval"), set_, force, as_json, redo=("eval",))


@app.command()
def report(config: Path = ConfigArg, set_: Optional[list[str]] = SetOpt, as_json: bool = JsonOpt) -> None:
    """Write report.json and report.html from the evaluation, and apply the regression gate."""
    _run(config, ("report",), set_, False, as_json)


def _pipeline(config: Path, overrides: list[str] | None):
    from sdk.config import load_config

    if os.getcwd() not in sys.path:  # dotted paths in a config (`pkg.module:Class`) import as under `python -m`
        sys.path.insert(0, os.getcwd())
    cfg = load_config(config, _overrides(overrides))  # validate before the slow torch/transformers imports
    from sdk.run.pipeline import Pipeline

    return Pipeline(cfg, console=console)


def _guard(fn, as_json: bool = False):
    """Run ``fn`` turning our errors into one message with its fix (and, with ``--json``, the same as
    ``{"error", "fix", "exit_code"}`` on stdout, so a script reads the failure too)."""
    try:
        return fn()
    except TuneloopError as exc:
        if os.environ.get("TUNELOOP_DEBUG"):
            raise
        errors.print(f"[bold red]error:[/bold red] {escape(exc.what)}")
        if exc.fix:
            errors.print(f"[bold]fix:[/bold] {escape(exc.fix)}")
        emit({"error": exc.what, "fix": exc.fix, "exit_code": exc.exit_code}, as_json)
        raise typer.Exit(exc.exit_code) from None


OverrideOpt = typer.Option(None, "--override-gate", metavar="WHY",
                           help="release an adapter the regression gate refused; WHY is recorded")


@app.command()
def export(config: Path = ConfigArg, out: Optional[Path] = typer.Option(None, help="default: RUN_DIR/export"),
           dtype: Optional[str] = typer.Option(None, help="float32, bfloat16 or float16 (default: the training "
                                               "precision: bfloat16 on a GPU, float32 on CPU)"),
           override_gate: Optional[str] = OverrideOpt, set_: Optional[list[str]] = SetOpt,
           force: bool = typer.Option(False, "--force", help="replace an earlier export in the output folder"),
           as_json: bool = JsonOpt) -> None:
    """Merge the tuned adapter into the base model (a folder vLLM serves) and print the serve command.

    Refuses an adapter that is out of date or that the gate refused (unless --override-gate).
    """
    from sdk.run.release import check_release
    from sdk.serve.export import export_merged

    def go():
        pipe = _pipeline(config, set_)
        adapter, release = check_release(pipe, override_gate)
        if "warning" in release:
            typer.echo(f"warning: {release['warning']}", err=True)
        from sdk.train.common import on_gpu, quiet_libraries

        quiet_libraries()
        chosen = dtype or ("bfloat16" if on_gpu() else "float32")
        target = out or pipe.layout.export_dir
        if force and target.is_dir() and (target / "tuneloop_export.json").is_file():
            import shutil

            shutil.rmtree(target)  # only a folder an earlier export wrote
        result = export_merged(pipe.model_path, adapter, target, dtype=chosen,
                               echo=not as_json, release=release)
        emit({"path": result.path, "command": result.command, "form": result.form, "release": release}, as_json)

    _guard(go, as_json)


@app.command()
def serve(config: Path = ConfigArg, port: int = typer.Option(8000), override_gate: Optional[str] = OverrideOpt,
          set_: Optional[list[str]] = SetOpt) -> None:
    """Serve the base model with the tuned adapter through vLLM (needs the `gpu` extra and a GPU).

    Refuses an adapter that is out of date or that the gate refused (unless --override-gate).
    """
    import importlib.util
    import shlex

    from sdk.errors import ModelError
    from sdk.run.release import check_release
    from sdk.serve.export import lora_serve_command

    def go():
        pipe = _pipeline(config, set_)
        adapter, release = check_release(pipe, override_gate)
        if "override" in release:
            console.print(f"[yellow]serving an adapter the gate refused: {release['override']}[/yellow]")
        if "warning" in release:
            console.print(f"[yellow]warning: {release['warning']}[/yellow]")
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
