"""The rl stage builds tool rollouts from dotted paths in `tools.tools` (issue 8 wiring)."""

from types import SimpleNamespace

import pytest

from sdk.config import parse_config
from sdk.errors import ConfigError
from sdk.sources import import_dotted
from sdk.stages import _tool_rollout


def lookup_city(city: str) -> str:
    """Weather in a city."""
    return f"sunny in {city}"


def make_tools():
    return [lookup_city]


def test_tools_from_dotted_paths(tmp_path):
    cfg = parse_config({"sources": [{"type": "pytest", "domain": "x"}], "run_dir": str(tmp_path),
                        "tools": {"tools": ["tests.core.test_tool_wiring:make_tools"], "max_calls": 2}})
    reward, rollout = _tool_rollout(SimpleNamespace(cfg=cfg, run_dir=tmp_path))
    assert callable(reward) and callable(rollout)
    box = rollout.make_toolbox()
    assert list(box.tools) == ["lookup_city"] and box.max_calls == 2
    assert rollout.log_path == tmp_path / "rl" / "traces.jsonl"


def test_bad_dotted_path_is_a_config_error():
    with pytest.raises(ConfigError, match="cannot be imported"):
        import_dotted("tests.core.nope:thing")
    with pytest.raises(ConfigError, match="not a dotted path"):
        import_dotted("no_colon")
