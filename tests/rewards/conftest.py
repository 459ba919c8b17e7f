"""Fixtures for the reward tests."""

from __future__ import annotations

import pytest

from .helpers import FakeSandbox


@pytest.fixture
def fake() -> FakeSandbox:
    return FakeSandbox()


@pytest.fixture(scope="session")
def real_sandbox():
    """The real sandbox (bubblewrap when it works here, else the process backend)."""
    sandbox_mod = pytest.importorskip("sdk.sandbox")
    from sdk.config import SandboxConfig
    from sdk.errors import SandboxError

    try:
        sandbox = sandbox_mod.make_sandbox(SandboxConfig(allow_unisolated=True, cache=False))
    except SandboxError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"no sandbox here: {exc}")
    yield sandbox
    sandbox.close()
