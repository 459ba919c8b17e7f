"""Hostile and careless input: each gets one message naming the fix and a non-zero exit, never a
traceback or a silently wrong state. No model is needed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sdk.run.cli import app
from sdk.config import parse_config
from sdk.errors import SourceError
from sdk.run.pipeline import Pipeline

ROW = {"task_id": "T/0", "prompt": 'def add(a, b):\n    """Add."""\n',
       "canonical_solution": "    return a + b\n", "entry_point": "add",
       "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n"}


def _config(tmp_path: Path, rows: list[dict], run_dir: str | None = None) -> Path:
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"run_dir: {run_dir or tmp_path / 'run'}\n"
                   f"sources:\n  - {{type: jsonl, domain: bench, options: {{path: {bench}}}}}\n"
                   "tasks: {validate_references: false}\n")
    return cfg


def _invoke(args: list[str]):
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


@pytest.mark.parametrize("pair,words", [("sources=[", "not valid YAML"),
                                        ("tasks.system_prompt=a: b: c", "not valid YAML"),
                                        ("=3", "no key")])
def test_bad_set_syntax_is_one_error(tmp_path, pair, words):
    result = _invoke(["run", str(_config(tmp_path, [ROW])), "--stage", "tasks", "--set", pair])
    assert result.exit_code == 2
    assert words in result.output and "fix:" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("kind", ["file", "under_file"])
def test_unwritable_run_dir_is_one_error(tmp_path, kind):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    run_dir = blocker if kind == "file" else blocker / "run"
    result = _invoke(["run", str(_config(tmp_path, [ROW], str(run_dir))), "--stage", "tasks"])
    assert result.exit_code == 2
    assert "cannot write the run folder" in result.output and "run_dir" in result.output


def test_config_error_does_not_import_torch(tmp_path):
    """A misspelled key fails before the slow training imports (and their import-time warnings)."""
    cfg = _config(tmp_path, [ROW])
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom sdk.run.cli import app\n"
            f"r = CliRunner().invoke(app, ['run', {str(cfg)!r}, '--set', 'sft.epocs=1'])\n"
            "assert r.exit_code == 2, r.output\nassert 'epochs' in r.output, r.output\n"
            "assert 'torch' not in sys.modules and 'sdk.run.pipeline' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_no_tasks_error_names_the_quarantine_reason(tmp_path):
    wrong = [{("solution" if k == "canonical_solution" else k): v for k, v in ROW.items()}]
    result = _invoke(["run", str(_config(tmp_path, wrong)), "--stage", "tasks"])
    assert result.exit_code == 2
    assert "missing field 'canonical_solution'" in result.output


def test_redone_stage_drops_its_marker_first(tmp_path, monkeypatch):
    """A --force re-run that dies mid-stage must not leave the old marker saying the stage is complete."""
    from dataclasses import replace

    from sdk.run.spec import SPECS, Stage

    cfg = parse_config({"run_dir": str(tmp_path / "run"), "tasks": {"validate_references": False},
                        "sources": [{"type": "jsonl", "domain": "bench",
                                     "options": {"path": str(_config(tmp_path, [ROW]).parent / "bench.jsonl")}}]},
                       base_dir=tmp_path)
    pipe = Pipeline(cfg, progress=False)
    pipe.run(("tasks",))
    assert pipe.is_complete("tasks")

    def killed(ctx):
        ctx.layout.tasks_jsonl.write_text('{"trunc')
        raise KeyboardInterrupt

    monkeypatch.setitem(SPECS, Stage.TASKS, replace(SPECS[Stage.TASKS], run=killed))
    with pytest.raises(KeyboardInterrupt):
        Pipeline(cfg, progress=False).run(("tasks",), force=True)
    assert not Pipeline(cfg, progress=False).is_complete("tasks")


def _no_verifiable_tasks(tmp_path: Path, **sections):
    """A run whose task set is empty (all rows bad), so GRPO and eval have nothing to work on."""
    from sdk.tasks.taskset import TaskSet

    cfg = parse_config({"run_dir": str(tmp_path / "run"), "sources": [{"type": "jsonl", "domain": "b",
                        "options": {"path": str(tmp_path / "x.jsonl")}}], **sections}, base_dir=tmp_path)
    from sdk.run.context import StageContext

    pipe = Pipeline(cfg, progress=False)
    TaskSet([], []).save(pipe.layout.tasks_jsonl)
    # no model and no sandbox: both stages must refuse before they need either
    return StageContext(cfg=pipe.cfg, layout=pipe.layout, inputs=pipe.inputs, console=pipe.console, progress=False)


def test_rl_without_verifiable_train_tasks_is_one_error(tmp_path):
    """Feedback-only configs: GRPO said `ValueError: no GRPO rows` with a traceback."""
    from sdk.errors import ConfigError
    from sdk.run.stage_rl import stage_rl

    ctx = _no_verifiable_tasks(tmp_path)
    with pytest.raises(ConfigError, match="rl.enabled=false"):
        stage_rl(ctx)


def test_eval_without_tasks_is_one_error(tmp_path):
    """Eval on 0 tasks printed `0/0 passed` and the report then failed with a misleading fix."""
    from sdk.errors import ConfigError
    from sdk.run.stage_eval import stage_eval

    ctx = _no_verifiable_tasks(tmp_path)
    with pytest.raises(ConfigError, match="eval.splits"):
        stage_eval(ctx)


def test_jsonl_bom_and_one_bad_byte_cost_one_row_at_most(tmp_path):
    """A BOM is not an error; a non-UTF-8 byte quarantines its own line only (hostile #14, #15)."""
    import json as _json
    from pathlib import Path as _Path

    from connectors.suites.jsonl_bench import JsonlBenchmarkSource

    row = {"task_id": "t/0", "prompt": "def f(x):\n    \"\"\"Double.\"\"\"\n", "entry_point": "f",
           "canonical_solution": "    return 2 * x\n", "test": "def check(candidate):\n    assert candidate(2) == 4\n"}
    other = {**row, "task_id": "t/1", "entry_point": "g", "prompt": row["prompt"].replace("f(", "g(")}
    path = _Path(tmp_path) / "bench.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + _json.dumps(row).encode() + b"\n" + b"{\"bad\": \"\xff\"}\n"
                     + _json.dumps(other).encode() + b"\n")
    result = JsonlBenchmarkSource({"path": str(path)}, _Path(tmp_path), "bench").read()
    assert len(result.tasks) == 2
    assert len(result.quarantined) == 1 and "not UTF-8" in result.quarantined[0].reason


def test_one_hanging_test_costs_that_test_not_the_suite(tmp_path, monkeypatch):
    """Hostile #11: a test that never returns is failed after TUNELOOP_TEST_TIMEOUT; the rest build."""
    from pathlib import Path as _Path

    from connectors.suites.pytest_suite import PytestSuiteSource

    (tmp_path / "hpkg").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "hpkg" / "__init__.py").write_text(
        "def add(a, b):\n    return a + b\n\n\ndef spin(n):\n    while True:\n        pass\n")
    (tmp_path / "tests" / "test_h.py").write_text(
        "from hpkg import add, spin\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
        "def test_spin():\n    spin(1)\n")
    monkeypatch.setenv("TUNELOOP_TEST_TIMEOUT", "2")
    result = PytestSuiteSource({"path": str(tmp_path), "package": "hpkg"}, _Path(tmp_path), "x").read()
    assert [t.verifier.entry_point for t in result.tasks] == ["add"]
    assert result.counts["test_functions_failing"] == 1


def test_bad_options_of_a_later_source_fail_before_any_source_is_read(tmp_path):
    """Hostile #27: the typo in sources[1] is reported at once, naming the source."""
    from sdk.config import parse_config
    from sdk.errors import ConfigError
    from sdk.run.pipeline import Pipeline

    cfg = parse_config({"run_dir": str(tmp_path / "run"), "sources": [
        {"type": "humaneval", "domain": "he"},
        {"type": "sql_feedback", "domain": "fb", "options": {"urll": "sqlite:///x.db"}}]}, base_dir=tmp_path)
    with pytest.raises(ConfigError) as err:
        Pipeline(cfg, progress=False).run(("tasks",))
    assert err.value.what.startswith("sources[1] (sql_feedback)")
    assert not (tmp_path / "run" / "tasks").exists()


def test_thumbs_table_read_as_stars_is_refused(tmp_path):
    """Hostile #19: a wrong rating scale is an error, not thumbs-up silently read as 1 star."""
    import sqlite3
    from pathlib import Path as _Path

    from connectors.feedback_tables.source import SqlFeedbackSource
    from sdk.errors import SourceError

    db = tmp_path / "fb.db"
    con = sqlite3.connect(db)
    con.execute("create table t (id integer primary key, prompt text, response text, rating integer)")
    con.executemany("insert into t (prompt, response, rating) values (?, ?, ?)",
                    [(f"q{i}", f"a{i}", 1 if i % 2 else -1) for i in range(10)])
    con.commit()
    con.close()
    source = SqlFeedbackSource({"url": f"sqlite:///{db}", "table": "t", "rating": "stars_1_5"}, _Path(tmp_path), "fb")
    with pytest.raises(SourceError, match="outside the declared"):
        source.read()
    ok = SqlFeedbackSource({"url": f"sqlite:///{db}", "table": "t", "rating": "thumbs"}, _Path(tmp_path), "fb").read()
    assert len(ok.sft_examples) == 5
