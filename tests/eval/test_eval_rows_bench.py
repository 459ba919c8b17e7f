"""bench/eval_rows.py: what a run's models get wrong, from its eval rows alone."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from sdk.eval.records import EvalRow, save_rows

BENCH = Path(__file__).resolve().parents[2] / "bench" / "eval_rows.py"


def _bench():
    spec = importlib.util.spec_from_file_location("eval_rows_bench", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(i: int, split: str, passed: bool, status: str = "failed", detail: str = "", tokens: int = 50,
         flags: tuple[str, ...] = ()) -> EvalRow:
    return EvalRow(task_id=f"t{i}", domain="d", split=split, model="m", completions=("x",),
                   rewards=(1.0 if passed else 0.0,), passed=(passed,), statuses=("ok" if passed else status,),
                   flags=(flags,), gen_tokens=tokens, stop_reasons=("length" if tokens >= 160 else "stop",),
                   details=(detail,))


def test_failure_kinds_tell_house_style_from_wrong_logic():
    bench = _bench()
    kind = bench.failure_kind
    assert kind(_row(0, "ood", True)) == "pass"
    assert kind(_row(0, "ood", False, detail="NameError: name 'ok' is not defined")) == "house_style"
    assert kind(_row(0, "ood", False, detail="NameError: name 'helper' is not defined")) == "exception"
    assert kind(_row(0, "ood", False, detail="assert f(1) == 2\nAssertionError")) == "wrong_result"
    assert kind(_row(0, "ood", False, status="no_code")) == "no_code"
    assert kind(_row(0, "ood", False, flags=("hardcoded_outputs",))) == "flagged"


def test_summary_counts_rows_a_token_cut_can_change_and_flips_name_the_lost_tasks(tmp_path):
    """Only completions longer than the cut can change under a smaller eval.max_new_tokens; the
    passes among them are the most it can lose. Flips list lost and gained tasks with the failing kind."""
    bench = _bench()
    save_rows(tmp_path / "eval" / "base.jsonl",
              [_row(0, "ood", True), _row(1, "ood", True), _row(2, "ood", False, detail="AssertionError")])
    save_rows(tmp_path / "eval" / "tuned.jsonl",
              [_row(0, "ood", False, detail="NameError: name 'Result' is not defined"),
               _row(1, "ood", True, tokens=140), _row(2, "ood", True, tokens=200)])
    rows = bench.load(tmp_path, [])
    assert list(rows) == ["base", "tuned"]
    lines = bench.summary(rows, ["ood", "heldout"], 128)
    tuned = [ln for ln in lines if ln.startswith("| tuned | ood")][0].split("|")
    assert tuned[3].strip() == "2/3" and tuned[6].strip() == "2 (2)"
    assert "house_style 1" in tuned[7]
    assert not [ln for ln in lines if "heldout" in ln], "no held-out rows: no line"
    out = bench.flips(rows, "base", ["ood"], {"t0": {"name": "f", "file": "m.py"}})
    assert out[0].startswith("- ood base→tuned LOST: f (m.py): house_style")
    assert "gained: t2: wrong_result" in out[1]
