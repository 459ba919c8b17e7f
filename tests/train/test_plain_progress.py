"""The plain progress lines (logs, CI): a line when training starts, naming the step count, so a slow first
GRPO step is not mistaken for a hang (new-user trial: 22 silent minutes), then one per logged step."""
import logging
from types import SimpleNamespace

from sdk.train.common import PlainProgressCallback


def test_training_start_and_each_logged_step_print_a_line(caplog):
    cb = PlainProgressCallback("rl", every_s=0.0)
    state = SimpleNamespace(max_steps=4, global_step=0)
    with caplog.at_level(logging.INFO, logger="tuneloop.progress"):
        cb.on_train_begin(None, state, None)
        state.global_step = 1
        cb.on_log(None, state, None, logs={"reward": 0.25})
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("rl: 4 steps;") and "first may take minutes" in lines[0]
    assert lines[1].startswith("rl: step 1/4 reward 0.25") and "s left" in lines[1]
