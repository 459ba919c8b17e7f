"""bench/arms.py's table: pass counts per split and paired intervals against the base and another arm."""

from __future__ import annotations

import importlib.util
import json
from argparse import Namespace
from pathlib import Path

from sdk.eval.records import EvalRow, save_rows

ARMS = Path(__file__).resolve().parents[2] / "bench" / "arms.py"


def _arms():
    spec = importlib.util.spec_from_file_location("arms_bench", ARMS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rows(path: Path, split: str, passes: list[bool]) -> None:
    save_rows(path, [EvalRow(task_id=f"{split}{i}", domain="d", split=split, model="m", completions=("x",),
                             rewards=(1.0 if p else 0.0,), passed=(p,), statuses=("ok" if p else "failed",),
                             flags=((),)) for i, p in enumerate(passes)])


def test_table_counts_and_pairs_on_the_same_tasks(tmp_path, capsys):
    arms = _arms()
    _rows(tmp_path / "base_heldout.jsonl", "heldout", [False] * 10)
    _rows(tmp_path / "base_ood.jsonl", "ood", [True] * 3 + [False] * 7)
    for name, held, ood in (("a", [True] * 2 + [False] * 8, [True] * 1 + [False] * 9),
                            ("b", [True] * 2 + [False] * 8, [True] * 3 + [False] * 7)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "arm.json").write_text(json.dumps({"train_wall_s": 5, "load_start": [1.0, 0, 0],
                                                              "load_end": [2.0, 0, 0]}))
        _rows(tmp_path / name / "eval_tuned_heldout.jsonl", "heldout", held)
        _rows(tmp_path / name / "eval_tuned_ood.jsonl", "ood", ood)
    arms.table(Namespace(work=str(tmp_path), against="a/tuned"))
    lines = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]]
             for ln in capsys.readouterr().out.splitlines()[2:]}
    assert lines["base"][:3:2] == ["0/10", "3/10"]
    a, b = lines["a/tuned"], lines["b/tuned"]
    assert a[0] == "2/10" and a[1].startswith("+20.0") and a[2] == "1/10" and a[3].startswith("-20.0")
    assert b[2] == "3/10" and b[3].startswith("+0.0"), "same OOD tasks passed as the base: no change"
    assert b[4].startswith("+0.0") and b[5].startswith("+20.0"), "b against a: held-out equal, OOD +2 tasks"
    assert a[6] == "5" and a[7] == "1.0→2.0"
