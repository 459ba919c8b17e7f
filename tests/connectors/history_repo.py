"""A small git repository built in a temporary folder, for the ``git_history`` tests.

Commits, oldest first (each with a fixed date, so the history is the same on every machine):

1. ``root``: ``calc`` with ``add``; ``tests/test_ops.py`` (``test_add``), ``tests/test_text.py``.
2. ``good``: "Add mul" — ``calc/ops.py`` and ``calc/__init__.py`` (two files) and ``test_mul``.
3. ``flaky``: "Add a clock" — ``calc/clock.py`` and ``tests/test_clock.py::test_flaky_clock``
   (made flaky by :class:`FlakySandbox`).
4. ``broken``: "Add fmt" — its new test module imports a package that is not installed.
5. ``docs``: README only.
6. ``newer``: "div raises ValueError on zero" — ``calc/ops.py`` and ``test_div``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from sdk.sandbox.contract import ExecResult, Sandbox, TestOutcome

OPS = "def add(a, b):\n    return a + b\n"
OPS_MUL = OPS + "\n\ndef mul(a, b):\n    return a * b\n"
OPS_DIV = OPS_MUL + "\n\ndef div(a, b):\n    if b == 0:\n        raise ValueError('division by zero')\n    return a / b\n"
TEST_OPS = "from calc import ops\n\n\ndef test_add():\n    assert ops.add(2, 3) == 5\n"
TEST_MUL = TEST_OPS + "\n\ndef test_mul():\n    from calc import mul\n    assert mul(2, 3) == 6\n"
TEST_DIV = TEST_MUL + ("\n\ndef test_div():\n    import pytest\n    assert ops.div(6, 3) == 2\n"
                       "    with pytest.raises(ValueError):\n        ops.div(1, 0)\n")
TEST_TEXT = "from calc import ops\n\n\ndef test_concat():\n    assert ops.add('a', 'b') == 'ab'\n"


def git(repo: Path, *args: str, date: str = "2024-01-01T00:00:00Z") -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_AUTHOR_DATE": date,
           "GIT_COMMITTER_DATE": date, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def commit(repo: Path, files: dict[str, str], message: str, day: int) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message, date=f"2024-01-{day:02d}T12:00:00Z")
    return git(repo, "rev-parse", "HEAD").strip()


def build(repo: Path) -> dict[str, str]:
    """Build the repository; ``name -> commit sha``."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    shas = {"root": commit(repo, {"calc/__init__.py": "from calc.ops import add\n", "calc/ops.py": OPS,
                                  "tests/test_ops.py": TEST_OPS, "tests/test_text.py": TEST_TEXT,
                                  "README.md": "calc\n"}, "Initial calc", 1)}
    shas["good"] = commit(repo, {"calc/ops.py": OPS_MUL, "calc/__init__.py": "from calc.ops import add, mul\n",
                                 "tests/test_ops.py": TEST_MUL}, "Add mul\n\nmul(a, b) multiplies; export it from calc.", 2)
    shas["flaky"] = commit(repo, {"calc/clock.py": "def now_ms():\n    return 1\n",
                                  "tests/test_clock.py": "from calc import clock\n\n\ndef test_flaky_clock():\n"
                                                         "    assert clock.now_ms() >= 0\n"}, "Add a clock", 3)
    shas["broken"] = commit(repo, {"calc/fmt.py": "def fmt(x):\n    return str(x)\n",
                                   "tests/test_fmt.py": "import not_a_real_package_xyz\nfrom calc.fmt import fmt\n\n\n"
                                                        "def test_fmt():\n    assert fmt(1) == '1'\n"}, "Add fmt", 4)
    shas["docs"] = commit(repo, {"README.md": "calc: add, mul\n"}, "Docs", 5)
    shas["newer"] = commit(repo, {"calc/ops.py": OPS_DIV, "tests/test_ops.py": TEST_DIV},
                           "div raises ValueError on zero", 6)
    return shas


class FlakySandbox(Sandbox):
    """The real sandbox, except that a test whose name holds ``flaky`` fails on every other run
    that reports it (a deterministic stand-in for a test that flips between runs)."""

    def __init__(self, inner: Sandbox) -> None:
        self.inner, self.seen = inner, 0

    def run(self, requests):
        out = []
        for res in self.inner.run(requests):
            if any("flaky" in t.name for t in res.tests):
                self.seen += 1
                if self.seen % 2 == 0:
                    res = res.model_copy(update={"tests": tuple(
                        TestOutcome(name=t.name, outcome="failed", message="flipped") if "flaky" in t.name else t
                        for t in res.tests)})
            out.append(res)
        return out

    def run_one(self, request) -> ExecResult:
        return self.run([request])[0]

    def close(self) -> None:
        self.inner.close()


def module_sandbox():
    """Generator for a module-scoped fixture: one real sandbox (isolated where this machine allows,
    cache off, concurrency 2), closed after the module; skips the module where none can start."""
    import pytest

    from sdk.config import SandboxConfig
    from sdk.errors import SandboxError
    from sdk.sandbox import make_sandbox

    try:
        sb = make_sandbox(SandboxConfig(allow_unisolated=True, cache=False, concurrency=2))
    except SandboxError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"no sandbox here: {exc}")
    yield sb
    sb.close()
