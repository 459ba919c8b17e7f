"""`tasks build` prints each source's counts as read, before reference validation: on isodate 0.7.2
the line said `'tasks': 18, 'quarantined': 1` and then 9 more were quarantined as reference_fails,
with nothing telling the two apart."""

import json
import subprocess
import sys

from sdk.run.stage_tasks import counts_line


def test_source_counts_line_says_it_is_before_validation(tmp_path):
    rows = [{"task_id": f"t/{i}", "prompt": f"def f{i}(x):\n    \"\"\"Return x + {i}.\"\"\"\n",
             "canonical_solution": f"    return x + {i}\n", "entry_point": f"f{i}",
             "test": f"def check(candidate):\n    assert candidate(1) == {1 + i}\n"} for i in range(6)]
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = {"run_dir": str(tmp_path / "run"), "tasks": {"validate_references": False},
           "sources": [{"type": "jsonl", "domain": "bench", "options": {"path": str(bench)}}]}
    (tmp_path / "c.yaml").write_text(json.dumps(cfg))
    res = subprocess.run([sys.executable, "-m", "sdk.run.cli", "tasks", "build", str(tmp_path / "c.yaml")],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    said = " ".join(res.stderr.split())
    assert "jsonl:bench (as read; reference validation below may quarantine more): tasks 6, quarantined 0" in said


def test_counts_read_as_words_with_the_headline_first():
    """New-user trial: the counts were a raw Python dict wrapped over six lines."""
    line = counts_line({"tests_collected": 14, "functions_found": 14, "tasks": 11, "quarantined": 3, "sft_examples": 0})
    assert line == "tasks 11, quarantined 3, sft examples 0, tests collected 14, functions found 14"
    assert counts_line({}) == ""
