"""bench/arms.py --import-run keeps a ``make demo`` run's RL-end rows (``eval/rl.jsonl``, written under
their own label when ``eval.select: validation`` chose among the adapters) and the table shows them."""

from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path

from test_arms_bench import _arms, _rows


def test_import_run_keeps_the_rl_end_rows_and_the_table_shows_them(tmp_path, capsys):
    arms = _arms()
    run, work = tmp_path / "run", tmp_path / "work"
    (run / "tasks").mkdir(parents=True)
    (run / "state").mkdir()
    (run / "state" / "tasks.json").write_text("{}")
    (run / "eval").mkdir()
    _rows(run / "eval" / "base.jsonl", "heldout", [False] * 4)
    _rows(run / "eval" / "sft.jsonl", "heldout", [True, True, False, False])
    _rows(run / "eval" / "rl.jsonl", "heldout", [True, False, False, False])
    _rows(run / "eval" / "tuned.jsonl", "heldout", [True, True, False, False])
    config = str(Path(__file__).resolve().parents[2] / "examples" / "quickstart" / "config.yaml")
    arms.import_run(Namespace(import_run=str(run), work=str(work), arm="demo", set=None, config=config))
    assert arms.per_task([work / "demo" / "eval_rl_heldout.jsonl"])["heldout"] == \
        {"heldout0": 1.0, "heldout1": 0.0, "heldout2": 0.0, "heldout3": 0.0}
    assert json.loads((work / "demo" / "arm.json").read_text())["arm"] == "demo"
    capsys.readouterr()
    arms.table(Namespace(work=str(work), against="demo/sft"))
    lines = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]]
             for ln in capsys.readouterr().out.splitlines()[2:]}
    assert lines["demo/rl"][0] == "1/4" and lines["demo/sft"][0] == "2/4" and lines["demo/tuned"][0] == "2/4"
