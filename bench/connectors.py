"""Benchmark (issues 4 and 13): the pytest connector on real PyPI sdists, validated in the sandbox.

    .venv/bin/python bench/connectors.py                          # the five default sdists
    .venv/bin/python bench/connectors.py --only toolz humanize    # some of them (or isodate, inflection)
    .venv/bin/python bench/connectors.py --repo PATH --package NAME [--tests DIR] [--limit N]

The sdists (downloaded once with ``pip download --no-deps --no-binary :all:`` into ``--cache``,
outside the repository; skipped with a message when the index is unreachable):

* **more-itertools** 10.7.0: pure Python, ~160 documented top-level functions, unittest-style
  ``TestCase`` classes and module-level tests in the same files (the mixed-units crash);
* **toolz** 1.0.0: tests inside the package (``toolz/tests``), ``class TestDefaultDict(TestDict)``
  (the inherited-class case) and the alias package ``tlz``;
* **humanize** 4.12.3: ``src/`` layout, tests need the third-party helper ``freezegun`` (found in
  the ``tests`` extra, installed into the cached test-dependency environment), and
  ``importlib.metadata.version("humanize")`` at import;
* **attrs** 25.3.0: two top-level packages (``attr`` and ``attrs``), ``src/`` layout, hypothesis;
* **tabulate** 0.10.0: one module (``tabulate/__init__.py``) whose functions return its own
  namedtuples (``TableFormat``, ``Line``) and ``str`` subclass (``JupyterHTMLStr``), tests that
  catch its warnings (``pytest.warns``) and pass their own dataclasses and namedtuples.

A task is *validated* when its reference passes its visible and hidden tests and the stub
(``raise NotImplementedError``) fails (:func:`sdk.tasks.validate.validate_tasks`, what the
tasks stage runs); then the verifier-strength check (:mod:`sdk.tasks.strength`) runs its mutants
when that module is present. Printed per sdist: functions with covering tests, tasks validated
(share of those functions), quarantined by reason, mean mutation score, context coverage
(``metadata["context"]["coverage"]`` of :mod:`connectors.suites.context`; ``n/a`` without it), task-set bytes (tasks, quarantine
and snapshots as :meth:`TaskSet.save` writes them) and repository source bytes (every ``.py``
file of the sdist). Targets (issue 13): no crash, validated >= 85% of functions with covering
tests, task-set bytes <= 3 x source bytes + 20 KB per task.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from connectors.suites.pytest_suite import PytestSuiteSource  # noqa: E402
from sdk.config import SandboxConfig  # noqa: E402
from sdk.sandbox import make_sandbox  # noqa: E402
from sdk.sandbox.contract import Limits  # noqa: E402
from sdk.tasks.taskset import TaskSet  # noqa: E402
from sdk.tasks.validate import validate_tasks  # noqa: E402

try:
    from sdk.tasks.strength import check_strength  # noqa: E402 - item 3, the other half of issue 13
except ImportError:  # pragma: no cover - before it exists
    check_strength = None

SDISTS = {  # name: (version, package, tests folder)
    "more-itertools": ("10.7.0", "more_itertools", "tests"),
    "toolz": ("1.0.0", "toolz", "toolz/tests"),
    "humanize": ("4.12.3", "humanize", "tests"),
    "attrs": ("25.3.0", "attr", "tests"),
    "tabulate": ("0.10.0", "tabulate", "test"),
}
EXTRA = {  # the new-user trial's sdists (issue 13), run only when named with --only
    "isodate": ("0.7.2", "isodate", "tests"),      # src/ layout; tzinfo values and Duration arithmetic cross
    "inflection": ("0.5.1", "inflection", "."),    # tests at the root; a test changes UNCOUNTABLES
}


def fetch_sdist(name: str, version: str, cache: Path) -> Path | None:
    """Download and unpack ``name==version``'s sdist once; the unpacked folder, or None offline."""
    stem = f"{name.replace('-', '_')}-{version}"
    folder = cache / stem
    if folder.is_dir():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    # --no-binary for this package only: its build backend (hatchling, setuptools-scm...) comes as
    # wheels; with ``:all:`` pip builds every build dependency from source first (minutes)
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name,
                           f"{name}=={version}", "-d", str(cache)], capture_output=True, text=True)
    archive = next(iter(cache.glob(f"{stem}.tar.gz")), None)
    if proc.returncode != 0 or archive is None:
        print(f"skipped {name}=={version}: could not download it ({(proc.stderr or proc.stdout).strip()[-200:]})")
        return None
    with tarfile.open(archive) as tar:
        tar.extractall(cache, filter="data")
    return folder


def source_bytes(repo: Path) -> int:
    """Bytes of every ``.py`` file in the repository."""
    return sum(p.stat().st_size for p in repo.rglob("*.py") if "__pycache__" not in p.parts)


def measure(repo: Path, package: str, tests: str, args: argparse.Namespace) -> dict:
    """Build, validate and size one repository's task set; the row of the table."""
    t0 = time.perf_counter()
    result = PytestSuiteSource({"path": str(repo), "package": package, "tests": tests}, repo, "bench").read()
    tasks = list(result.tasks[: args.limit or None])
    build_s = time.perf_counter() - t0
    sandbox = make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=args.concurrency))
    limits = Limits()
    try:
        valid, bad = validate_tasks(tasks, sandbox, limits)
        if check_strength is not None and valid and not args.no_mutants:
            valid, weak = check_strength(valid, sandbox, limits, max_reference_mutants=args.reference_mutants)
            bad += weak
    finally:
        sandbox.close()
    quarantined = list(result.quarantined) + bad
    with tempfile.TemporaryDirectory() as tmp:
        path = TaskSet(valid, quarantined).save(Path(tmp) / "tasks.jsonl")
        size = sum(p.stat().st_size for p in path.parent.rglob("*") if p.is_file())
    scores = [t.mutation_score for t in valid if getattr(t, "mutation_score", None) is not None]
    cover = [t.metadata["context"]["coverage"] for t in valid if "coverage" in (t.metadata.get("context") or {})]
    covered = result.counts.get("functions_with_tests", 0)
    return {"repo": repo.name, "covered": covered, "built": len(tasks), "validated": len(valid),
            "share": len(valid) / covered if covered else 0.0,
            "quarantined": Counter(q.reason.split(":")[0] for q in quarantined),
            "mutation": f"{sum(scores) / len(scores):.3f}" if scores else "n/a",
            "context": f"{sum(cover) / len(cover):.3f}" if cover else "n/a",
            "bytes": size, "source": source_bytes(repo), "s": time.perf_counter() - t0, "build_s": build_s,
            "why": [(q.source.locator if q.source else "?", q.reason[:160]) for q in bad]}


def report(row: dict, verbose: bool) -> None:
    """Print one repository's block and whether it meets the targets."""
    budget = 3 * row["source"] + 20_000 * row["validated"]
    ok_share, ok_size = row["share"] >= 0.85, row["bytes"] <= budget
    print(f"== {row['repo']}  ({row['s']:.0f} s, of which build {row['build_s']:.0f} s)")
    print(f"   functions with covering tests  {row['covered']}")
    print(f"   tasks built / validated        {row['built']} / {row['validated']} "
          f"({row['share']:.0%} of covered; target >= 85%: {'ok' if ok_share else 'MISSED'})")
    print(f"   quarantined by reason          {dict(sorted(row['quarantined'].items()))}")
    print(f"   mutation score (mean)          {row['mutation']}")
    print(f"   context coverage (mean)        {row['context']}")
    print(f"   task-set bytes                 {row['bytes']:,} (budget 3 x source + 20 KB/task = {budget:,}: "
          f"{'ok' if ok_size else 'MISSED'})")
    print(f"   repository source bytes        {row['source']:,}")
    if verbose:
        for locator, reason in row["why"]:
            print(f"     not validated: {locator}: {reason}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, help="a repository folder instead of the default sdists")
    ap.add_argument("--package", help="import name of the package (with --repo)")
    ap.add_argument("--tests", default="tests")
    ap.add_argument("--only", nargs="*", choices=sorted({**SDISTS, **EXTRA}), help="run only these default sdists")
    ap.add_argument("--limit", type=int, default=0, help="validate only the first N tasks per repository (0: all)")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--reference-mutants", type=int, default=2, help="reference mutants per task (strength check)")
    ap.add_argument("--no-mutants", action="store_true", help="skip the verifier-strength check")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache/tuneloop/bench")
    ap.add_argument("--verbose", action="store_true", help="list every task that did not validate, with why")
    args = ap.parse_args()
    if args.repo:
        jobs = [(args.repo, args.package or args.repo.name, args.tests)]
    else:
        jobs = []
        for name in args.only or SDISTS:
            version, package, tests = {**SDISTS, **EXTRA}[name]
            folder = fetch_sdist(name, version, args.cache)
            if folder is not None:
                jobs.append((folder, package, tests))
    for repo, package, tests in jobs:
        report(measure(repo, package, tests, args), args.verbose)


if __name__ == "__main__":
    main()
