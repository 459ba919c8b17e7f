"""Issue 13's new-user frictions: a build where every task is quarantined fails with the fix, a
missing test dependency is advised with `test_requirements`, an empty set has no version, and
`tuneloop tasks prompt` prints a prompt as the model sees it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from connectors.suites.pytest_suite import PytestSuiteSource
from sdk.run.health import quarantine_summary
from sdk.sandbox.deps import missing_modules


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sdk.run.cli", *args], capture_output=True, text=True, timeout=300)


def _config(tmp_path: Path, solution: str, **top) -> Path:
    rows = [{"task_id": f"t/{i}", "prompt": f"def f{i}(x):\n    \"\"\"Return x + {i}.\"\"\"\n",
             "canonical_solution": solution.format(i=i), "entry_point": f"f{i}",
             "test": f"def check(candidate):\n    assert candidate(1) == {1 + i}\n"} for i in range(3)]
    (tmp_path / "bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = {"run_dir": str(tmp_path / "run"), "tasks": {"mutants": {"enabled": False}}, **top,
           "sources": [{"type": "jsonl", "domain": "bench", "options": {"path": str(tmp_path / "bench.jsonl")}}]}
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(cfg))
    return path


def test_a_build_where_every_task_is_quarantined_exits_non_zero_with_the_fix(tmp_path):
    res = _cli("tasks", "build", str(_config(tmp_path, "    return x - 100 - {i}\n")))
    err = " ".join(res.stderr.split())  # rich wraps long lines
    assert res.returncode != 0
    assert "error: every one of the 3 tasks was quarantined (3 reference_fails)" in err
    assert "fix: read the reasons" in err and "tasks.quarantine.jsonl" in err
    counts = json.loads((tmp_path / "run" / "tasks" / "counts.json").read_text())
    assert counts["version"] is None  # not the hash of the empty string
    assert "task set: empty" in err and "e3b0c44298fc1c14" not in err


def test_missing_modules_are_read_from_errors_and_skip_reasons():
    assert missing_modules("E   ModuleNotFoundError: No module named 'eth_hash.auto'") == ["eth_hash"]
    assert missing_modules("could not import 'wcwidth': No module named 'wcwidth'") == ["wcwidth"]
    assert missing_modules("AssertionError: assert 1 == 2") == []


def test_a_test_needing_an_uninstalled_module_is_advised_with_test_requirements(tmp_path):
    (tmp_path / "lib").mkdir(), (tmp_path / "tests").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text('def add(a, b):\n    """Sum."""\n    return a + b\n')
    (tmp_path / "tests" / "test_lib.py").write_text(
        "from lib import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n    import tl_not_installed_xyz\n")
    result = PytestSuiteSource({"path": str(tmp_path), "package": "lib", "test_requirements": []}, tmp_path, "d").read()
    (q,) = result.quarantined
    assert "No module named 'tl_not_installed_xyz'" in q.reason
    (group,) = quarantine_summary(result.quarantined)
    assert group["reason"] == "failing tests" and "`test_requirements:`" in group["fix"]
    assert "tl_not_installed_xyz" in group["fix"]


def test_a_group_without_a_known_fix_has_an_empty_one():
    (group,) = quarantine_summary([SimpleNamespace(reason="reference_fails: assert 1 == 2", task=None, source=None)])
    assert group["fix"] == ""


def test_tasks_prompt_prints_the_chat_template_text_or_the_raw_messages(tmp_path, tiny_model_dir):
    config = _config(tmp_path, "    return x + {i}\n", model={"name": tiny_model_dir},
                     tasks={"mutants": {"enabled": False}, "system_prompt": "Be brief."})
    assert _cli("tasks", "build", str(config)).returncode == 0
    tasks = [json.loads(x) for x in (tmp_path / "run" / "tasks" / "tasks.jsonl").read_text().splitlines()]
    first = tasks[0]["id"]
    res = _cli("tasks", "prompt", str(config), first[:10])
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n")
    assert res.stdout.endswith("<|im_start|>assistant\n") and "chat template" in res.stderr
    raw = _cli("tasks", "prompt", str(config), first, "--raw")
    assert raw.stdout.startswith("--- system ---\nBe brief.\n--- user ---\n")
    missing = _cli("tasks", "prompt", str(config), "zzzz")
    assert missing.returncode != 0 and "no task matches 'zzzz'" in missing.stderr
