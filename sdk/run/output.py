"""The CLI's output layer: human text on stderr, one JSON result on stdout with ``--json``,
``-q``/``-v``, and plain progress lines when stderr is not a terminal.

Every command builds a result dict (:func:`run_result`, :func:`tasks_result`); with ``--json`` it is
printed to stdout as one JSON document (so ``tuneloop run CONFIG --json | jq .report.gate`` scripts),
and everything else stays on stderr.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import warnings
from typing import Any

from rich.console import Console

console = Console(stderr=True)
errors = Console(stderr=True)  # never quieted: -q keeps errors


class Verbosity:
    """Process-wide output settings, set once by the CLI's callback."""

    quiet = False
    verbose = False


def configure(quiet: bool, verbose: bool) -> None:
    """Apply ``-q`` (errors only on stderr) / ``-v`` (library warnings and INFO logs shown).

    Without ``-v``, third-party warnings and library logs stay out of the user's way; progress lines
    of the ``tuneloop.progress`` logger reach stderr when it is not a terminal (a terminal gets live
    bars instead) and ``-q`` is not set.
    """
    Verbosity.quiet, Verbosity.verbose = quiet, verbose
    console.quiet = quiet
    level = os.environ.get("TUNELOOP_LOG") or ("INFO" if verbose else "ERROR" if quiet else "WARNING")  # -q: errors only
    logging.basicConfig(level=level)
    if not verbose:
        warnings.filterwarnings("ignore")
        for name in ("bitsandbytes", "transformers", "datasets", "peft", "trl", "accelerate", "torch"):
            logging.getLogger(name).setLevel(logging.ERROR)
    progress = logging.getLogger("tuneloop.progress")
    progress.propagate = False
    progress.handlers.clear()
    if not quiet and not live_progress():
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        progress.addHandler(handler)
        progress.setLevel(logging.INFO)


def live_progress() -> bool:
    """Rich live bars: stderr is a terminal (or ``TUNELOOP_PROGRESS=1``) and ``-q`` is not set."""
    return not Verbosity.quiet and (sys.stderr.isatty() or bool(os.environ.get("TUNELOOP_PROGRESS")))


def emit(result: dict[str, Any], as_json: bool) -> None:
    """Print ``result`` as JSON on stdout when ``as_json`` (nothing otherwise)."""
    if as_json:
        sys.stdout.write(json.dumps(result, indent=2, default=str, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def run_result(pipe, stages, report=None) -> dict[str, Any]:
    """The result of a pipeline command: run folder, each named stage's status and stats, the
    artefacts written, and the report's headline (pass@1 by split, gate) when it ran."""
    layout = pipe.layout
    out: dict[str, Any] = {"run_dir": str(layout.root), "stages": {}}
    for stage in stages:
        name = getattr(stage, "value", stage)
        status = ("complete" if pipe.is_complete(name) else
                  "disabled" if not pipe.stage_enabled(name) else "not run")
        out["stages"][name] = {"status": status, **({"stats": pipe.stats(name)} if status == "complete" else {})}
    adapter = pipe.adapter_for_eval()
    out["artefacts"] = {"tasks": str(layout.tasks_jsonl), "quarantine": str(layout.quarantine_jsonl),
                        "adapter": str(adapter) if adapter else None,
                        "report_json": str(layout.report_json) if layout.report_json.is_file() else None,
                        "report_html": str(layout.report_html) if layout.report_html.is_file() else None}
    if report is not None:
        out["report"] = {"pass_at_1": {split: {side: report.pass_at(split, side, 1) for side in ("base", "tuned", "delta")}
                                       for split in report.by_split},
                         "gate": report.gate_verdict, "recommendation": report.recommendation}
    return out


def tasks_result(pipe) -> dict[str, Any]:
    """What ``tuneloop tasks show`` prints: splits, sources, quarantine reasons and the paths."""
    counts = pipe.inputs.counts()
    return {"run_dir": str(pipe.layout.root), "version": counts.get("version"), "splits": counts.get("splits", {}),
            "sources": counts.get("sources", {}), "sft_examples": counts.get("sft_examples", 0),
            "preference_pairs": counts.get("preference_pairs", 0),
            "quarantine_reasons": counts.get("quarantine_reasons", {}), "health": counts.get("health", []),
            "files": {"tasks": str(pipe.layout.tasks_jsonl), "quarantine": str(pipe.layout.quarantine_jsonl),
                      "counts": str(pipe.layout.counts_json)}}
