"""What the run-time layers of change tasks cost (issue 14, ``sdk/sandbox/_runner/tl_rguard.py``, and
the shadow comparisons of ``tl_shadow.py``).

Runs one pytest session of a call-dense test (a loop in the test's own frame: ``==`` on a
repository function's result, ``in``, ``pytest.raises``) in a fresh interpreter with the witness
armed as ``tl_repo`` arms it, once without the layers (the trace function of before: no opcode
events, no probes, no stand-ins, no shadow) and once with them, alternating, and prints the per-mode median
time of the test's call phase (where the layers act; the session's setup is the same in both)
and the ratio layers / without. Not a test: a figure for the README.

    nice -n 10 .venv/bin/python bench/repo_guard.py --loops 20000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

RUNNER = Path(__file__).resolve().parent.parent / "sdk" / "sandbox" / "_runner"
TEST = """import pytest
from calc import mul, Box


def test_dense():
    for i in range({loops}):
        assert mul(i, 2) == i * 2
        r = mul(i, 3)
        assert r in (i * 3, -1)
        assert Box(i) == Box(i)
    with pytest.raises(ZeroDivisionError):
        mul(1, 0) / 0
"""
CALC = """def mul(a, b):
    return a * b


class Box:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, Box) and other.v == self.v
"""
CHILD = """import os, sys, time
sys.path[:0] = [{runner!r}, {root!r}]
import pytest, tl_witness, tl_rguard
folder, layers = {folder!r}, {layers}
helpers = None
if layers:   # the shadow comparisons, installed as tl_repo installs them (before the fingerprints)
    import tl_proof, tl_shadow
    helpers = tl_shadow.install(folder, tl_proof.libraries({root!r}, folder, sys.path), {runner!r} + os.sep)
codes = tl_witness.test_codes(folder, ["test_dense.py"])
marks = tl_rguard.marks(folder, ["test_dense.py"], tl_rguard.names()) if layers else None
if layers:
    tl_rguard.signals()
tl_witness.arm(os.open(os.devnull, os.O_WRONLY), "n" * 32, codes, {root!r}, marks, helpers)
tracer = tl_witness.tracer(folder, {{"test_dense"}})


class Plug:
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item):
        undo = tl_rguard.hide() if layers else (lambda: None)
        t = time.perf_counter()
        sys.settrace(tracer)
        try:
            return (yield)
        finally:
            sys.settrace(None)
            CALL.append(time.perf_counter() - t)
            undo()


CALL = []


t = time.perf_counter()
rc = pytest.main(["-q", "-p", "no:cacheprovider", os.path.join(folder, "test_dense.py")], plugins=[Plug()])
print("TIME", sum(CALL), int(rc), time.perf_counter() - t)
"""


def run_once(root: str, folder: str, layers: bool) -> float:
    """Seconds of the test's call phase in a fresh interpreter; raises RuntimeError if the test failed."""
    code = CHILD.format(runner=str(RUNNER), root=root, folder=folder, layers=layers)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=root)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("TIME")), None)
    if line is None or line.split()[2] != "0":
        raise RuntimeError(f"the session failed (layers={layers}):\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return float(line.split()[1])


def main() -> None:
    """Print the median session time without and with the layers, and their ratio."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loops", type=int, default=20000, help="iterations of the test's loop (default 20000)")
    ap.add_argument("--repeat", type=int, default=3, help="sessions per mode, alternating (default 3)")
    args = ap.parse_args()
    if args.loops < 1 or args.repeat < 1:
        ap.error("--loops and --repeat must be at least 1")
    with tempfile.TemporaryDirectory() as root:
        folder = os.path.join(root, "tests")
        os.makedirs(os.path.join(root, "calc"))
        os.makedirs(folder)
        Path(root, "calc", "__init__.py").write_text(CALC)
        Path(folder, "test_dense.py").write_text(TEST.format(loops=args.loops))
        times: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.repeat):
            for layers in (False, True):
                times[layers].append(run_once(root, folder, layers))
    off, on = statistics.median(times[False]), statistics.median(times[True])
    print(f"loops {args.loops}: without layers {off:.3f} s, with layers {on:.3f} s (medians of {args.repeat}); "
          f"ratio {on / off:.2f}; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
