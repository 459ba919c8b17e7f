"""Rewards: read the code out of a completion, run it against pristine tests in the sandbox,
score it by tiers, catch reward hacking, and aggregate safely for GRPO.

Modules: :mod:`~sdk.rewards.result` (the record), :mod:`~sdk.rewards.extract` (completions to
code), :mod:`~sdk.rewards.answers` (answer-match verifiers), :mod:`~sdk.rewards.tiered` (the
tiered reward), :mod:`~sdk.rewards.integrity` and :mod:`~sdk.rewards.runtime_checks` (static and
run-time hacking detectors), :mod:`~sdk.rewards.aggregate`
(None masking, group advantages), :mod:`~sdk.rewards.trl` (the TRL reward function),
:mod:`~sdk.rewards.reward_log` (the per-sample log, summarised per checkpoint for the report).

What the reward covers, and what it does not (issue 14; the one place this is said here)
----------------------------------------------------------------------------------------
Covered:

- Counting: every test id the pristine files define is counted exactly once
  (:func:`~sdk.rewards.runtime_checks.count_results`); a missing, extra or duplicated result
  is a failure, and ``missing_test_results`` / ``forged_results`` / ``duplicate_results``
  force the score to 0 (extra results from an ``atexit`` handler or a thread gain nothing).
- Hidden tests: a hidden run that times out or hits a limit fails every hidden test; all
  visible tests passing against no hidden pass (hanging on hidden inputs included) is
  ``hardcoded_outputs``.
- Verdict channels of other languages (:mod:`sdk.sandbox.languages`): C/C++ results come from
  fd 3 with a nonce read after constructors, through direct syscalls (no libc interposition,
  stdout never read); JS runs with ``assert``/``node:test``/``require`` frozen by a preload from
  the read-only task folder and the JUnit report on the reporter's stdout (no file to forge);
  Go, Rust and Java results are checked against the declared tests by the counting above.
- Static scans (:mod:`~sdk.rewards.integrity`) as a further line in every language: exit
  calls, runner tampering (constructors, libc-name definitions, ``TestMain``/``init``, assert
  or ``node:test`` patching, shutdown hooks, reflection, report paths, ``/proc``).
- R5: a crash in every test earns no ``runs`` credit (status ``runtime_error``).

Not covered (known gaps):

- Java: the JUnit XML report is written by the JVM that runs the candidate; a shutdown hook
  overwriting it with exactly the expected ids is stopped by the static scan only.
- Go/Rust: results are parsed from the test binary's output; a forged line for a test that
  also reports is a duplicate, but a ``TestMain`` that prints passes and never runs the tests
  is stopped by the static scan only (the run-time layer then counts its lines as results).
- Code inside one C/C++ test's own child can still find that test's token in its memory;
  a JS test file could forge node's internal child-to-runner protocol (``v8`` serialisation).
- An honest solution too slow for every hidden input is flagged ``hardcoded_outputs``.
- R6 (tagged answers, a format reward), P3 for non-Python kinds and W1/W2 (verifier time
  limits by killing a process, a start-up self-test) are not done yet (issue 14 item 3).
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
