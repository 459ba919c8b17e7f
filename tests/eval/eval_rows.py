"""Row builders shared by the eval tests (imported by conftest.py and tests)."""

from sdk.eval.records import EvalRow
from sdk.tasks.records import Split


def make_rows(model, outcomes, split=Split.HELDOUT, domain="python/billing", start=0, flag_on="H", components=None):
    """One row per string in ``outcomes``; per sample '1' pass, '0' fail, '-' unjudged, 'H' failed+flagged."""
    rows = []
    for i, s in enumerate(outcomes, start):
        rows.append(EvalRow(
            task_id=f"{split.value}-{i}", domain=domain, split=split, model=model,
            completions=tuple(f"def f(): return {ch}" for ch in s),
            rewards=tuple(None if ch == "-" else (1.0 if ch == "1" else 0.0) for ch in s),
            passed=tuple(ch == "1" for ch in s),
            statuses=tuple({"1": "ok", "0": "failed", "-": "sandbox_error", "H": "failed"}[ch] for ch in s),
            flags=tuple(("exit_zero",) if ch == flag_on else () for ch in s), gen_tokens=10 * len(s),
            components=tuple(dict(components) for _ in s) if components is not None else ()))
    return rows
