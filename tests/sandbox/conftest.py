"""Shared sandbox fixtures: one process-backend sandbox and (when it works here) one bubblewrap
sandbox per test session, concurrency 2, cache off so every test really runs its code."""

from __future__ import annotations

import pytest

from sdk.config import SandboxConfig
from sdk.sandbox import ExecRequest, Limits, make_sandbox

FAST = Limits(timeout_s=30, cpu_s=5, memory_mb=512)  # generous wall clock: the machine may be loaded

ADD_TEST = "from solution import add\n\ndef test_small():\n    assert add(1, 2) == 3\n\ndef test_neg():\n    assert add(-1, 1) == 0\n"
ADD_OK = "def add(a, b):\n    return a + b\n"


def py(solution: str, tests: dict[str, str] | None = None, **kw) -> ExecRequest:
    """A pytest request against the `add` tests unless ``tests`` is given."""
    kw.setdefault("limits", FAST)
    return ExecRequest(solution=solution, tests=tests or {"test_add.py": ADD_TEST}, **kw)


@pytest.fixture(scope="session")
def process_sandbox():
    sb = make_sandbox(SandboxConfig(backend="process", allow_unisolated=True, concurrency=2, cache=False))
    yield sb
    sb.close()


@pytest.fixture(params=["process", "bubblewrap"])
def sandbox(request):
    """Every backend that works here (bubblewrap joins when available)."""
    return request.getfixturevalue(f"{request.param}_sandbox")


def bubblewrap_or_skip(concurrency: int):
    """A bubblewrap sandbox with ``concurrency`` slots (no result cache); skips the test where bubblewrap
    cannot run here."""
    try:
        return make_sandbox(SandboxConfig(backend="bubblewrap", concurrency=concurrency, cache=False))
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"bubblewrap unavailable here: {exc}")


@pytest.fixture(scope="session")
def bubblewrap_sandbox():
    sb = bubblewrap_or_skip(2)
    yield sb
    sb.close()
