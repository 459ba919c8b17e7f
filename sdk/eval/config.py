"""The ``eval:`` and ``gate:`` sections of the run configuration (re-exported by :mod:`sdk.config`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sdk.types import ConfigModel as _Cfg


class EvalConfig(_Cfg):
    """Evaluation of base and tuned model."""

    splits: list[Literal["train", "heldout", "ood"]] = Field(default_factory=lambda: ["heldout", "ood"])
    n_samples: int = Field(1, gt=0, description="completions per task; pass@k for k <= n uses the unbiased estimator")
    temperature: float = Field(0.0, ge=0, description="0: greedy")
    max_new_tokens: int = Field(192, gt=0)
    batch_size: int = Field(8, gt=0)
    limit_per_split: int | None = Field(None, gt=0, description="evaluate at most this many tasks per split")
    checkpoints: bool = Field(True, description="also evaluate the SFT-only adapter (when RL trained on top) and the "
                              "RL midway checkpoint (rl.eval_midway): points of the benefit curve and the RL-vs-SFT "
                              "comparison; costs one evaluation pass each")
    checkpoint_splits: list[Literal["train", "heldout", "ood"]] = Field(
        default_factory=lambda: ["heldout"], description="splits the SFT and RL-midway checkpoints are evaluated on "
        "(the benefit curve and RL-vs-SFT read held-out); base and tuned get every split of `splits`")
    self_test: bool = Field(True, description="score the tasks' references through the eval path (the grader's "
                            "self-test, field case E1); sandbox only, no generation")
    select: Literal["validation", "last"] = Field(
        "validation", description="the adapter the run ships as `tuned` when RL trained on SFT: `validation` scores "
        "the SFT-only, RL-midway and RL-end adapters greedily on the validation split (tasks.validation_fraction; "
        "held-out tasks are never read) and ships the best: higher pass@1, then higher mean reward, then less "
        "training compute; no validation task: the RL-end adapter, said so. `last`: always the newest adapter")
    retry_with_feedback: bool = Field(False, description="give every failed sample one second attempt with the "
                                      "failing visible tests' output (pass@1 after one retry, reported apart); "
                                      "costs a generation per failed sample")


class GateConfig(_Cfg):
    """Regression gate: the run exits non-zero and the adapter is not promotable if it fails."""

    enabled: bool = False
    max_regressions: int = Field(0, ge=0, description="held-out+OOD tasks base solved and tuned fails")
    min_heldout_gain: float = Field(0.0, description="tuned minus base held-out pass@1, absolute")
