"""One error type per boundary, each carrying the fix.

Every error tuneloop raises on purpose derives from :class:`TuneloopError` and carries a
``fix`` sentence. The CLI prints ``what`` and ``fix`` on one screen and exits non-zero,
without a traceback (set ``TUNELOOP_DEBUG=1`` to see one).
"""

from __future__ import annotations


class TuneloopError(Exception):
    """Base class: ``what`` went wrong and how to ``fix`` it.

    Args:
        what: one sentence naming the bad input and why it is bad.
        fix: one sentence telling the user what to change.
    """

    exit_code = 2

    def __init__(self, what: str, fix: str = "") -> None:
        self.what = what
        self.fix = fix
        super().__init__(f"{what}\n  fix: {fix}" if fix else what)


class ConfigError(TuneloopError):
    """The YAML config is missing, malformed or inconsistent."""


class SourceError(TuneloopError):
    """A task source (test suite, benchmark file, SQL table) cannot be read."""


class SandboxError(TuneloopError):
    """The sandbox itself cannot run (not the code inside it failing)."""


class RewardError(TuneloopError):
    """A reward function is misconfigured (not one sample failing to score)."""


class ModelError(TuneloopError):
    """A model or tokenizer cannot be found, fetched or loaded."""


class GateError(TuneloopError):
    """The regression gate refused to promote the adapter."""

    exit_code = 3
