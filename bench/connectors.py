"""Benchmark (issue 4): the pytest connector on a real PyPI package, validated in the sandbox.

    .venv/bin/python bench/connectors.py                      # more-itertools 10.7.0 sdist
    .venv/bin/python bench/connectors.py --repo PATH --package NAME [--limit N]

Why more-itertools: pure Python with no dependencies, its sdist ships its whole unittest/pytest
suite (670 tests), and its ~160 public top-level functions are small, documented and tested
one by one — the shape of a company's utility library.

A task is *validated* when its reference passes its visible and hidden tests and both broken
bodies (``return None`` and ``raise NotImplementedError``) fail the visible tests. Prints
counts, tasks built per second, tasks validated per second, and the share of wall time spent
in the sandbox.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from connectors.suites.pysource import replace_body  # noqa: E402
from connectors.suites.pytest_suite import PytestSuiteSource  # noqa: E402
from sdk.config import SandboxConfig  # noqa: E402
from sdk.sandbox import make_sandbox  # noqa: E402
from sdk.sandbox.contract import ExecRequest, Limits  # noqa: E402

DEFAULT = ("more-itertools", "10.7.0", "more_itertools")
BROKEN = ("return None", "raise NotImplementedError")


def fetch_sdist(name: str, version: str, cache: Path) -> Path:
    """Download and unpack ``name==version``'s sdist once; returns the unpacked folder."""
    folder = cache / f"{name.replace('-', '_')}-{version}"
    if folder.is_dir():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                    f"{name}=={version}", "-d", str(cache)], check=True, capture_output=True)
    archive = next(cache.glob(f"{name.replace('-', '_')}-{version}.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(cache, filter="data")
    return folder


def _requests(task) -> list[tuple[str, ExecRequest]]:
    v = task.verifier

    def req(solution: str, tests: dict[str, str]) -> ExecRequest:
        return ExecRequest(framework=v.framework, solution=solution, tests=tests, files=v.files,
                           target_path=v.target_path, entry_point=v.entry_point, prelude=v.prelude,
                           limits=Limits(timeout_s=v.timeout_s))

    out = [("reference", req(task.reference, v.tests))]
    if v.hidden_tests:
        out.append(("hidden", req(task.reference, v.hidden_tests)))
    out += [(body, req(replace_body(task.reference, v.entry_point, body), v.tests)) for body in BROKEN]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, help="repository folder (default: download more-itertools)")
    ap.add_argument("--package", default=DEFAULT[2])
    ap.add_argument("--tests", default="tests")
    ap.add_argument("--limit", type=int, default=0, help="validate only the first N tasks (0: all)")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache/tuneloop/bench")
    ap.add_argument("--verbose", action="store_true", help="list every task that did not validate, with why")
    args = ap.parse_args()
    repo = args.repo or fetch_sdist(DEFAULT[0], DEFAULT[1], args.cache)

    t0 = time.perf_counter()
    result = PytestSuiteSource({"path": str(repo), "package": args.package, "tests": args.tests}, repo, "bench").read()
    build_s = time.perf_counter() - t0
    tasks = result.tasks[: args.limit or None]
    sandbox = make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=args.concurrency))
    plan = [(task.id, label, req) for task in tasks for label, req in _requests(task)]
    t1 = time.perf_counter()
    results = sandbox.run([req for _, _, req in plan])
    sandbox_s = time.perf_counter() - t1
    sandbox.close()

    verdicts: dict[str, list[str]] = {}
    for (tid, label, _), res in zip(plan, results):
        want_pass = label in ("reference", "hidden")
        if res.status.is_infrastructure or res.all_passed != want_pass:
            failed = [t.name for t in res.tests if t.outcome != "passed"][:3]
            verdict = "passed" if res.all_passed else f"{res.status.value} {failed or res.detail[:120]}"
            verdicts.setdefault(tid, []).append(f"{label}: {verdict}")
    validated = [t for t in tasks if t.id not in verdicts]
    why = Counter(p.split(":")[0] + (" passes" if p.split(":")[0] in BROKEN else " fails")
                  for ps in verdicts.values() for p in ps[:1])
    total_s = time.perf_counter() - t0
    print(f"repository            {repo}")
    print(f"source counts         {dict(sorted(result.counts.items()))}")
    print(f"tasks built           {len(result.tasks)} in {build_s:.1f} s ({len(result.tasks) / build_s:.2f} tasks/s)")
    print(f"tasks validated       {len(validated)} of {len(tasks)} checked; not validated: {dict(why)}")
    print(f"sandbox executions    {len(plan)} in {sandbox_s:.1f} s ({len(plan) / sandbox_s:.2f}/s)")
    print(f"validated per second  {len(validated) / total_s:.3f} (build + validation, {total_s:.1f} s wall)")
    print(f"sandbox share of time {sandbox_s / total_s:.2f}")
    if args.verbose:
        for task in tasks:
            for problem in verdicts.get(task.id, []):
                print(f"  not validated: {task.source.locator}: {problem}")


if __name__ == "__main__":
    main()
