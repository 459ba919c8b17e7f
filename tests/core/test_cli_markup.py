"""Messages with square brackets reach the user whole: rich reads ``[name]`` as markup and drops it,
so a fix like ``--set ...test_requirements='[whatever]'`` printed as ``=''`` (new-user trial, funcy 2.1)."""

from __future__ import annotations

import io

import pytest
import typer
from rich.console import Console

from sdk.errors import SourceError
from sdk.run import cli
from sdk.run.health import Finding, print_findings, print_task_summary

FIX = ("--set sources.0.options.test_requirements='[whatever]', or pyproject.toml [dependency-groups], "
       "tox.ini [testenv] deps")


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=400, color_system=None), buf


def test_findings_and_summary_keep_brackets():
    console, buf = _console()
    print_findings([Finding("warning", "tests [tests/test_x.py] failed", FIX)], console)
    print_task_summary({"quarantine_reasons": {"no covering tests [x]": 3},
                        "health": [{"level": "warning", "what": "w [a]", "fix": FIX}]}, console)
    out = buf.getvalue()
    assert out.count("test_requirements='[whatever]'") == 2
    assert "[dependency-groups]" in out and "[testenv]" in out
    assert "tests [tests/test_x.py] failed" in out and "no covering tests [x]" in out and "w [a]" in out


def test_cli_error_keeps_brackets(monkeypatch):
    console, buf = _console()
    monkeypatch.setattr(cli, "errors", console)

    def fail():
        raise SourceError("source 'pytest' failed: list [1, 2]", FIX)

    with pytest.raises(typer.Exit):
        cli._guard(fail)
    out = buf.getvalue()
    assert "list [1, 2]" in out and "test_requirements='[whatever]'" in out and "[testenv]" in out
