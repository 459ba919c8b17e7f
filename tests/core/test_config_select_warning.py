"""``eval.select: validation`` (the default) with ``tasks.validation_fraction: 0`` (the default) had
nothing to choose on: said at config load, with the fix, only where the choice happens (SFT and RL on)."""

from __future__ import annotations

import logging

import pytest

from sdk.config import config_warnings, parse_config

BASE = {"sources": [{"type": "pytest", "domain": "d", "options": {"path": ".", "package": "p"}}]}


def test_default_config_warns_once_with_the_fix(caplog):
    with caplog.at_level(logging.WARNING, logger="tuneloop.config"):
        cfg = parse_config(dict(BASE), origin="tune.yaml")
    (line,) = config_warnings(cfg)
    assert "validation_fraction is 0" in line and "validation_fraction: 0.15" in line and "select: last" in line
    assert [r.getMessage() for r in caplog.records] == [f"tune.yaml: {line}"]


@pytest.mark.parametrize("extra", [{"tasks": {"validation_fraction": 0.15}}, {"eval": {"select": "last"}},
                                   {"rl": {"enabled": False}}, {"sft": {"enabled": False}}])
def test_no_warning_where_there_is_nothing_to_fix(extra):
    assert config_warnings(parse_config({**BASE, **extra})) == []
