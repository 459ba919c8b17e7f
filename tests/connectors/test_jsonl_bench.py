"""JSONL benchmarks: HumanEval and MBPP shapes, field mapping, quarantine, the shipped 164."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connectors.suites.jsonl_bench import HumanEvalSource, JsonlBenchmarkSource
from sdk.errors import SourceError
from sdk.sources import resolve_source

MBPP_ROW = {"task_id": 7, "text": "Write a function to add two numbers.",
            "code": "import operator\r\ndef add_nums(a, b):\r\n    return operator.add(a, b)",
            "test_list": ["assert add_nums(1, 2) == 3", "assert add_nums(-1, 1) == 0"], "test_setup_code": ""}


def _write(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def humaneval():
    return HumanEvalSource({}, Path("."), "ood/humaneval").read()


def test_entry_points_resolve():
    assert resolve_source("jsonl") is JsonlBenchmarkSource and resolve_source("humaneval") is HumanEvalSource


def test_all_164_problems_in_file_order(humaneval):
    assert humaneval.counts["tasks"] == 164 and not humaneval.quarantined
    assert [t.metadata["task_id"] for t in humaneval.tasks[:3]] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert len({t.id for t in humaneval.tasks}) == 164


def test_humaneval_task_shape(humaneval):
    task = humaneval.tasks[0]
    v = task.verifier
    assert v.framework == "script" and v.entry_point == "has_close_elements"
    assert "def check(candidate):" in v.tests["test_check.py"]
    assert v.prelude.strip() == "from typing import List"
    assert task.reference.startswith("from typing import List") and "def has_close_elements" in task.reference
    assert "def has_close_elements" in task.prompt[0].content and task.domain == "ood/humaneval"


def test_humaneval_helpers_go_to_the_prelude(humaneval):
    task = next(t for t in humaneval.tasks if t.metadata["task_id"] == "HumanEval/10")
    assert "def is_palindrome" in task.verifier.prelude and "def make_palindrome" not in task.verifier.prelude


def test_mbpp_shape_with_crlf_and_check_wrapper(tmp_path):
    path = _write(tmp_path / "mbpp.jsonl", [MBPP_ROW])
    res = JsonlBenchmarkSource({"path": str(path), "shape": "mbpp"}, tmp_path, "mbpp").read()
    task = res.tasks[0]
    assert task.verifier.entry_point == "add_nums" and "\r" not in task.reference
    assert task.verifier.tests["test_check.py"] == (
        "def check(candidate):\n    assert add_nums(1, 2) == 3\n    assert add_nums(-1, 1) == 0\n")
    assert "assert add_nums(1, 2) == 3" in task.prompt[0].content
    assert "add_nums(-1, 1)" not in task.prompt[0].content
    assert task.source.locator == "7"


def test_field_mapping_and_quarantine(tmp_path):
    good = {"id": "x/1", "question": "def f(x):\n    \"\"\"Double.\"\"\"\n", "answer": "    return 2 * x\n",
            "tests": "def check(candidate):\n    assert candidate(2) == 4\n", "fn": "f"}
    missing = {k: v for k, v in good.items() if k != "tests"}
    no_entry = {**good, "fn": "g"}
    path = _write(tmp_path / "b.jsonl", [good, "{not json", missing, no_entry, "[1]"])
    fields = {"task_id": "id", "prompt": "question", "canonical_solution": "answer", "test": "tests", "entry_point": "fn"}
    res = JsonlBenchmarkSource({"path": str(path), "fields": fields}, tmp_path, "b").read()
    assert [t.verifier.entry_point for t in res.tasks] == ["f"]
    reasons = sorted(q.reason.split(":")[0] for q in res.quarantined)
    assert reasons == ["bad line", "bad line", "bad row", "bad row"]
    assert res.counts == {"rows": 5, "tasks": 1, "quarantined": 4, "sft_examples": 0}
    again = JsonlBenchmarkSource({"path": str(path), "fields": fields}, tmp_path, "b").read()
    assert [t.id for t in again.tasks] == [t.id for t in res.tasks]


def test_bad_options_are_clear(tmp_path):
    with pytest.raises(SourceError, match="does not exist"):
        JsonlBenchmarkSource({"path": "nope.jsonl"}, tmp_path, "b").read()
    path = _write(tmp_path / "b.jsonl", [MBPP_ROW])
    with pytest.raises(SourceError, match="unknown keys"):
        JsonlBenchmarkSource({"path": str(path), "fields": {"question": "q"}}, tmp_path, "b").read()
