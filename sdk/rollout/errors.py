"""The rollout boundary's error: a tool, a chat template or a retriever is misconfigured.

A *call* that goes wrong during a rollout (bad arguments, a tool raising) is never an error:
it is answered to the model and recorded (field case T3). :class:`ToolError` is for setup
problems the user must fix before training.
"""

from __future__ import annotations

from sdk.errors import TuneloopError


class ToolError(TuneloopError):
    """A tool, tool set, chat template or retriever cannot be used as configured."""
