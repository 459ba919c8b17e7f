"""The rl and eval stages build tool rollouts from the `tools:` section: dotted paths in `tools.tools`,
zero-argument factories and configured ToolFactory classes in `tools.factories` (issue 8 wiring, issue 18);
the eval stage scores tool-rollout traces."""

import pytest
from rich.console import Console

from sdk.config import parse_config
from sdk.errors import ConfigError
from sdk.rollout.errors import ToolError
from sdk.rollout.factories import ToolFactory, ToolFactoryOptions
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


class CityTools(ToolFactory):
    """A configured factory: one tool whose answer carries an option and a resolved path."""

    class Options(ToolFactoryOptions):
        greeting: str
        folder: str = "data"

    def _tools(self):
        where = self.resolve(self.options.folder)

        def weather(city: str) -> str:
            """Weather in a city."""
            return f"{self.options.greeting} {city} from {where.name} (k={self.settings.retrieval_k})"

        return weather


class BrokenTools(ToolFactory):
    def _tools(self):
        raise RuntimeError("database is down")


def _tools_cfg(factories, **extra):
    return parse_config({"sources": [{"type": "pytest", "domain": "x"}], "tools": {"factories": factories, **extra}})


def test_configured_factory_gets_its_options_the_config_folder_and_the_section(tmp_path):
    from sdk.run.stage_rl import load_tools

    cfg = _tools_cfg(["tests.core.test_tool_wiring:make_tools",
                      {"type": "tests.core.test_tool_wiring:CityTools", "options": {"greeting": "hi", "folder": "db"}}],
                     retrieval_k=5)
    tools = {t.name: t for t in load_tools(cfg.tools, tmp_path)}
    assert sorted(tools) == ["lookup_city", "weather"]
    assert tools["weather"].func(city="Oslo") == "hi Oslo from db (k=5)"
    assert cfg.tools.enabled and not _tools_cfg([]).tools.enabled


@pytest.mark.parametrize("entry, error, match", [
    ({"type": "tests.core.test_tool_wiring:CityTools", "options": {"greting": "hi"}}, ConfigError, "greting"),
    ({"type": "tests.core.test_tool_wiring:make_tools"}, ConfigError, "not a ToolFactory subclass"),
    ({"type": "tests.core.test_tool_wiring:BrokenTools"}, ToolError, "BrokenTools failed: RuntimeError: database is down"),
])
def test_bad_configured_factories_name_the_fix(entry, error, match):
    from sdk.run.stage_rl import load_tools

    with pytest.raises(error, match=match) as err:
        load_tools(_tools_cfg([entry]).tools)
    assert err.value.fix


def test_tool_eval_passes_on_the_right_answer_and_keeps_the_process_in_the_reward():
    import json

    from sdk.eval.run import evaluate
    from sdk.rollout.rewards import ToolTaskReward
    from sdk.run.stage_eval import _pass_on_answer, score_traces, tool_summary
    from sdk.tasks.records import AnswerVerifier, Message, Source, Task

    task = Task(domain="tools/x", prompt=(Message(role="user", content="How many A-100?"),),
                verifier=AnswerVerifier(expected="7", mode="numeric"), source=Source(connector="t"),
                metadata={"expected_tools": ["stock"]})
    call = {"name": "stock", "arguments": {"sku": "A-100"}, "valid": True}
    traces = [{"calls": [call, call], "n_calls": 2, "n_valid": 2, "stop": "answer", "final": "Answer: 7"},
              {"calls": [], "n_calls": 0, "n_valid": 0, "stop": "answer", "final": "Answer: 3"}]
    outs = [[(json.dumps(t), 5) for t in traces]]
    rows = evaluate([task], lambda prompts, n: outs, lambda ts, cs: score_traces(ToolTaskReward(), ts, cs), "base", 2,
                    progress=False)
    assert rows[0].passed == (False, False)  # full marks only: the repeated call costs no_waste
    row = _pass_on_answer(rows[0])
    assert row.passed == (True, False) and row.statuses == ("ok", "failed")
    assert 0.5 < row.rewards[0] < 1.0 and row.rewards[1] == 0.0
    assert row.components[0]["task_success"] == 1.0 and row.components[0]["tool_calls"] == 2.0
    summary = tool_summary([row])
    assert summary == {"task_success": 0.5, "valid_tool_call_rate": 1.0, "tool_use_rate": 0.5, "calls_per_sample": 1.0,
                       "mean_reward": summary["mean_reward"], "samples": 2.0}
    assert summary["mean_reward"] == pytest.approx(sum(row.rewards) / 2)
