"""Evaluation: pass@k with bootstrap intervals, base-vs-tuned comparison, regression gate, report.

Loads no model: :func:`evaluate` takes ``generate`` and ``score`` callables.
"""

from sdk.eval.metrics import bootstrap_ci, flag_counts, paired_bootstrap_ci, pass_at_k, pass_at_k_per_task
from sdk.eval.records import (Comparison, EvalError, EvalRow, Estimate, SliceComparison, TaskDiff, load_rows,
                              save_rows)
from sdk.eval.run import RewardLike, compare, evaluate, is_pass

__all__ = [
    "Comparison", "EvalError", "EvalRow", "Estimate", "RewardLike", "SliceComparison", "TaskDiff",
    "bootstrap_ci", "compare", "evaluate", "flag_counts", "is_pass", "load_rows", "paired_bootstrap_ci",
    "pass_at_k", "pass_at_k_per_task", "save_rows",
]
