"""Trial (issue 17): the ``git_history`` source on a real repository's history.

    .venv/bin/python bench/git_history.py --repo /path/to/clone-or-mirror [--max-commits 60] [--reruns 1]

The repository is a clone obtained outside the project (e.g. a bare mirror of
more-itertools/more-itertools); it is never committed. Prints commits scanned, commits skipped
(no source / no test change), tasks built (their references validated by the change reward),
quarantined by reason, the split (older train, newer held out), fail-to-pass / pass-to-pass
sizes and the time taken: the whole mining run, and per scanned commit. The baseline is one
bare ``pytest`` run of the newest task's test modules at its commit, in a subprocess outside
the sandbox with plugin autoloading off (what a developer would time), printed next to the mining cost per candidate commit.

With ``--run-dir RUN`` it mines nothing and reads a finished ``tuneloop run`` of change tasks on the
repository (``examples/change_tasks/config.yaml`` with ``run_dir=RUN``): the same figures from the
source's counts and the saved task set, each stage's time (``state/<stage>.json``; the tasks stage
is the mining plus the pipeline's own reference validation) and the change completion rate, base
vs tuned, of ``report.json``: the end-to-end check (mining -> SFT -> RL -> eval) on one history.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from connectors.history.source import GitHistorySource
from sdk.config import SandboxConfig
from sdk.sandbox import make_sandbox
from sdk.tasks.records import Split
from sdk.tasks.taskset import TaskSet


def bare_pytest(repo: Path, sha: str, test_files: list[str], go: bool = False) -> float:
    """Seconds for one plain pytest run of ``test_files`` at commit ``sha``, outside the sandbox (Go:
    one ``go test`` of their packages, with a fresh build cache as the sandbox has)."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["git", "clone", "-q", str(repo), tmp + "/w"], check=True)
        subprocess.run(["git", "-C", tmp + "/w", "checkout", "-q", sha], check=True)
        start = time.perf_counter()
        if go:
            pkgs = sorted({"./" + f.rpartition("/")[0] if "/" in f else "." for f in test_files})
            subprocess.run(["go", "test", "-count=1", *pkgs], cwd=tmp + "/w", capture_output=True, timeout=600,
                           check=False, env={**os.environ, "GOCACHE": tmp + "/cache", "GOPATH": tmp + "/gopath",
                                             "GOPROXY": "off", "GOFLAGS": "-mod=mod"})
        else:
            subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *test_files],
                           cwd=tmp + "/w", capture_output=True, timeout=600, check=False,
                           env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
        return time.perf_counter() - start


def _record_shadow_flags() -> list[tuple[str, list[str], str]]:
    """Wrap ``sdk.rewards.change.calibrate`` (the source imports it at call time) so that every flagged
    reference result it sees, before and during calibration, is recorded: ``(commit, flags, detail)``."""
    from sdk.rewards import change

    seen: list[tuple[str, list[str], str]] = []
    real = change.calibrate

    def note(tasks, results):
        for task, res in zip(tasks, results):
            if res.flags:
                seen.append((task.source.commit if task.source else "?", list(res.flags), res.detail or ""))

    def calibrate(tasks, results, rescore, rounds=4):
        note(tasks, results)

        def again(ts):
            out = rescore(ts)
            note(ts, out)
            return out
        return real(tasks, results, again, rounds)
    change.calibrate = calibrate
    return seen


def print_mining(repo: Path, counts: dict, tasks: list, quarantined: list, took: float | None) -> int:
    """Print commits scanned / skipped, tasks built, quarantined by reason, the split and sizes;
    with ``took`` (seconds) the mining time per commit. Returns the number of candidate commits."""
    scanned = counts["commits_scanned"]
    candidates = scanned - counts["skipped_no_source_change"] - counts["skipped_no_test_change"]
    print(f"repository: {repo}")
    print(f"commits scanned: {scanned}  skipped (no source change): {counts['skipped_no_source_change']}  "
          f"skipped (no test change): {counts['skipped_no_test_change']}  candidates: {candidates}")
    print(f"tasks built (references validated): {len(tasks)}  quarantined: {len(quarantined)}")
    for reason, n in Counter(q.reason.split(":")[0] for q in quarantined).most_common():
        example = next(q.reason for q in quarantined if q.reason.startswith(reason))
        shas = [q.source.commit[:10] for q in quarantined if q.reason.startswith(reason) and q.source][:4]
        print(f"  {reason}: {n}   e.g. {example[:160]!r}  commits {' '.join(shas)}")
    for q in quarantined:
        if q.reason.startswith("reference_fails"):
            print(f"  reference_fails {q.source.commit[:10] if q.source else '?'}: {q.reason[:400]!r}")
    calibrated = [t for t in tasks if getattr(t.verifier, "shadow_exempt", ())]
    print(f"references calibrated (shadow_exempt non-empty): {len(calibrated)} of {len(tasks)}"
          + "".join(f"\n  {t.source.commit[:10]}: {', '.join(t.verifier.shadow_exempt)}" for t in calibrated))
    splits = Counter(t.split for t in tasks)
    print(f"split: train {splits[Split.TRAIN]}, held-out {splits[Split.HELDOUT]} (held-out commits are the newest)")
    if tasks:
        f2p = [t.metadata["fail_to_pass"] for t in tasks]
        p2p = [t.metadata["pass_to_pass"] for t in tasks]
        files = [len(t.metadata["source_files"]) for t in tasks]
        print(f"fail-to-pass per task: median {statistics.median(f2p)}, max {max(f2p)}; pass-to-pass per task: "
              f"median {statistics.median(p2p)}; source files changed per task: median {statistics.median(files)}, "
              f"multi-file tasks {sum(n > 1 for n in files)}")
    if took is not None:
        print(f"time: {took:.1f} s in all, {took / max(scanned, 1):.2f} s per scanned commit, "
              f"{took / max(candidates, 1):.2f} s per candidate commit")
    return candidates


def print_run(run_dir: Path) -> None:
    """Print a finished change-task ``tuneloop run`` (see the module docstring).

    Raises:
        FileNotFoundError: the run has no ``tasks/counts.json`` (its tasks stage did not finish).
    """
    counts = json.loads((run_dir / "tasks" / "counts.json").read_text())
    source = next(v for v in counts["sources"].values() if "commits_scanned" in v)
    taskset = TaskSet.load(run_dir / "tasks" / "tasks.jsonl")
    config = json.loads((run_dir / "config.json").read_text())
    print_mining(Path(config["sources"][0]["options"]["path"]), source, list(taskset.tasks),
                 list(taskset.quarantined), None)
    total = 0.0
    for stage in ("tasks", "sft", "rl", "eval", "report"):
        marker = run_dir / "state" / f"{stage}.json"
        stats = json.loads(marker.read_text()).get("stats", {}) if marker.is_file() else None
        total += stats.get("wall_s", 0.0) if stats else 0.0
        print(f"stage {stage}: " + (f"{stats.get('wall_s', 0.0):.1f} s wall, {stats.get('cpu_s', 0.0):.1f} s CPU"
                                    if stats else "did not finish"))
    print(f"stages in all: {total:.1f} s")
    report = run_dir / "report.json"
    section = json.loads(report.read_text()).get("change_completion") if report.is_file() else None
    for split, rates in (section or {}).get("by_split", {}).items():
        print(f"change completion ({split}, {rates['n_tasks']} tasks): base {rates['base']['value']:.3f}, "
              f"tuned {rates['tuned']['value']:.3f}, tuned - base {rates['delta']['value']:+.3f} "
              f"[{rates['delta']['low']:+.3f}, {rates['delta']['high']:+.3f}]")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", type=Path)
    ap.add_argument("--run-dir", type=Path, default=None)
    ap.add_argument("--max-commits", type=int, default=60)
    ap.add_argument("--reruns", type=int, default=1)
    ap.add_argument("--max-tasks", type=int, default=None)
    ap.add_argument("--concurrency", type=int, default=2)
    args = ap.parse_args()
    if args.run_dir is not None:
        print_run(args.run_dir)
        return
    if args.repo is None:
        ap.error("--repo is required (or --run-dir)")
    sandbox = make_sandbox(SandboxConfig(concurrency=args.concurrency, cache=False))
    opts = {"path": str(args.repo.resolve()), "max_commits": args.max_commits, "reruns": args.reruns,
            "max_tasks": args.max_tasks}
    flagged = _record_shadow_flags()
    progress = logging.getLogger("tuneloop.progress")   # one line per candidate commit, on stderr
    progress.addHandler(logging.StreamHandler(sys.stderr))
    progress.setLevel(logging.INFO)
    start = time.perf_counter()
    try:
        result = GitHistorySource(opts, Path.cwd(), "python/history", sandbox=sandbox).read()
    finally:
        sandbox.close()
    took = time.perf_counter() - start
    candidates = print_mining(args.repo, result.counts, result.tasks, result.quarantined, took)
    print(f"shadow flags on references before calibration: {len(flagged)}"
          + "".join(f"\n  {sha[:10]} {flags}: {detail[:300]!r}" for sha, flags, detail in flagged))
    if result.tasks:
        last = result.tasks[-1]
        go = last.verifier.language.value == "go"
        base = bare_pytest(args.repo, last.source.commit, sorted(last.verifier.tests), go)
        print(f"baseline: one bare {'go test' if go else 'pytest'} run of the newest task's test modules at its "
              f"commit, outside the sandbox: "
              f"{base:.2f} s; mining cost per candidate / baseline = {took / max(candidates, 1) / base:.1f}x "
              f"(mining runs 2 x (1 + reruns) sandboxed runs per candidate, plus the reference's validation)")


if __name__ == "__main__":
    main()
