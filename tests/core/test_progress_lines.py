"""Where stderr is not a terminal, a stage's rich bar renders nothing; its progress must still reach
the ``tuneloop.progress`` logger (new-user trial, funcy 2.1: ``tasks build > log`` was silent for
16 minutes between reading the source and the summary)."""

from __future__ import annotations

import io
import logging

from rich.console import Console

from sdk.run.context import _LoggedProgress


def test_bar_logs_each_tenth():
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda r: records.append(r.getMessage())
    logger = logging.getLogger("tuneloop.progress")
    old = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        console = Console(file=io.StringIO(), force_terminal=False)
        with _LoggedProgress(console=console) as bar:
            bar.add_task("validating references", total=40)
            for _ in range(40):
                bar.advance(bar.task_ids[0], 1)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    assert len(records) == 10
    assert records[0].startswith("validating references: 4/40 (10 %")
    assert records[-1].startswith("validating references: 40/40 (100 %")
