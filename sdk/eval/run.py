"""Run an evaluation from callables, and compare two models' rows.

:func:`evaluate` loads no model: the caller passes ``generate`` (prompts -> completions) and
``score`` (tasks, completions -> reward results), so the same code evaluates a base model, a
tuned adapter, a checkpoint, or completions read back from disk. :func:`compare` pairs the rows
of two models by task id and computes pass@k per split and domain with bootstrap intervals
(:mod:`sdk.eval.metrics`) and the per-task diff the regression gate reads.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from enum import Enum
from typing import Any, Callable, Iterable, Protocol, Sequence, runtime_checkable

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sdk.eval.metrics import bootstrap_ci, paired_bootstrap_ci, pass_at_k_per_task
from sdk.eval.records import DETAIL_CHARS, Comparison, EvalError, EvalRow, SliceComparison, TaskDiff
from sdk.tasks.records import Task

log = logging.getLogger(__name__)

FULL_MARKS = 1.0 - 1e-9


@runtime_checkable
class RewardLike(Protocol):
    """What ``score`` returns per completion (``sdk.rewards.RewardResult`` fits).

    ``score``: in [0, 1], ``None`` when the completion could not be judged; ``status``: a string
    or a ``str`` enum (``ok`` means every test passed); ``flags``: reward-hacking / integrity flags.
    """

    score: float | None
    status: Any
    flags: Any


Generate = Callable[[list[list[dict]], int], list[list[tuple]]]  # (text, n_tokens[, stop_reason])
Score = Callable[[list[Task], list[str]], Sequence[RewardLike]]


def status_str(status: Any) -> str:
    """A status as its plain string (``ExecStatus.OK`` -> ``"ok"``)."""
    return str(status.value) if isinstance(status, Enum) else str(status)


def is_pass(result: RewardLike) -> bool:
    """A pass: judged (score not ``None``), status ``ok`` and full marks (score >= 1)."""
    return result.score is not None and status_str(result.status) == "ok" and result.score >= FULL_MARKS


def evaluate(tasks: Sequence[Task], generate: Generate, score: Score, model_label: str, n_samples: int,
             progress: bool = True, batch_size: int = 8, overlap: bool = True) -> list[EvalRow]:
    """Generate ``n_samples`` completions per task, score them, return one row per task.

    Args:
        tasks: the tasks, any splits.
        generate: ``generate(prompts, n)`` where ``prompts`` is a list of chat message lists
            (``[{"role": ..., "content": ...}, ...]``); returns, per prompt, ``n`` pairs
            ``(completion, n_generated_tokens)`` or triples ``(completion, n_tokens, stop_reason)``
            (``stop``, ``eos``, ``length``: recorded in :attr:`EvalRow.stop_reasons`, field case E1).
        score: ``score(tasks, completions)`` with the two lists aligned (a task repeated once per
            sample); returns one :class:`RewardLike` per completion.
        model_label: written into every row (``base``, ``tuned``, a checkpoint name).
        n_samples: completions per task (>= 1).
        progress: show a rich progress bar.
        batch_size: prompts per ``generate`` call.
        overlap: score batch i in one background thread while batch i+1 is generated (default),
            so the sandbox's runs use the cores that generation leaves idle; the rows are the
            same as with False (scoring one batch at a time after its generation), in order:
            ``score`` is called once per batch, never twice at once, and with the same lists.
    Returns:
        Rows in task order. A batch whose ``score`` raises is kept: its samples get reward
        ``None`` and status ``score_error`` (not judged), and a warning is logged.
    Raises:
        EvalError: ``n_samples``/``batch_size`` < 1, or a callable returned the wrong number of items.
    """
    if n_samples < 1 or batch_size < 1:
        raise EvalError(f"n_samples and batch_size must be >= 1, got {n_samples} and {batch_size}",
                        "set eval.n_samples and eval.batch_size to positive integers")
    rows: list[EvalRow] = []
    columns = (TextColumn(f"eval {model_label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    started = time.monotonic()
    with Progress(*columns, disable=not progress, transient=False) as bar, \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="tl-eval-score") as scorer:
        job = bar.add_task("eval", total=len(tasks))

        def collect(pending: Future) -> None:
            done = pending.result()
            rows.extend(done)
            bar.advance(job, len(done))
            if not progress:  # plain lines for logs and CI (printed by the CLI when stderr is no terminal)
                _plain_line(model_label, len(rows), len(tasks), sum(any(r.passed) for r in rows), started)

        pending: Future | None = None
        for start in range(0, len(tasks), batch_size):
            batch = list(tasks[start:start + batch_size])
            outs = _generate_batch(batch, generate, n_samples)
            if pending is not None:  # batch i-1 was scored while batch i was generated
                collect(pending)
            pending = scorer.submit(_score_batch, batch, outs, score, model_label, n_samples)
            if not overlap:
                collect(pending)
                pending = None
        if pending is not None:
            collect(pending)
    return rows


def _plain_line(label: str, done: int, total: int, passed: int, started: float) -> None:
    """``eval base: 16/60 tasks, 3 passed (41 s, ~113 s left)`` on the ``tuneloop.progress`` logger."""
    spent = time.monotonic() - started
    left = f", ~{spent / done * (total - done):.0f} s left" if done < total else ""
    logging.getLogger("tuneloop.progress").info(f"eval {label}: {done}/{total} tasks, {passed} passed ({spent:.0f} s{left})")


def _generate_batch(batch: list[Task], generate: Generate, n: int) -> list:
    """``generate``'s completions for ``batch``, checked: one list of ``n`` per prompt."""
    prompts = [[m.model_dump(mode="json") for m in t.prompt] for t in batch]
    outs = generate(prompts, n)
    if len(outs) != len(batch) or any(len(o) != n for o in outs):
        got = [len(o) for o in outs] if isinstance(outs, list) else type(outs).__name__
        raise EvalError(f"generate returned {got} for {len(batch)} prompts x {n} samples",
                        "return one list of n (completion, n_tokens) pairs per prompt")
    return outs


def _score_batch(batch: list[Task], outs: list, score: Score, label: str, n: int) -> list[EvalRow]:
    """Rows of ``batch`` from its checked completions ``outs``, scored by ``score``."""
    flat_tasks = [t for t in batch for _ in range(n)]
    flat_text = [out[0] for o in outs for out in o]
    try:
        results: list[Any] = list(score(flat_tasks, flat_text))
    except Exception as exc:  # failures are data: the batch is recorded as not judged
        log.warning("score failed on a batch of %d completions (%s: %s); recorded as not judged",
                    len(flat_text), type(exc).__name__, exc)
        results = [None] * len(flat_text)
    if len(results) != len(flat_text):
        raise EvalError(f"score returned {len(results)} results for {len(flat_text)} completions",
                        "return one reward result per completion, in order")
    rows = []
    for i, task in enumerate(batch):
        res = results[i * n:(i + 1) * n]
        kind = str(getattr(task.verifier, "kind", "") or "")
        rows.append(EvalRow(
            task_id=task.id, domain=task.domain, split=task.split, model=label,
            completions=tuple(out[0] for out in outs[i]),
            rewards=tuple(None if r is None or r.score is None else float(r.score) for r in res),
            passed=tuple(r is not None and is_pass(r) for r in res),
            statuses=tuple("score_error" if r is None else status_str(r.status) for r in res),
            flags=tuple(() if r is None else tuple(str(f) for f in (r.flags or ())) for r in res),
            gen_tokens=sum(int(out[1]) for out in outs[i]),
            components=tuple(_components(r) for r in res),
            stop_reasons=tuple(str(out[2]) if len(out) > 2 else "unknown" for out in outs[i]),
            details=tuple("" if r is None else str(getattr(r, "detail", "") or "")[:DETAIL_CHARS] for r in res),
            verifier_kind=kind, **(_change_tests(res) if kind == "change" else {}),
        ))
    return rows


def _change_tests(results: Sequence[Any]) -> dict[str, tuple[tuple[str, ...], ...]]:
    """A change task's per-sample fail-to-pass tests still failing and pass-to-pass tests broken."""
    return {name: tuple(tuple(str(t) for t in (getattr(r, name, None) or ())) for r in results)
            for name in ("fail_to_pass_failing", "pass_to_pass_broken")}


def _components(result: Any) -> dict[str, float]:
    comp = getattr(result, "components", None) or {}
    return {str(k): float(v) for k, v in comp.items() if isinstance(v, (int, float))}


def compare(base_rows: Sequence[EvalRow], tuned_rows: Sequence[EvalRow], ks: Iterable[int] | None = None,
            n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0,
            solve_threshold: float = 0.5) -> Comparison:
    """Pair base and tuned rows by task id; pass@k per split, per domain and overall; per-task diff.

    Args:
        base_rows, tuned_rows: rows of the two models (each task at most once per side).
        ks: the k of pass@k; default ``{1, n_samples}``.
        n_resamples, confidence, seed: bootstrap settings (see :mod:`sdk.eval.metrics`).
        solve_threshold: judged pass rate at or above which a model counts as solving a task.
    Returns:
        A :class:`Comparison`. A pass@k for a slice uses only tasks with at least k judged samples
        on both sides; tasks in only one of the inputs are listed in ``unpaired``.
    Raises:
        EvalError: a task appears twice on one side, no task is paired, or a k is below 1.
    """
    base, tuned = _by_id(base_rows, "base"), _by_id(tuned_rows, "tuned")
    paired = sorted(set(base) & set(tuned), key=lambda i: (base[i].split.value, base[i].domain, i))
    if not paired:
        raise EvalError("no task was evaluated for both models", "evaluate base and tuned on the same task set")
    n_samples = min(len(r.completions) for r in (*base.values(), *tuned.values()))
    want = sorted(set(ks) if ks is not None else {1, n_samples})
    if want[0] < 1:
        raise EvalError(f"k must be >= 1, got {want}", "ask for pass@k with k in 1..n_samples")
    pairs = [(base[i], tuned[i]) for i in paired]
    opts = dict(n_resamples=n_resamples, confidence=confidence, seed=seed)
    by_split = {s: _slice(s, [p for p in pairs if p[0].split.value == s], want, opts)
                for s in sorted({p[0].split.value for p in pairs})}
    by_domain = {d: _slice(d, [p for p in pairs if p[0].domain == d], want, opts)
                 for d in sorted({p[0].domain for p in pairs})}
    unpaired = tuple(sorted(set(base) ^ set(tuned)))
    return Comparison(n_samples=n_samples, ks=tuple(want), by_split=by_split, by_domain=by_domain,
                      overall=_slice("all", pairs, want, opts),
                      diffs=tuple(_diff(b, t, solve_threshold) for b, t in pairs),
                      unpaired=unpaired, solve_threshold=solve_threshold)


def _by_id(rows: Sequence[EvalRow], side: str) -> dict[str, EvalRow]:
    out: dict[str, EvalRow] = {}
    for r in rows:
        if r.task_id in out:
            raise EvalError(f"task {r.task_id} appears twice in the {side} rows",
                            "pass one row per task and model (merge samples into one row)")
        out[r.task_id] = r
    return out


def _slice(name: str, pairs: list[tuple[EvalRow, EvalRow]], ks: list[int], opts: dict) -> SliceComparison:
    base, tuned, delta = {}, {}, {}
    for k in ks:
        usable = [(b, t) for b, t in pairs if b.n >= k and t.n >= k]
        if not usable:
            continue
        pb = pass_at_k_per_task([b.n for b, _ in usable], [b.c for b, _ in usable], k)
        pt = pass_at_k_per_task([t.n for _, t in usable], [t.c for _, t in usable], k)
        base[k] = bootstrap_ci(pb, **opts)
        tuned[k] = bootstrap_ci(pt, **opts)
        delta[k] = paired_bootstrap_ci(pb, pt, **opts)
    judged = [(b.mean_reward, t.mean_reward) for b, t in pairs if b.n and t.n]
    reward = {}
    if judged:
        rb, rt = [b for b, _ in judged], [t for _, t in judged]
        reward = {"base": bootstrap_ci(rb, **opts), "tuned": bootstrap_ci(rt, **opts),
                  "delta": paired_bootstrap_ci(rb, rt, **opts)}
    return SliceComparison(name=name, n_tasks=len(pairs), base=base, tuned=tuned, delta=delta, mean_reward=reward)


def _diff(b: EvalRow, t: EvalRow, threshold: float) -> TaskDiff:
    rb, rt = b.pass_rate, t.pass_rate
    if rb is None or rt is None:
        outcome = "unjudged"
    else:
        sb, st = rb >= threshold, rt >= threshold
        outcome = {(True, False): "regression", (False, True): "gain",
                   (True, True): "both", (False, False): "neither"}[(sb, st)]
    return TaskDiff(task_id=b.task_id, domain=b.domain, split=b.split, base_pass_rate=rb,
                    tuned_pass_rate=rt, outcome=outcome)
