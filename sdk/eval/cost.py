"""Cost and benefit: compute per stage, held-out pass rate against compute, where returns fall off.

The benefit curve is a list of checkpoints (base at zero training compute, then each evaluated
checkpoint); the marginal return of a step is the held-out pass@1 it added, in percentage
points, per compute-hour it cost. Returns "fall off" at the first step whose marginal return is
at most a quarter of the first step's (or not positive). The quarter is a rule of thumb, not a
statistic: the report prints the numbers next to it.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping, Sequence

from pydantic import Field

from sdk.eval.metrics import flag_counts
from sdk.eval.records import Comparison, Estimate, EvalRow
from sdk.types import Frozen

FALLOFF_RATIO = 0.25
_KIND_BY_STAGE = {"tasks": "data", "sft": "train", "rl": "train", "grpo": "train", "dpo": "train"}


class StageCost(Frozen):
    """What one stage of the run cost.

    Attributes:
        stage: e.g. ``tasks``, ``sft``, ``grpo``, ``eval_base``, ``eval_tuned``.
        kind: ``data`` (building task sets), ``train`` or ``eval``; training stages form the
            compute axis of the benefit curve.
        wall_s: wall-clock seconds; cpu_s: process CPU seconds (user + system);
            gpu_s: accelerator seconds (0 on CPU).
        tokens_generated: tokens sampled (rollouts, evaluation).
        tokens_trained: tokens that received a loss.
    """

    stage: str
    kind: Literal["data", "train", "eval"] = "train"
    wall_s: float = Field(0.0, ge=0)
    cpu_s: float = Field(0.0, ge=0)
    gpu_s: float = Field(0.0, ge=0)
    tokens_generated: int = Field(0, ge=0)
    tokens_trained: int = Field(0, ge=0)

    @property
    def compute_s(self) -> float:
        """Accelerator seconds when a GPU was used, otherwise CPU seconds."""
        return self.gpu_s if self.gpu_s > 0 else self.cpu_s


class Checkpoint(Frozen):
    """One point of the benefit curve.

    Attributes:
        label: ``base``, ``sft``, ``grpo-step-10``, ``tuned`` ...
        compute_s: cumulative training compute to reach it, seconds (see :attr:`StageCost.compute_s`).
        heldout_pass_at_1: its held-out pass@1 in [0, 1], ``None`` if not evaluated.
        flags: reward-hacking flags raised by its samples, ``{flag: samples}``.
    """

    label: str
    compute_s: float = Field(0.0, ge=0)
    heldout_pass_at_1: float | None = None
    flags: dict[str, int] = Field(default_factory=dict)


def stage_cost(stats: Mapping[str, Any], kind: str | None = None) -> StageCost:
    """A :class:`StageCost` from a plain mapping (e.g. the pipeline's ``StageStats`` as a dict).

    Keys used: ``stage`` (required), ``wall_s``, ``cpu_s``, ``gpu_s``, ``tokens_generated``,
    ``tokens_trained``; others are ignored. ``kind`` defaults from the stage name: ``tasks`` is
    data, ``sft``/``rl``/``grpo``/``dpo`` are training, anything else is evaluation.
    """
    keys = ("wall_s", "cpu_s", "gpu_s", "tokens_generated", "tokens_trained")
    name = str(stats["stage"])
    return StageCost(stage=name, kind=kind or _KIND_BY_STAGE.get(name, "eval"),
                     **{k: stats[k] for k in keys if stats.get(k) is not None})


def checkpoint_from_rows(label: str, rows: Sequence[EvalRow], compute_s: float) -> Checkpoint:
    """A checkpoint from one model's eval rows: held-out pass@1 (mean judged pass rate over
    held-out tasks with a judged sample) and its flag counts; ``compute_s`` as in :class:`Checkpoint`."""
    rates = [r.pass_rate for r in rows if r.split.value == "heldout" and r.pass_rate is not None]
    return Checkpoint(label=label, compute_s=compute_s, heldout_pass_at_1=sum(rates) / len(rates) if rates else None,
                      flags=flag_counts(rows))


def default_checkpoints(comparison: Comparison, costs: Sequence[StageCost],
                        flags: dict[str, dict[str, int]] | None = None) -> list[Checkpoint]:
    """Base at zero compute and tuned at all training compute, from the comparison's held-out slice."""
    held = comparison.by_split.get("heldout")
    b = held.base.get(1) if held else None
    t = held.tuned.get(1) if held else None
    train = sum(c.compute_s for c in costs if c.kind == "train")
    flags = flags or {}
    return [Checkpoint(label="base", compute_s=0.0, heldout_pass_at_1=b.value if b else None,
                       flags=flags.get("base", {})),
            Checkpoint(label="tuned", compute_s=train, heldout_pass_at_1=t.value if t else None,
                       flags=flags.get("tuned", {}))]


def marginal_returns(points: Sequence[Checkpoint]) -> list[dict]:
    """Segments between consecutive evaluated checkpoints.

    Returns:
        One dict per segment: ``from``, ``to``, ``gain_pp`` (percentage points of held-out pass@1),
        ``compute_s``, ``pp_per_hour`` (``None`` when the segment cost no compute).
    """
    pts = [p for p in points if p.heldout_pass_at_1 is not None]
    out = []
    for a, b in zip(pts, pts[1:]):
        gain = 100.0 * (b.heldout_pass_at_1 - a.heldout_pass_at_1)  # type: ignore[operator]
        dc = b.compute_s - a.compute_s
        out.append({"from": a.label, "to": b.label, "gain_pp": gain, "compute_s": dc,
                    "pp_per_hour": gain / (dc / 3600.0) if dc > 0 else None})
    return out


def falloff(segments: Sequence[dict]) -> str | None:
    """Label of the first checkpoint whose segment returns at most FALLOFF_RATIO of the first
    segment's pp/hour (or nothing positive); ``None`` when returns hold up."""
    rates = [s["pp_per_hour"] for s in segments]
    if not rates or rates[0] is None:
        return None
    first = rates[0]
    for seg, rate in zip(segments[1:], rates[1:]):
        if rate is None:
            continue
        if rate <= 0 or (first > 0 and rate <= FALLOFF_RATIO * first):
            return seg["to"]
    return None


def recommendation(gain: Estimate | None, regressions: int, segments: Sequence[dict],
                   falloff_at: str | None) -> str:
    """One or two sentences a platform team can act on (ship / review / not proven / do not ship)."""
    if gain is None:
        return "No held-out task was judged for both models: add held-out tasks before deciding."
    pp, lo, hi = 100 * gain.value, 100 * gain.low, 100 * gain.high
    ci = f"{pp:+.1f} pp (95% CI {lo:+.1f}..{hi:+.1f}, n={gain.n})"
    if gain.low > 0 and regressions == 0:
        text = f"Ship: held-out pass@1 rose {ci} with no held-out/OOD regressions."
    elif gain.low > 0:
        text = f"Review before shipping: held-out pass@1 rose {ci} but {regressions} held-out/OOD tasks regressed."
    elif gain.value > 0:
        text = (f"Not proven: held-out pass@1 changed {ci}; its interval reaches zero. "
                "Evaluate more held-out tasks or sample more per task.")
    else:
        text = f"Do not ship: held-out pass@1 changed {ci}."
    if falloff_at is not None:
        seg = next(s for s in segments if s["to"] == falloff_at)
        text += (f" Returns fall off at '{falloff_at}': it added {seg['gain_pp']:+.1f} pp for "
                 f"{seg['compute_s']:.0f} compute-s; stop at '{seg['from']}' next time.")
    return text


def knee(points: Sequence[Checkpoint], segments: Sequence[dict], falloff_at: str | None) -> dict[str, Any]:
    """Where marginal return falls off, in words: ``{"at": label | None, "points": n, "text": ...}``.

    ``at`` is the last checkpoint worth its compute: the start of the first segment that
    :func:`falloff` marks; None when returns hold up (or fewer than three evaluated points, which
    cannot show a knee).
    """
    n = sum(p.heldout_pass_at_1 is not None for p in points)
    if n < 3:
        return {"at": None, "points": n, "text": f"{n} evaluated point(s) cannot show where returns fall off; "
                "evaluate the SFT and RL-midway checkpoints too (eval.checkpoints, rl.eval_midway)."}
    rates = ", ".join(f"{s['from']}→{s['to']} {s['gain_pp']:+.1f} pp in {s['compute_s']:.0f} s" for s in segments)
    if falloff_at is None:
        return {"at": None, "points": n, "text": f"Returns hold up through '{segments[-1]['to']}' ({rates})."}
    seg = next(s for s in segments if s["to"] == falloff_at)
    return {"at": seg["from"], "points": n,
            "text": f"Marginal return falls off after '{seg['from']}': the next step to '{falloff_at}' added "
                    f"{seg['gain_pp']:+.1f} pp for {seg['compute_s']:.0f} compute-s ({rates})."}
