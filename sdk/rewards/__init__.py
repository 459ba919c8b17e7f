"""Rewards: read the code out of a completion, run it against pristine tests in the sandbox,
score it by tiers, catch reward hacking, and aggregate safely for GRPO.

Modules: :mod:`~sdk.rewards.result` (the record), :mod:`~sdk.rewards.extract` (completions to
code), :mod:`~sdk.rewards.answers` (answer-match verifiers), :mod:`~sdk.rewards.tiered` (the
tiered reward), :mod:`~sdk.rewards.integrity` and :mod:`~sdk.rewards.runtime_checks` (static and
run-time hacking detectors), :mod:`~sdk.rewards.aggregate`
(None masking, group advantages), :mod:`~sdk.rewards.trl` (the TRL reward function),
:mod:`~sdk.rewards.reward_log` (the per-sample log, summarised per checkpoint for the report).
"""

from sdk.rewards.aggregate import Advantages, call_safely, check_rewards, combine, group_advantages
from sdk.rewards.answers import score_answer
from sdk.rewards.extract import Extraction, ExtractStatus, extract_code
from sdk.rewards.integrity import HACKING_FLAGS, PENALTY_FLAGS, Finding, scan_solution
from sdk.rewards.result import RewardResult, RewardStatus
from sdk.rewards.reward_log import read_reward_log, summarize_by_step
from sdk.rewards.tiered import build_request, score_batch, score_completion
from sdk.rewards.trl import SandboxReward, completion_text

__all__ = [
    "HACKING_FLAGS",
    "PENALTY_FLAGS",
    "Advantages",
    "ExtractStatus",
    "Extraction",
    "Finding",
    "RewardResult",
    "RewardStatus",
    "SandboxReward",
    "build_request",
    "call_safely",
    "check_rewards",
    "combine",
    "completion_text",
    "extract_code",
    "group_advantages",
    "read_reward_log",
    "scan_solution",
    "score_answer",
    "score_batch",
    "score_completion",
    "summarize_by_step",
]
