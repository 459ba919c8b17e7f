"""Difficulty: each train task's pass rate over k samples, cached on disk, and the filter it drives.

GRPO learns only from groups whose rewards differ: a task the policy always or never solves gives
every sample the same reward, a zero advantage and no gradient (DAPO, Yu et al. 2025, "dynamic
sampling"; DESIGN.md: GRPO wants pass rates of roughly 30–70 %). Before GRPO we sample ``k``
completions per train task from the policy GRPO starts from (base + SFT adapter), score them with
the same tiered reward, and drop tasks at or outside ``[min_pass_rate, max_pass_rate]``; the
dropped tasks are returned as :class:`~sdk.tasks.records.Quarantined` with the reason, never lost.

Deviation from DAPO: DAPO over-samples and filters groups *during* training; TRL 1.16 has no hook
for re-sampling, so we filter once before training, and during training :mod:`sdk.train.zero_std`
leaves the zero-variance groups that still occur out of the loss (no refill);
:func:`zero_std_summary` counts them.

The math is pure functions (:func:`estimate`, :func:`split_by_difficulty`); the costly part
(:func:`measure`) takes the generator and scorer as callables, so tests need no model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from sdk.tasks.records import Frozen, Quarantined, Task

GenerateFn = Callable[[list[list[dict]], int], list[list[tuple[str, int]]]]
ScoreFn = Callable[[list[Task], list[str]], list]  # -> list[RewardResult]-like (objects with .score)
_EPS = 1e-9


class DifficultyEstimate(Frozen):
    """One task's measured pass rate.

    Attributes:
        task_id: the task.
        k: samples drawn.
        valid: samples that could be judged (score not None).
        passes: valid samples with score >= the pass threshold.
        pass_rate: ``passes / valid``, None when no sample could be judged.
        mean_reward: mean score of the valid samples, None when none.
    """

    task_id: str
    k: int
    valid: int
    passes: int
    pass_rate: float | None
    mean_reward: float | None


def estimate(task_id: str, scores: Sequence[float | None], threshold: float = 1.0) -> DifficultyEstimate:
    """Pass rate of one task from its ``k`` sample scores (``None`` = not judged, left out)."""
    valid = [s for s in scores if s is not None]
    passes = sum(s >= threshold - _EPS for s in valid)
    return DifficultyEstimate(task_id=task_id, k=len(scores), valid=len(valid), passes=passes,
                              pass_rate=passes / len(valid) if valid else None,
                              mean_reward=sum(valid) / len(valid) if valid else None)


def split_by_difficulty(tasks: Sequence[Task], estimates: Mapping[str, DifficultyEstimate],
                        min_rate: float = 0.0, max_rate: float = 1.0) -> tuple[list[Task], list[Quarantined]]:
    """Keep tasks with ``min_rate < pass_rate < max_rate``; the kept get ``difficulty`` set.

    Tasks with no estimate or no judged sample are kept unmeasured (``difficulty`` unchanged).
    Returns:
        ``(kept, dropped)``; each dropped task carries a reason such as
        ``difficulty: never solved (0/4 passed)``.
    """
    kept, dropped = [], []
    for task in tasks:
        est = estimates.get(task.id)
        if est is None or est.pass_rate is None:
            kept.append(task)
            continue
        rate, tally = est.pass_rate, f"{est.passes}/{est.valid} passed"
        if rate <= min_rate:
            why = "never solved" if rate == 0 else f"pass rate {rate:.2f} <= min_pass_rate {min_rate}"
        elif rate >= max_rate:
            why = "always solved" if rate == 1 else f"pass rate {rate:.2f} >= max_pass_rate {max_rate}"
        else:
            kept.append(task.with_(difficulty=rate))
            continue
        dropped.append(Quarantined(reason=f"difficulty: {why} ({tally})", task=task.with_(difficulty=rate)))
    return kept, dropped


class DifficultyCache:
    """Estimates on disk (JSONL, append-only), keyed by :func:`cache_key`.

    Args:
        path: the JSONL file (created on first write).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._rows: dict[str, DifficultyEstimate] = {}
        if self.path.is_file():
            for line in self.path.read_text().splitlines():
                try:
                    row = json.loads(line)
                    self._rows[row["key"]] = DifficultyEstimate.model_validate(row["estimate"])
                except (ValueError, KeyError):
                    continue  # a torn last line after a crash: that task is measured again

    def get(self, key: str) -> DifficultyEstimate | None:
        """The cached pass-rate estimate for ``key``, or None."""
        return self._rows.get(key)

    def put(self, key: str, est: DifficultyEstimate) -> None:
        """Store a pass-rate estimate under ``key`` (atomic write)."""
        self._rows[key] = est
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as fh:
            fh.write(json.dumps({"key": key, "estimate": est.model_dump()}) + "\n")


def model_key(model_path: str | Path, adapter_dir: str | Path | None = None) -> str:
    """Identity of the sampling policy: the base folder's config and weight file sizes/names,
    plus the adapter's weight bytes (small) when there is one. 16 hex chars."""
    h = hashlib.sha256()
    base = Path(model_path)
    h.update(str(base.resolve()).encode())
    for f in sorted(base.glob("*.json")) + sorted(base.glob("*.safetensors")):
        h.update(f"{f.name}:{f.stat().st_size}".encode())
    if (base / "config.json").is_file():
        h.update((base / "config.json").read_bytes())
    if adapter_dir is not None:
        for f in sorted(Path(adapter_dir).glob("adapter_*")):
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def cache_key(policy: str, task_id: str, k: int, temperature: float, max_new_tokens: int, threshold: float) -> str:
    """Cache key of one estimate: policy identity, task hash and every sampling setting."""
    return hashlib.sha256(f"{policy}|{task_id}|{k}|{temperature}|{max_new_tokens}|{threshold}".encode()).hexdigest()[:24]


def measure(tasks: Sequence[Task], generate: GenerateFn, score: ScoreFn, k: int, cache: DifficultyCache | None,
            key_of: Callable[[Task], str], threshold: float = 1.0, batch_tasks: int = 8) -> dict[str, DifficultyEstimate]:
    """Estimate every task's pass rate; cached tasks are not sampled again.

    Args:
        tasks: tasks to measure.
        generate: ``(prompts, n) -> [[(text, n_tokens)] * n per prompt]`` (e.g. :class:`sdk.generate.HFGenerator`).
        score: ``(tasks, completions) -> results with .score`` (e.g. ``sdk.rewards.tiered.score_batch``
            bound to a sandbox and weights); aligned, one task per completion.
        k: samples per task.
        cache: where estimates are kept (None: no cache).
        key_of: cache key of a task (see :func:`cache_key`).
        threshold: a sample passes when its score >= this.
        batch_tasks: tasks per generate call (x k sequences).
    Returns:
        ``{task_id: estimate}`` for every task.
    """
    out: dict[str, DifficultyEstimate] = {}
    todo = []
    for t in tasks:
        hit = cache.get(key_of(t)) if cache else None
        if hit is not None:
            out[t.id] = hit
        else:
            todo.append(t)
    for start in range(0, len(todo), batch_tasks):
        part = todo[start:start + batch_tasks]
        samples = generate([[m.model_dump() for m in t.prompt] for t in part], k)
        flat_tasks = [t for t, group in zip(part, samples) for _ in group]
        results = score(flat_tasks, [out[0] for group in samples for out in group])
        for j, t in enumerate(part):
            est = estimate(t.id, [r.score for r in results[j * k:(j + 1) * k]], threshold)
            out[t.id] = est
            if cache:
                cache.put(key_of(t), est)
    return out


def difficulty_report(estimates: Mapping[str, DifficultyEstimate], dropped: Sequence[Quarantined]) -> dict:
    """Counts for logs and the report: measured, unmeasured, kept, dropped by reason, histogram of pass rates."""
    rates = [e.pass_rate for e in estimates.values() if e.pass_rate is not None]
    bins = [0] * 5
    for r in rates:
        bins[min(int(r * 5), 4)] += 1
    reasons: dict[str, int] = {}
    for q in dropped:
        key = q.reason.split(" (")[0]
        reasons[key] = reasons.get(key, 0) + 1
    return {"measured": len(rates), "unmeasured": len(estimates) - len(rates), "dropped": len(dropped),
            "dropped_by_reason": reasons, "pass_rate_histogram_5bins": bins,
            "mean_pass_rate": round(sum(rates) / len(rates), 4) if rates else None}


def zero_std_summary(log_history: Sequence[Mapping], groups_per_step: int) -> dict:
    """Zero-variance GRPO groups from TRL's per-step ``frac_reward_zero_std`` log, and the groups
    :mod:`sdk.train.zero_std` left out of the loss (``zero_std/dropped_groups``, a count per logged step;
    ``logging_steps`` is 1 in our configs).

    TRL's fraction misses groups of equal rewards whose float32 std is above 1e-8 (e.g. 0.7 x 8), so
    ``dropped_groups`` can exceed ``zero_std_groups``.
    Args:
        log_history: ``trainer.state.log_history``.
        groups_per_step: prompts (groups) per logged step, i.e. ``batch_size // num_generations``.
    Returns:
        ``{"steps", "groups", "zero_std_groups", "frac_zero_std", "dropped_groups"}``; zeros when
        nothing was logged (``dropped_groups`` is 0 when dropping was off).
    """
    fracs = [float(h["frac_reward_zero_std"]) for h in log_history if "frac_reward_zero_std" in h]
    zero = round(sum(f * groups_per_step for f in fracs))
    groups = len(fracs) * groups_per_step
    dropped = round(sum(float(h.get("zero_std/dropped_groups") or 0) for h in log_history))
    return {"steps": len(fracs), "groups": groups, "zero_std_groups": zero,
            "frac_zero_std": round(zero / groups, 4) if groups else 0.0, "dropped_groups": dropped}


def sample_tasks(tasks: Sequence[Task], max_tasks: int | None, seed: int) -> tuple[list[Task], list[Task]]:
    """``(sample, rest)``: at most ``max_tasks`` of ``tasks`` drawn with ``seed`` from their sorted ids
    (so the draw does not depend on the input order); both lists keep the input order. All tasks
    when ``max_tasks`` is None or not below ``len(tasks)``."""
    import random

    if max_tasks is None or max_tasks >= len(tasks):
        return list(tasks), []
    picked = set(random.Random(seed).sample(sorted(t.id for t in tasks), max_tasks))
    return [t for t in tasks if t.id in picked], [t for t in tasks if t.id not in picked]


def measure_and_filter(tasks: Sequence[Task], model_path: str, adapter_dir: Path | None, cfg, sandbox, weights,
                       out_dir: Path, seed: int, dtype: str = "auto") -> tuple[list[Task], list[Quarantined], dict]:
    """The pipeline's difficulty step: sample ``cfg.k`` completions per task from base + adapter
    (:class:`sdk.generate.HFGenerator`), score them (``sdk.rewards.tiered.score_batch``), filter.
    With ``cfg.max_tasks`` set only a seeded sample (:func:`sample_tasks`) is measured and the rest
    is left out of the returned ``kept`` (counted as ``not_sampled`` in the report): about 6-7 s per
    task at k=4 and 128 tokens for SmolLM2-135M on 2 CPU cores.

    Args:
        cfg: :class:`sdk.config.DifficultyConfig`.
        sandbox, weights: the run's sandbox and :class:`sdk.config.RewardConfig`.
        out_dir: gets ``difficulty_cache.jsonl``, ``difficulty.json`` (the report) and
            ``difficulty_dropped.jsonl`` (the dropped tasks with reasons).
    Returns:
        ``(kept, dropped, report)``.
    """
    from sdk.generate import HFGenerator
    from sdk.rewards.tiered import score_batch

    tasks, unsampled = sample_tasks(tasks, cfg.max_tasks, seed)
    policy = model_key(model_path, adapter_dir)
    cache = DifficultyCache(out_dir / "difficulty_cache.jsonl")
    key_of = lambda t: cache_key(policy, t.id, cfg.k, cfg.temperature, cfg.max_new_tokens, cfg.pass_threshold)
    gen = None
    if any(cache.get(key_of(t)) is None for t in tasks):
        gen = HFGenerator(model_path, adapter_dir, batch_size=8, max_new_tokens=cfg.max_new_tokens,
                          temperature=cfg.temperature, seed=seed, dtype=dtype)
    try:
        ests = measure(tasks, gen or (lambda prompts, n: []), lambda ts, cs: score_batch(ts, cs, sandbox, weights),
                       cfg.k, cache, key_of, cfg.pass_threshold)
    finally:
        if gen is not None:
            gen.close()
    kept, dropped = split_by_difficulty(tasks, ests, cfg.min_pass_rate, cfg.max_pass_rate)
    report = {**difficulty_report(ests, dropped), "kept": len(kept), "not_sampled": len(unsampled),
              "policy": policy, "k": cfg.k}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "difficulty.json").write_text(json.dumps(report, indent=2))
    (out_dir / "difficulty_dropped.jsonl").write_text(
        "".join(q.model_dump_json() + "\n" for q in dropped))
    return kept, dropped, report
