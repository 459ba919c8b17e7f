"""Reference-derived time limits."""

from __future__ import annotations

import pytest

from sdk.errors import SandboxError
from sdk.sandbox import Limits
from sdk.sandbox.timing import calibrate, derive_limits

from .conftest import ADD_OK, py


def test_derive_limits_scales_and_floors():
    lim = derive_limits(Limits(memory_mb=300), wall_s=0.4, cpu_s=0.3, factor=5)
    assert lim.cpu_s == 2 and lim.timeout_s == pytest.approx(3.0) and lim.memory_mb == 300
    tiny = derive_limits(Limits(), wall_s=0.001, cpu_s=0.001)
    assert tiny.cpu_s == 1 and tiny.timeout_s >= 1.0
    with pytest.raises(ValueError):
        derive_limits(Limits(), wall_s=1, cpu_s=1, factor=0.5)


def test_calibrate_runs_past_the_cache_and_rejects_failing_references(process_sandbox):
    lim = calibrate(process_sandbox, py(ADD_OK), repeats=2)
    assert 1 <= lim.cpu_s <= 20 and lim.timeout_s >= 1.0
    with pytest.raises(SandboxError):
        calibrate(process_sandbox, py("def add(a, b):\n    return 0\n"), repeats=1)
