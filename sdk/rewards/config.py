"""The ``reward:`` section of the run configuration (re-exported by :mod:`sdk.config`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sdk.types import ConfigModel as _Cfg


class RewardConfig(_Cfg):
    """Tiered reward weights (see ``sdk.rewards``). The score is in [0, 1] before penalties."""

    parses: float = Field(0.05, ge=0, description="weight for code that parses/compiles")
    runs: float = Field(0.05, ge=0, description="weight for code that runs without crashing")
    tests: float = Field(0.9, ge=0, description="weight for the fraction of tests passed")
    regression_penalty: float = Field(0.5, ge=0, description="subtracted per fraction of previously passing tests broken; applies where a baseline run exists (repair tasks), not to a task's own tests")
    side_effect_penalty: float = Field(0.25, ge=0, description="subtracted when the solution writes files, deletes, "
                                       "spawns processes or opens sockets (see sdk.rewards.integrity)")
    format: float = Field(0.0, ge=0, description="weight of the answer-format reward (answer tasks: the answer was given "
                          "in a marker the prompt asks for); 0 = logged in the components only (a metric), never scored")
    answer_markers: tuple[Literal["tag", "boxed", "line"], ...] = Field(
        ("tag", "boxed", "line"), description="how a final answer is marked, in order of preference: `tag` "
        "(<answer>...</answer>, see answer_tags), `boxed` (\\boxed{...}), `line` (an `Answer:` / `Final answer:` line)")
    answer_tags: tuple[str, ...] = Field(("answer", "final_answer"), description="tag names understood by the `tag` marker")
    answer_fallback: Literal["auto", "last_line", "none"] = Field(
        "auto", description="when no marker is found: `last_line` takes the last non-empty line, `none` finds no "
        "answer, `auto` takes the last line only when the prompt shows no answer marker (R6)")
    verifier_timeout_s: float = Field(10.0, gt=0, description="seconds one answer check or judge call may take in its "
                                      "worker process before the worker is killed (status verifier_timeout, reward None)")
    verifier_workers: int = Field(8, ge=1, description="worker processes that run answer checks and judges")
