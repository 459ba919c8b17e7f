"""Evaluation: pass@k with bootstrap intervals, base-vs-tuned comparison, regression gate, report.

Loads no model: :func:`evaluate` takes ``generate`` and ``score`` callables. matplotlib is
imported only when a report is written (:func:`write_report`).
"""

from sdk.eval.cost import Checkpoint, StageCost, checkpoint_from_rows, stage_cost
from sdk.eval.gate import GateResult, check_gate
from sdk.eval.metrics import (bootstrap_ci, component_stats, flag_counts, paired_bootstrap_ci, pass_at_k,
                              pass_at_k_per_task)
from sdk.eval.records import (Comparison, EvalError, EvalRow, Estimate, SliceComparison, TaskDiff, load_rows,
                              save_rows)
from sdk.eval.report import build_report, print_summary, write_report
from sdk.eval.run import RewardLike, compare, evaluate, is_pass
from sdk.eval.runs import compare_runs, load_report, print_runs

__all__ = [
    "Checkpoint", "Comparison", "EvalError", "EvalRow", "Estimate", "GateResult",
    "RewardLike", "SliceComparison", "StageCost", "TaskDiff", "bootstrap_ci", "build_report", "check_gate",
    "checkpoint_from_rows", "compare", "compare_runs", "component_stats", "evaluate",
    "flag_counts", "is_pass", "load_report", "load_rows", "paired_bootstrap_ci",
    "pass_at_k", "pass_at_k_per_task", "print_runs", "print_summary", "save_rows",
    "stage_cost", "write_report",
]
