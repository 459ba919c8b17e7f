"""The Ray backend runs the same requests on a local Ray cluster with the same verdicts."""

import os

import pytest

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
ray = pytest.importorskip("ray", reason="the ray extra is not installed")

from sdk.config import SandboxConfig  # noqa: E402
from sdk.sandbox import make_sandbox  # noqa: E402
from sdk.sandbox.contract import ExecRequest, ExecStatus, Limits  # noqa: E402

TESTS = {"test_add.py": "from solution import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"}


@pytest.fixture(scope="module")
def ray_box():
    box = make_sandbox(SandboxConfig(backend="ray", ray={"local_cpus": 2}))
    yield box
    ray.shutdown()


def test_same_verdicts_as_local_and_duplicates_run_once(ray_box):
    good = ExecRequest(solution="def add(a, b):\n    return a + b\n", tests=TESTS)
    bad = ExecRequest(solution="def add(a, b):\n    return a - b\n", tests=TESTS)
    loop = ExecRequest(solution="def add(a, b):\n    while True:\n        pass\n", tests=TESTS,
                       limits=Limits(timeout_s=2))
    results = ray_box.run([good, bad, good, loop])
    assert [r.status for r in results] == [ExecStatus.OK, ExecStatus.FAILED, ExecStatus.OK, ExecStatus.TIMEOUT]
    assert results[0].tests[0].outcome == "passed"


@pytest.mark.slow  # Ray Client waits 30 s before giving up on an address
def test_unreachable_cluster_is_a_clear_error(monkeypatch):
    from sdk.errors import SandboxError
    from sdk.sandbox.ray_backend import RaySandbox

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    with pytest.raises(SandboxError) as err:
        RaySandbox(SandboxConfig(backend="ray", ray={"address": "ray://127.0.0.1:1"}))
    assert "ray.address" in err.value.fix
