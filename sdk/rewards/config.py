"""The ``reward:`` section of the run configuration (re-exported by :mod:`sdk.config`)."""

from __future__ import annotations

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
