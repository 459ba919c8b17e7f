"""Issue 20: what a new user hits first — task sets that cannot teach, output that scripts, versions.

No model is needed: a jsonl source with reference validation off builds task sets in well under a
second, and the CLI runs in a subprocess (so stdout and stderr are told apart, as in a shell).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sdk.config import parse_config
from sdk.run.health import check_health
from sdk.tasks.records import AnswerVerifier, Message, ReferenceOnly, Source, Split, Task


def _bench(tmp_path: Path, n: int) -> Path:
    rows = [{"task_id": f"t/{i}", "prompt": f"def f{i}(x):\n    \"\"\"Return x + {i}.\"\"\"\n",
             "canonical_solution": f"    return x + {i}\n", "entry_point": f"f{i}",
             "test": f"def check(candidate):\n    assert candidate(1) == {1 + i}\n"} for i in range(n)]
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _config(tmp_path: Path, n: int, **tasks) -> Path:
    cfg = {"run_dir": str(tmp_path / "run"), "tasks": {"validate_references": False, **tasks},
           "sources": [{"type": "jsonl", "domain": "bench", "options": {"path": str(_bench(tmp_path, n))}}]}
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(cfg))
    return path


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sdk.run.cli", *args], capture_output=True, text=True, timeout=300)


def _task(i: int, split: Split, reference: str | None = "x") -> Task:
    return Task(domain="d", prompt=(Message(role="user", content=f"q{i}"),), reference=reference,
                verifier=AnswerVerifier(expected=str(i)), source=Source(connector="t", locator=f"f{i}"), split=split)


def test_a_task_set_too_small_to_teach_is_called_out(tmp_path):
    """4 functions with heldout_fraction 0.5 gave 3 held-out and 1 train task, without a word."""
    res = _cli("tasks", "build", str(_config(tmp_path, 4, heldout_fraction=0.5)))
    assert res.returncode == 0, res.stderr
    assert "too few to learn from" in res.stderr and "cannot be told from noise" in res.stderr
    health = json.loads((tmp_path / "run" / "tasks" / "counts.json").read_text())["health"]
    assert {f["level"] for f in health} == {"warning"}


def test_a_task_set_with_no_train_task_stops_sft_before_it_trains(tmp_path):
    """A copy with broken tests gave 0 train tasks; SFT then 'trained' on nothing and exited 0."""
    cfg = parse_config({"sources": [{"type": "jsonl", "domain": "x"}], "rl": {"enabled": False}})
    findings = check_health([_task(i, Split.HELDOUT) for i in range(5)], 0, cfg)
    errors = [f for f in findings if f.level == "error"]
    assert [f.stage for f in errors] == ["sft"] and "nothing to learn from" in errors[0].what
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps({"run_dir": str(tmp_path / "run"), "rl": {"enabled": False},
                                  "tasks": {"validate_references": False},
                                  "sources": [{"type": "jsonl", "domain": "bench", "split": "heldout",
                                               "options": {"path": str(_bench(tmp_path, 3))}}]}))
    res = _cli("run", str(config), "--stage", "tasks", "--stage", "sft")
    assert res.returncode == 2 and "cannot feed sft" in res.stderr and "fix:" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "run" / "sft" / "adapter").exists()


def test_grpo_without_verifiable_train_tasks_is_an_error_for_rl_only():
    cfg = parse_config({"sources": [{"type": "jsonl", "domain": "x"}]})
    train = [_task(i, Split.TRAIN).with_(verifier=ReferenceOnly()) for i in range(3)]
    findings = check_health([*train, *(_task(i, Split.HELDOUT) for i in range(3, 6))], 0, cfg)
    assert [f.stage for f in findings if f.level == "error"] == ["rl"]


def test_json_results_go_to_stdout_and_text_to_stderr(tmp_path):
    res = _cli("tasks", "build", str(_config(tmp_path, 12)), "--json")
    assert res.returncode == 0, res.stderr
    result = json.loads(res.stdout)
    assert result["stages"]["tasks"]["status"] == "complete"
    assert result["artefacts"]["tasks"].endswith("tasks.jsonl") and "task set" in res.stderr
    shown = json.loads(_cli("tasks", "show", str(_config(tmp_path, 12)), "--json").stdout)
    assert sum(shown["splits"]["train"].values()) + sum(shown["splits"]["heldout"].values()) == 12


def test_quiet_prints_nothing_but_errors_and_version_prints_the_version(tmp_path):
    quiet = _cli("-q", "tasks", "build", str(_config(tmp_path, 12)))
    assert quiet.returncode == 0 and quiet.stderr.strip() == "", quiet.stderr
    bad = _cli("-q", "tasks", "build", str(tmp_path / "missing.yaml"))
    assert bad.returncode == 2 and "error:" in bad.stderr
    version = _cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("tuneloop ")


@pytest.mark.parametrize("stage", ["sft", "rl", "eval", "report"])
def test_a_stage_without_its_inputs_names_the_command_to_run(tmp_path, stage):
    res = _cli("run", str(_config(tmp_path, 12)), "--stage", stage)
    assert res.returncode == 2 and "has not run" in res.stderr and "tuneloop " in res.stderr


def test_a_typo_in_source_options_gets_a_did_you_mean_and_bad_values_are_echoed(tmp_path):
    """Issue 20.8: a typo in a source's options got pydantic's 'Extra inputs are not permitted'."""
    from sdk.errors import ConfigError
    from sdk.sources import resolve_source

    with pytest.raises(ConfigError, match=r"unknown option `pth` \(did you mean `path`\?\)"):
        resolve_source("jsonl")({"pth": "x.jsonl"}, tmp_path, "d")
    with pytest.raises(ConfigError, match=r"got 'lots'"):
        parse_config({"sources": [{"type": "jsonl", "domain": "x"}], "sft": {"max_steps": "lots"}})


def test_an_error_with_json_is_json_on_stdout(tmp_path):
    res = _cli("run", str(_config(tmp_path, 12)), "--stage", "report", "--json")
    assert res.returncode == 2
    err = json.loads(res.stdout)
    assert err["exit_code"] == 2 and "has not run" in err["error"] and "tuneloop eval CONFIG" in err["fix"]


def test_misspelt_source_type_names_the_closest_one():
    """`type: pytests` (a typo) says which source type was meant, and lists them all."""
    from sdk.errors import ConfigError
    from sdk.sources import resolve_source

    with pytest.raises(ConfigError) as err:
        resolve_source("pytests")
    assert "did you mean 'pytest'?" in str(err.value)
    with pytest.raises(ConfigError) as err:
        resolve_source("zzzzqq")
    assert "did you mean" not in str(err.value)
