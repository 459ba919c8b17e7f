"""Candidate against production on the same tasks (issue 16, item 5: "evaluate against production on
held-out tasks and on tasks replayed from recent feedback").

Two task sets, each answered by **both** adapters with the same prompts and the same per-task seed:

* **held-out**: tasks neither version trained on (the evaluator's :meth:`PairedEvaluator.heldout`,
  e.g. a JSONL file named by the loop config's ``compare.heldout``); when the evaluator has none and
  both versions come from pipeline runs (``trainer: pipeline``), the runs' own held-out rows are
  paired instead (:func:`recorded_pairs`: same tasks, same seed and eval settings, scored by the
  sandboxed verifiers);
* **replay**: the most recent rated interactions of the application (:func:`replay_tasks`): the
  user's prompt again, and as reference what the user wanted: their correction, or the answer
  they rated up. Rated-down answers without a correction carry no reference and are left out.
  The candidate may have trained on some of these (that is the point of retraining on feedback),
  so replay says "does it now do what users asked for", the held-out set says "without losing the
  rest".

For each set :func:`compare_sets` pairs the per-task scores (candidate minus production) and
gives the mean difference with a paired bootstrap interval (:func:`sdk.eval.metrics.paired_bootstrap_ci`);
a mean drop larger than the allowed one fails the gate with the numbers. The default evaluator
(:class:`GenerationEvaluator`) loads the base once with both adapters (the CPU server's
:class:`sdk.serve.multi.MultiAdapterModel`) and scores by token F1 against the reference
(:func:`token_f1`); pass ``score=`` for a task-specific one.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import sqlalchemy as sa
from sqlalchemy.orm import Session

from feedback.registry import Registration, VersionRecord
from feedback.store import ChatMessage, Correction, FeedbackEvent, Interaction
from sdk.errors import ConfigError


@dataclass(frozen=True)
class CompareTask:
    """One task both adapters answer.

    Attributes:
        id: stable id (``replay-<interaction id>`` or the held-out file's id).
        messages: the chat prompt (``[{"role", "content"}, ...]``), without the answer.
        reference: what a good answer looks like (a correction, a liked answer, a held-out reference).
        seed: the sampling seed, the same for both adapters.
        user_id: who asked (replay tasks; lets a simulated population re-judge an answer).
    """

    id: str
    messages: tuple[dict[str, str], ...]
    reference: str
    seed: int
    user_id: str | None = None


def stable_seed(key: str) -> int:
    """A seed in [0, 2**31) from ``key`` (the same for every process and run)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") >> 1


def replay_tasks(session: Session, application_id: int, up_to: int, limit: int) -> list[CompareTask]:
    """Tasks from the ``limit`` most recent rated interactions with feedback id <= ``up_to``.

    Reference: the interaction's latest correction, else its last assistant message when its
    latest rating is positive; interactions with neither are skipped. Oldest first.
    """
    latest = (sa.select(FeedbackEvent.interaction_id, sa.func.max(FeedbackEvent.id).label("fid"))
              .where(FeedbackEvent.application_id == application_id, FeedbackEvent.id <= up_to)
              .group_by(FeedbackEvent.interaction_id).subquery())
    picked = session.execute(sa.select(latest.c.interaction_id, FeedbackEvent.rating)
                             .join(FeedbackEvent, FeedbackEvent.id == latest.c.fid)
                             .order_by(latest.c.fid.desc()).limit(limit)).all()
    tasks = []
    for iid, rating in reversed(picked):
        task = _replay_task(session, iid, rating)
        if task is not None:
            tasks.append(task)
    return tasks


def _replay_task(session: Session, iid: int, rating: float | None) -> CompareTask | None:
    inter = session.get(Interaction, iid)
    msgs = session.scalars(sa.select(ChatMessage).where(ChatMessage.interaction_id == iid)
                           .order_by(ChatMessage.position)).all()
    last = max((i for i, m in enumerate(msgs) if m.role == "assistant"), default=len(msgs))
    prompt = tuple({"role": m.role, "content": m.content} for m in msgs[:last] if m.role in ("system", "user"))
    fix = session.scalars(sa.select(Correction.content).where(Correction.interaction_id == iid)
                          .order_by(Correction.id.desc()).limit(1)).first()
    reference = fix or (msgs[last].content if last < len(msgs) and (rating or 0) > 0 else None)
    if not prompt or not reference:
        return None
    key = (inter.external_id if inter else None) or str(iid)
    return CompareTask(f"replay-{iid}", prompt, reference, stable_seed(key), inter.user_id if inter else None)


def load_tasks(path: str | Path) -> list[CompareTask]:
    """Held-out tasks from JSONL: ``{"id", "prompt" (text or messages), "reference", "seed"?}`` per line.

    Raises:
        ConfigError: unreadable file, a line without prompt or reference, or duplicate ids.
    """
    tasks, seen = [], set()
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read held-out tasks {path}: {exc}", "set compare.heldout to a JSONL file") from None
    for n, line in enumerate(filter(str.strip, lines), 1):
        row = json.loads(line)
        prompt, ref = row.get("prompt"), row.get("reference")
        if not prompt or not ref:
            raise ConfigError(f"{path} line {n}: needs prompt and reference", "one JSON object per line")
        tid = str(row.get("id") or f"heldout-{n}")
        if tid in seen:
            raise ConfigError(f"{path} line {n}: duplicate id {tid!r}", "give each task its own id")
        seen.add(tid)
        msgs = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        tasks.append(CompareTask(tid, tuple(msgs), ref, int(row.get("seed", stable_seed(tid)))))
    return tasks


def token_f1(answer: str, reference: str) -> float:
    """Bag-of-tokens F1 in [0, 1] between an answer and its reference (words and punctuation, lower-cased)."""
    a, b = (Counter(re.findall(r"\w+|[^\w\s]", t.lower())) for t in (answer, reference))
    common = sum((a & b).values())
    if not common:
        return 0.0
    precision, recall = common / sum(a.values()), common / sum(b.values())
    return 2 * precision * recall / (precision + recall)


class PairedEvaluator(Protocol):
    """What the loop needs to compare two adapters (see the module docstring)."""

    def heldout(self) -> list[CompareTask]:
        """The held-out tasks (the same list for both adapters)."""

    def scores(self, adapters: dict[str, str], tasks: Sequence[CompareTask]) -> dict[str, list[float]]:
        """Per adapter label, one score in [0, 1] per task (aligned with ``tasks``)."""


@dataclass
class GenerationEvaluator:
    """Answers with each adapter on one base (greedy unless ``temperature`` > 0, seeded per task) and
    scores with ``score(task, answer) -> float`` (default: :func:`token_f1` against the reference).

    Args:
        base: the base model folder both adapters were trained on.
        heldout_tasks: the held-out tasks (e.g. :func:`load_tasks`).
        max_tokens: new tokens per answer.
    """

    base: str
    heldout_tasks: list[CompareTask] = field(default_factory=list)
    max_tokens: int = 48
    temperature: float = 0.0
    score: Callable[[CompareTask, str], float] = lambda task, answer: token_f1(answer, task.reference)
    answers: dict[str, dict[str, str]] = field(default_factory=dict)  # label -> task id -> answer (last call)

    def heldout(self) -> list[CompareTask]:
        """The held-out tasks given at construction."""
        return list(self.heldout_tasks)

    def scores(self, adapters: dict[str, str], tasks: Sequence[CompareTask]) -> dict[str, list[float]]:
        """Generate and score every task with every adapter (the base is loaded once)."""
        from sdk.serve.multi import MultiAdapterModel
        from sdk.serve.preflight import adapter_digest, read_adapter_config
        from sdk.serve.routes import RoutedAdapter

        model = MultiAdapterModel(self.base)
        for i, (label, path) in enumerate(adapters.items(), 1):
            rank = int(read_adapter_config(path).get("r", 8))
            model.load(RoutedAdapter(name=label, number=i, path=str(path), sha256=adapter_digest(path), rank=rank))
        out: dict[str, list[float]] = {}
        for i, label in enumerate(adapters, 1):
            said = {t.id: model.generate(f"{label}@{i}", list(t.messages), self.max_tokens, self.temperature,
                                         t.seed).text for t in tasks}
            self.answers[label] = said
            out[label] = [float(self.score(t, said[t.id])) for t in tasks]
        return out


@dataclass(frozen=True)
class SetComparison:
    """Candidate minus production on one task set (``kind``: heldout or replay).

    ``diff``/``low``/``high``: mean per-task difference and its 95 % paired bootstrap interval;
    ``passed``: ``diff >= -max_drop`` (an empty set passes, with ``n`` 0).
    """

    kind: str
    n: int
    production: float | None
    candidate: float | None
    diff: float | None
    low: float | None
    high: float | None
    max_drop: float
    passed: bool

    def reason(self, production_label: str) -> str:
        """The gate's reason when it failed."""
        return (f"on {self.n} {self.kind} tasks (same prompts, same seeds) the candidate scores {self.candidate:.3f} "
                f"against production {production_label}'s {self.production:.3f}: change {self.diff:+.3f} "
                f"[{self.low:+.3f}, {self.high:+.3f}], more than the allowed drop {self.max_drop}")


def compare_sets(evaluator: PairedEvaluator, candidate: str, production: str, sets: dict[str, list[CompareTask]],
                 max_drop: dict[str, float]) -> list[SetComparison]:
    """Score both adapters on every set (one :meth:`PairedEvaluator.scores` call over all tasks) and pair
    the scores per task (see the module docstring). ``max_drop``: allowed mean drop per set kind."""
    every = [t for tasks in sets.values() for t in tasks]
    got = evaluator.scores({"production": production, "candidate": candidate}, every) if every else {}
    out, start = [], 0
    for kind, tasks in sets.items():
        if not tasks:
            out.append(SetComparison(kind, 0, None, None, None, None, None, max_drop[kind], True))
            continue
        prod, cand = (got[k][start:start + len(tasks)] for k in ("production", "candidate"))
        start += len(tasks)
        out.append(paired(kind, prod, cand, max_drop[kind]))
    return out


def paired(kind: str, production: Sequence[float], candidate: Sequence[float], max_drop: float) -> SetComparison:
    """The :class:`SetComparison` of aligned per-task scores (shape ``(T,)`` each, T >= 1)."""
    from sdk.eval.metrics import paired_bootstrap_ci

    est = paired_bootstrap_ci(production, candidate)
    return SetComparison(kind, len(production), sum(production) / len(production), sum(candidate) / len(candidate),
                         est.value, est.low, est.high, max_drop, est.value >= -max_drop - 1e-12)


def recorded_pairs(candidate_adapter: str | Path, production_adapter: str | Path,
                   splits: Sequence[str] = ("heldout", "ood")) -> tuple[list[float], list[float]] | str:
    """Per-task pass rates of both versions from their own pipeline runs (``eval/tuned.jsonl`` of the run
    folder above each adapter), on the tasks of ``splits`` both runs evaluated, matched by task id.

    The pipeline seeds its evaluation with the run config's ``seed``; the pairs are only taken when
    both runs' ``seed`` and ``eval`` settings (``config.json``) are equal, so both adapters answered
    the same tasks with the same seeds and sampling, scored by the run's sandboxed verifiers.
    Returns ``(production, candidate)`` aligned lists, or a sentence saying why there are none.
    """
    from sdk.eval.records import load_rows

    runs = [Path(candidate_adapter).resolve().parents[1], Path(production_adapter).resolve().parents[1]]
    settings = []
    for run in runs:
        try:
            conf = json.loads((run / "config.json").read_text())
            settings.append((conf.get("seed"), conf.get("eval")))
        except (OSError, ValueError):
            return f"no config.json in {run} (not a pipeline run)"
    if settings[0] != settings[1]:
        return "the two runs evaluated with different seed or eval settings"
    rows = []
    for run in runs:
        try:
            rows.append({r.task_id: r for r in load_rows(run / "eval" / "tuned.jsonl") if r.split.value in splits})
        except (OSError, ValueError) as exc:
            return f"cannot read {run / 'eval' / 'tuned.jsonl'}: {exc}"
    common = sorted(rows[0].keys() & rows[1].keys())
    if not common:
        return f"the two runs share no evaluated task in {', '.join(splits)}"
    rate = lambda r: sum(r.passed) / len(r.passed) if r.passed else 0.0  # noqa: E731
    return [rate(rows[1][t]) for t in common], [rate(rows[0][t]) for t in common]


def as_record(comparisons: Sequence[SetComparison]) -> dict[str, Any]:
    """The comparisons as the JSON the registry keeps in a version's ``eval["versus_production"]``."""
    return {c.kind: asdict(c) for c in comparisons}


def with_comparison(reg: Registration, record: dict[str, Any]) -> Registration:
    """``reg`` with ``record`` in its eval (``versus_production``) and a failed gate for each set
    where the candidate dropped more than allowed (reasons with the numbers)."""
    found = [SetComparison(**v) for v in record.values() if isinstance(v, dict)]
    failed = [c.reason(record["production"]) for c in found if not c.passed]
    evaluation = {**reg.eval, "versus_production": record}
    if not failed:
        return replace(reg, eval=evaluation)
    return replace(reg, eval=evaluation, gate_passed=False, gate_reasons=(*reg.gate_reasons, *failed))


def against_production(reg: Registration, production: VersionRecord | None, max_drop: float) -> Registration:
    """``reg`` with its gate failed when its held-out pass@1 (``eval["heldout_pass_at_1"]["tuned"]``)
    is below production's recorded one by more than ``max_drop``; unchanged when either is missing.

    The pipeline's own gate compares the candidate with the base model; this compares the figures
    the two versions' reports recorded (same held-out split when the task set is unchanged).
    """
    mine = (reg.eval.get("heldout_pass_at_1") or {}).get("tuned")
    theirs = ((production.eval if production else {}).get("heldout_pass_at_1") or {}).get("tuned")
    if mine is None or theirs is None or mine >= theirs - max_drop:
        return reg
    reason = (f"held-out pass@1 {mine:.3f} is below production {production.label}'s {theirs:.3f} "
              f"(max_heldout_drop {max_drop})")
    return replace(reg, gate_passed=False, gate_reasons=(*reg.gate_reasons, reason))
