"""Warning filters for our stages, free of torch so that a tasks-only run never imports it.

:func:`sdk.train.common.quiet_libraries` adds the libraries' own verbosity settings on top; it
imports transformers and datasets (seconds of CPU), so the pipeline calls it only before a stage
that trains, generates or reports, and calls :func:`quiet_warnings` alone before the tasks stage.
"""

from __future__ import annotations

import warnings


def quiet_warnings() -> None:
    """Ignore the warnings that are noise to a user: FutureWarnings, SyntaxWarnings from parsing
    model-written or repository code, and the UserWarnings of trl and peft."""
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=SyntaxWarning)  # from parsing model-written code
    warnings.filterwarnings("ignore", category=UserWarning, module="trl")
    warnings.filterwarnings("ignore", category=UserWarning, module="peft")
