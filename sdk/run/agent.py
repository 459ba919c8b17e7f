"""The run's change agent (``tools.change_agent``, issue 17), shared by the sft, rl and eval stages."""

from __future__ import annotations

from sdk.run.context import StageContext


def change_agent(ctx: StageContext):
    """The :class:`~sdk.rollout.change_agent.ChangeAgent` over the run's change tasks (``tools.change_agent``):
    per-rollout toolboxes whose ``run_tests`` uses the run's sandbox; the rl and eval stages share it."""
    from sdk.rollout.change_agent import ChangeAgent

    tc = ctx.cfg.tools
    return ChangeAgent(ctx.inputs.taskset().tasks, ctx.need_sandbox(), tc.change_agent.tools, tc.max_calls,
                       tc.max_result_chars, ctx.cfg.sandbox.limits)
