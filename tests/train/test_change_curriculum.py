"""A curriculum over context length for change tasks: ``order.curriculum: short_to_long`` puts the
tasks with the least ``git_history`` context first, for RL (:func:`grpo_items`) and SFT (:func:`sft_items`)."""

from __future__ import annotations

from connectors.history.context import build_context
from sdk.tasks.change import ChangeVerifier
from sdk.tasks.records import Message, Source, Task
from sdk.train.config import OrderConfig
from sdk.train.curriculum import schedule
from sdk.train.grpo import grpo_items
from sdk.train.sft import sft_items

FILES = {f"pkg/m{i}.py": f"def f{i}(x):\n    return x + {i}\n" * 40 for i in range(4)}


def _task(budget: int, n: int) -> Task:
    ctx = build_context("retrieved", FILES, ["pkg/m0.py"], "f0 f1 f2 f3 x return", budget, ".py")
    verifier = ChangeVerifier(files=FILES, tests={"tests/test_m.py": "def test_a():\n    pass\n"},
                              fail_to_pass=("tests/test_m.py::test_a",))
    return Task(domain="py/changes", prompt=(Message(role="user", content=f"Change {n}.\n\n{ctx.text}"),),
                verifier=verifier, reference="--- a/pkg/m0.py\n+++ b/pkg/m0.py\n", metadata=ctx.metadata("retrieved"),
                source=Source(connector="git_history", uri="r", locator=str(n)))


def test_short_to_long_orders_change_tasks_by_context_length():
    tasks = [_task(b, n) for n, b in enumerate([3000, 0, 800, 6000, 200, 1500])]
    chars = [t.metadata["context_chars"] for t in tasks]
    assert len(set(chars)) == len(chars) and chars[1] == 0
    want = sorted(range(len(tasks)), key=lambda i: chars[i])
    cfg = OrderConfig(curriculum="short_to_long", phases=len(tasks))   # one task a phase: a strict order
    for items in (grpo_items(tasks), sft_items(tasks, [])):
        assert schedule(items, cfg, seed=3) == want
    two = schedule(grpo_items(tasks), OrderConfig(curriculum="short_to_long", phases=2), seed=3)
    assert set(two[:3]) == set(want[:3])   # the shorter-context half first, shuffled inside the phase
