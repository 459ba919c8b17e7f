"""The reward record: what one completion earned, why, and what looked suspicious.

A :class:`RewardResult` crosses from the reward stage to training (its ``score``) and to the
report (its ``components``, ``status`` and ``flags``). ``score is None`` means *not judged*:
the sandbox or a toolchain failed, so the sample must be masked (and may be retried), never
scored 0 and never passed (shared/DESIGN.md, field cases R1/R2).
"""

from __future__ import annotations

from enum import Enum

from pydantic import Field

from sdk.sandbox.contract import ExecStatus
from sdk.types import Frozen


class RewardStatus(str, Enum):
    """Why a completion got its score.

    ``INFRASTRUCTURE``, ``NOT_VERIFIABLE``, ``ERROR``, ``VERIFIER_ERROR`` and
    ``VERIFIER_TIMEOUT`` carry ``score=None``; every other status carries a number. ``SUSPECTED_HACKING`` always carries 0. ``JUDGED_UNVERIFIED``
    carries a judge's number and the flag ``not_verifiable``: reports must keep it apart from
    verified rewards.
    """

    OK = "ok"                                  # every test (visible and hidden) passed / answer matched
    FAILED = "failed"                          # ran, some tests failed or the answer did not match
    NO_CODE = "no_code"                        # nothing that looks like code in the completion
    COMPILE_ERROR = "compile_error"            # did not parse / compile
    RUNTIME_ERROR = "runtime_error"            # crashed before the tests could report
    TIMEOUT = "timeout"
    RESOURCE_LIMIT = "resource_limit"          # memory or output limit hit
    INFRASTRUCTURE = "infrastructure"          # sandbox / toolchain failure: not the model's fault
    SUSPECTED_HACKING = "suspected_hacking"    # an integrity detector fired: score forced to 0
    NOT_VERIFIABLE = "not_verifiable"          # the task carries no automatic verifier
    JUDGED_UNVERIFIED = "judged_unverified"    # scored by a reward model / LLM judge: not verifiable
    ERROR = "error"                            # the reward code itself raised on this sample
    VERIFIER_ERROR = "verifier_error"          # an answer check / judge raised or its worker died (W1)
    VERIFIER_TIMEOUT = "verifier_timeout"      # an answer check / judge passed its deadline: worker killed (W2)

    @property
    def judged(self) -> bool:
        """True when the status carries a numeric score."""
        return self not in (RewardStatus.INFRASTRUCTURE, RewardStatus.NOT_VERIFIABLE, RewardStatus.ERROR,
                            RewardStatus.VERIFIER_ERROR, RewardStatus.VERIFIER_TIMEOUT)


class RewardResult(Frozen):
    """One completion's reward.

    Attributes:
        score: the reward, normally in [0, 1] (penalties may take it below 0, down to
            ``-regression_penalty``); ``None`` when the completion could not be judged.
        components: every tier and metric by name, e.g. ``parses``, ``runs``,
            ``visible_frac``, ``hidden_frac``, ``hidden_gap``, ``regressions``; metrics that do
            not enter the score are logged here too (a metric is a reward with weight 0).
        status: see :class:`RewardStatus`.
        flags: names of the integrity detectors that fired (see ``sdk.rewards.integrity``).
        exec_status: the sandbox status of the main run, when one ran.
        detail: a human-readable reason (error text, what fired).
        fail_to_pass_failing: change tasks (:mod:`sdk.rewards.change`): the fail-to-pass test ids
            the verdict does not count as passing (all of them when the tests did not run: the diff
            is missing, does not apply, or tampers); empty for other tasks.
        pass_to_pass_broken: change tasks: the pass-to-pass test ids the change broke; empty when
            none broke, the tests did not run, or the task is of another kind.
    """

    score: float | None
    components: dict[str, float] = Field(default_factory=dict)
    status: RewardStatus
    flags: tuple[str, ...] = ()
    exec_status: ExecStatus | None = None
    detail: str = ""
    fail_to_pass_failing: tuple[str, ...] = ()
    pass_to_pass_broken: tuple[str, ...] = ()

    def __hash__(self) -> int:  # dict field is not hashable by default
        return hash((self.score, self.status, self.flags, tuple(sorted(self.components.items()))))

    @classmethod
    def not_judged(cls, status: RewardStatus, detail: str, exec_status: ExecStatus | None = None) -> RewardResult:
        """A ``score=None`` result (infrastructure, not verifiable, reward error)."""
        if status.judged:
            raise ValueError(f"status {status.value!r} needs a score; use it only for unjudged statuses")
        return cls(score=None, status=status, exec_status=exec_status, detail=detail)
