"""What guarding a handed class's ``__globals__`` costs (issue 14: ``_runner/tl_rmods.handed``).

In one process, without the sandbox or the witness's hook: a fake test module (``--classes`` handed
classes of ``--methods`` methods each) under a tests folder, and (1) :func:`tl_rmods.withhold` + ``undo``
per test call, with the handed classes' functions swapped (after) and with ``handed`` made a no-op
(before), interleaved; (2) a call of a handed method that loads two builtins and one handed global
(a module), through the copy with the guarded view and through the original. Prints the median
microseconds of each and the ratios after / before. Not a test: a figure for the docstring.

    nice -n 10 .venv/bin/python bench/rmods_globals.py [--classes 5] [--methods 4] [--reps 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path

RUNNER = Path(__file__).resolve().parent.parent / "sdk" / "sandbox" / "_runner"


def _module(folder: str, classes: int, methods: int) -> types.ModuleType:
    """A module whose file lies in ``folder``: ``classes`` data-free classes of ``methods`` methods."""
    mod = types.ModuleType("tlbench_test_mod")
    mod.__file__ = os.path.join(folder, "test_mod.py")
    body = "import os\nEXPECTED = 6\n" + "".join(
        f"class Helper{c}:\n" + "".join(f"    def m{m}(self, x):\n        return len(str(x)) + abs(x) + len(os.sep)\n"
                                        for m in range(methods)) for c in range(classes))
    exec(compile(body, mod.__file__, "exec"), vars(mod))   # noqa: S102 - our own fixed text
    return mod


def _per_call(rmods, folder: str, reps: int) -> float:
    """Median microseconds of one ``withhold(folder)`` + ``undo()``."""
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        rmods.withhold(folder)()
        times.append((time.perf_counter() - t) * 1e6)
    return statistics.median(times)


def _calls(fn, reps: int) -> float:
    """Median microseconds of 100 calls of ``fn(3)``."""
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(100):
            fn(3)
        times.append((time.perf_counter() - t) * 1e6)
    return statistics.median(times)


def main() -> None:
    """Parse the arguments, measure, print."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--classes", type=int, default=5)
    ap.add_argument("--methods", type=int, default=4)
    ap.add_argument("--reps", type=int, default=2000)
    args = ap.parse_args()
    sys.path.insert(0, str(RUNNER))
    import tl_rmods
    with tempfile.TemporaryDirectory() as tmp:
        folder = tmp + os.sep
        mod = _module(folder, args.classes, args.methods)
        sys.modules[mod.__name__] = mod
        try:
            real_handed, before, after = tl_rmods.handed, [], []
            for _ in range(5):
                tl_rmods.handed = lambda *a: []
                before.append(_per_call(tl_rmods, folder, args.reps // 5))
                tl_rmods.handed = real_handed
                after.append(_per_call(tl_rmods, folder, args.reps // 5))
            orig = vars(mod)["Helper0"].m0
            undo = tl_rmods.withhold(folder)
            copy = vars(mod)["Helper0"].m0
            assert copy is not orig and copy.__globals__ is not vars(mod)
            inst = vars(mod)["Helper0"]()
            plain, guarded = _calls(types.MethodType(orig, inst), args.reps), _calls(types.MethodType(copy, inst), args.reps)
            undo()
        finally:
            sys.modules.pop(mod.__name__, None)
    b, a = statistics.median(before), statistics.median(after)
    print(f"withhold+undo per call ({args.classes} classes x {args.methods} methods): before {b:.1f} us, "
          f"after {a:.1f} us, after/before {a / b:.2f}, +{a - b:.1f} us")
    print(f"100 calls of a handed method (2 builtins, 1 module global): original {plain:.1f} us, "
          f"copy {guarded:.1f} us, copy/original {guarded / plain:.2f}")


if __name__ == "__main__":
    main()
