"""A base-only run (training off: ``sft.enabled`` and ``rl.enabled`` false) ends with a clean report
that says "base only"; before, the report stage exited 2 because ``eval/tuned.jsonl`` was missing."""

import io
import json

from rich.console import Console

from eval_rows import make_rows
from sdk.config import RunConfig
from sdk.run.context import RunInputs, StageContext
from sdk.run.layout import RunLayout
from sdk.tasks.records import Message, Source, Split, Task, UnitTestVerifier
from sdk.tasks.taskset import TaskSet


def _task(i, split):
    return Task(domain="d", prompt=(Message(role="user", content=f"q{i}"),), split=split,
                verifier=UnitTestVerifier(framework="pytest", tests={"test_x.py": "def test_x():\n    assert True\n"},
                                          entry_point="f"),
                reference="def f():\n    return 1\n", source=Source(connector="t", uri="u", locator=str(i)))


def test_base_only_run_reports_cleanly_and_says_so(tmp_path, monkeypatch):
    from sdk.run.stage_eval import stage_eval
    from sdk.run.stage_report import stage_report

    cfg = RunConfig.model_validate({
        "run_dir": str(tmp_path / "run"), "sources": [{"type": "jsonl", "domain": "d"}],
        "sft": {"enabled": False}, "rl": {"enabled": False}, "gate": {"enabled": True, "min_heldout_gain": 0.1},
        "eval": {"self_test": False}})
    layout = RunLayout(cfg.run_path)
    TaskSet([_task(i, Split.TRAIN) for i in range(4)] + [_task(10 + i, Split.HELDOUT) for i in range(3)]).save(
        layout.tasks_jsonl)
    labels = []

    def fake(ctx, tasks, label, adapter):
        labels.append((label, adapter))
        return [make_rows(label, ["1" if n == 0 else "0"], split=t.split)[0].model_copy(update={"task_id": t.id})
                for n, t in enumerate(tasks)]

    monkeypatch.setattr("sdk.run.stage_eval.text_rows", fake)
    console = Console(file=io.StringIO(), width=200)
    ctx = StageContext(cfg, layout, RunInputs(layout), console, progress=False)
    stage_eval(ctx)
    assert labels == [("base", None)] and not layout.eval_rows("tuned").is_file()
    report = stage_report(ctx).output  # no EvalError, no GateError: nothing was trained to gate
    saved = json.loads((layout.root / "report.json").read_text())
    assert saved["meta"]["base_only"].startswith("Base only: no adapter was trained")
    assert report.recommendation.startswith("Base only") and saved["meta"]["adapter"] == "none (base only)"
    assert report.pass_at("heldout", "base", 1) == report.pass_at("heldout", "tuned", 1)
    assert "Base only" in console.file.getvalue()
