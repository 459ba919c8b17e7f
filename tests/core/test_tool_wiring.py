"""The rl stage builds tool rollouts from dotted paths in `tools.tools` (issue 8 wiring)."""

import pytest
from rich.console import Console

from sdk.config import parse_config
from sdk.errors import ConfigError
from sdk.sources import import_dotted
from sdk.run.context import RunInputs, StageContext
from sdk.run.layout import RunLayout
from sdk.run.stage_rl import make_reward


def lookup_city(city: str) -> str:
    """Weather in a city."""
    return f"sunny in {city}"


def lookup_weather(city: str) -> str:
    """Weather in a city, as a plain tool entry."""
    return f"rainy in {city}"


def make_tools():
    return [lookup_city]


def test_a_factory_that_is_not_callable_is_a_config_error():
    from sdk.run.stage_rl import load_tools

    cfg = parse_config({"sources": [{"type": "pytest", "domain": "x"}],
                        "tools": {"factories": ["tests.core.test_tool_wiring:NOT_CALLABLE"]}})
    with pytest.raises(ConfigError, match="not callable"):
        load_tools(cfg.tools)


NOT_CALLABLE = 3


def test_tools_from_dotted_paths(tmp_path):
    cfg = parse_config({"sources": [{"type": "pytest", "domain": "x"}], "run_dir": str(tmp_path),
                        "tools": {"factories": ["tests.core.test_tool_wiring:make_tools"],
                                  "tools": ["tests.core.test_tool_wiring:lookup_weather"], "max_calls": 2}})
    layout = RunLayout(tmp_path)
    ctx = StageContext(cfg=cfg, layout=layout, inputs=RunInputs(layout), console=Console(), progress=False)
    reward, rollout = make_reward(ctx, "rl")
    assert callable(reward) and callable(rollout)
    box = rollout.make_toolbox()
    assert sorted(box.tools) == ["lookup_city", "lookup_weather"] and box.max_calls == 2
    assert rollout.log_path == tmp_path / "rl" / "traces.jsonl"


def test_bad_dotted_path_is_a_config_error():
    with pytest.raises(ConfigError, match="cannot be imported"):
        import_dotted("tests.core.nope:thing")
    with pytest.raises(ConfigError, match="not a dotted path"):
        import_dotted("no_colon")
