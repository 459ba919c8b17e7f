"""The ``git_history`` source: a repository's commits → change tasks (issue 17: Python + pytest, Go + go test).

For each commit on the first-parent line of ``rev`` (oldest first; a merge stands for its
branch) that changes both source and tests:

1. the task's prompt is the commit message plus context within ``context_chars`` (``context``:
   the touched source files at the parent, "oracle"; the parent's files retrieved by BM25 against
   the message; or none: :mod:`connectors.history.context`); the model answers
   with a unified diff, several files allowed;
2. the verifier (:class:`~sdk.tasks.change.ChangeVerifier`) is found by running the commit's
   tests in the sandbox at the parent and at the commit (:mod:`connectors.history.mine`):
   fail-to-pass tests (at least one), pass-to-pass tests (a deterministic sample within
   ``max_pass_to_pass``), flaky tests left out;
3. the reference is the commit's own diff of its source files; with ``validate_references`` it is scored
   by the change reward (:mod:`sdk.rewards.change`) and must earn full marks.

Commits that change no source or no test are skipped (counted); a commit whose tests cannot run
is quarantined with the reason (``tests_cannot_run``, ``no_fail_to_pass``,
``flaky_fail_to_pass``, ``snapshot_too_large``, ``reference_fails``).

Go (``language: go``, or ``auto`` with a root ``go.mod`` at ``rev``): ``.go`` files are source,
``*_test.go`` and ``testdata/`` test-side; the tests run are whole packages (the touched test
files' and touched source folders' packages, then packages that import a touched one, within
``max_test_files``), all in one ``go test ./...`` run per state (:mod:`sdk.sandbox.languages.gorepo`);
the same fail-to-pass / pass-to-pass rules apply to ``<file>_test.go::TestName`` ids.

Time-honest split: the newest ``heldout_fraction`` of the tasks (by the line's order) are
held out, the older ones are for training, and the source marks its splits as fixed
(:attr:`~sdk.sources.SourceResult.splits_fixed`) so the pipeline keeps them. A task holds
only its parent's files and its own commit's tests: nothing from its future.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Literal

from pydantic import Field

from connectors.history import reasons
from connectors.history.context import build_context, mean_recall_pct
from connectors.history.gitrepo import Commit, GitRepo
from connectors.history.mine import changed_tests, discover, run_states
from sdk.sandbox.contract import Limits, Sandbox
from sdk.sources import SourceOptions, SourceResult, TaskSource
from sdk.tasks.change import (
    GO_TEST_GLOBS,
    RUNNER_GLOBS,
    TEST_GLOBS,
    ChangeVerifier,
    is_test_module,
    matches,
)
from sdk.tasks.records import Message, Quarantined, Source, Split, Task
from sdk.types import Framework, Language

log = logging.getLogger("tuneloop.connectors.git_history")
PROMPT = ("Repository `{name}` at commit {parent}. Make the change this commit message describes:\n\n{message}\n\n"
          "{context}Reply with the change as a unified diff (`git diff` format: `--- a/path`, `+++ b/path`, hunks "
          "with context lines) in one ```diff block. Several files may change. Edits to tests or CI configuration "
          "are ignored.")
ASK = {"diff": PROMPT.rsplit("{context}", 1)[1],
       "tools": "Make the change with the tools (read_file, search, list_dir, edit_file, run_tests); stop calling "
                "tools when it is done. Several files may change. Edits to tests or CI configuration are refused."}


class GitHistoryOptions(SourceOptions):
    """Options of the ``git_history`` source.

    Attributes:
        path: the git repository (a clone or a bare mirror), relative to the config file.
        rev: the revision whose first-parent line is walked.
        max_commits: how many of the newest commits on that line are scanned.
        max_tasks: stop once this many tasks are built (None: no limit).
        heldout_fraction: share of the tasks, the newest, that are held out (time-honest split).
        reruns: extra runs of each state to find flaky tests (0: one run each).
        max_pass_to_pass: pass-to-pass tests kept per task (a deterministic sample).
        max_test_files: test modules run per commit: the ones it touches, then others that
            name a touched module.
        max_file_kb: larger files are left out of the snapshot.
        max_snapshot_kb: a commit whose source snapshot is larger is quarantined.
        exclude: globs of paths left out of the snapshot (documentation, assets).
        language: ``python``, ``go``, or ``auto`` (Go when ``rev`` has a root ``go.mod``).
        test_globs / runner_globs: test-side paths (None: the language's defaults,
            :data:`~sdk.tasks.change.TEST_GLOBS` or :data:`~sdk.tasks.change.GO_TEST_GLOBS`) and CI /
            runner configuration.
        context: the prompt's context (:mod:`connectors.history.context`): ``oracle`` (the touched
            source files at the parent), ``retrieved`` (the parent's source files ranked against the
            commit message by BM25 or ``retriever``), ``none``.
        retriever: ``package.module:factory`` of a company's own retriever for ``context: retrieved``
            (``factory(files=...)`` returns a langchain-core ``BaseRetriever``; default built-in BM25).
        context_chars: budget, in characters, of the context shown in the prompt (0: none).
        context_chunk_chars: ``context: retrieved`` with the built-in BM25 ranks chunks of the files of
            about this many characters, cut at blank lines (0: whole files).
        answer: ``diff`` (the prompt asks for a unified diff) or ``tools`` (it asks for the change made with
            the change agent's tools, ``tools.change_agent``).
        suite_timeout_s: wall-clock limit of one mining run, seconds.
        test_timeout_s: the verifier's limit for one run, seconds.
        memory_mb: memory limit of each run, MiB.
        requirements: pip requirements the tests import (installed by ``sdk.sandbox.deps``).
        validate_references: score each reference with the change reward; it must earn full marks.
        backend, allow_unisolated, concurrency: the sandbox used for mining (as ``sandbox:``).
    """

    path: str
    rev: str = "HEAD"
    max_commits: int = Field(200, ge=1)
    max_tasks: int | None = Field(None, ge=1)
    heldout_fraction: float = Field(0.3, ge=0.0, lt=1.0)
    reruns: int = Field(1, ge=0, le=10)
    max_pass_to_pass: int = Field(20, ge=0)
    max_test_files: int = Field(6, ge=1)
    max_file_kb: int = Field(256, ge=1)
    max_snapshot_kb: int = Field(8192, ge=1)
    exclude: list[str] = Field(default_factory=lambda: ["docs/*", "doc/*", "*.png", "*.jpg", "*.svg", "*.ico"])
    language: Literal["auto", "python", "go"] = "auto"
    test_globs: list[str] | None = None
    runner_globs: list[str] = Field(default_factory=lambda: list(RUNNER_GLOBS))
    context: Literal["oracle", "retrieved", "none"] = "oracle"
    retriever: str | None = None
    context_chars: int = Field(12000, ge=0)
    context_chunk_chars: int = Field(800, ge=0)
    answer: Literal["diff", "tools"] = "diff"
    suite_timeout_s: float = Field(120.0, gt=0)
    test_timeout_s: float = Field(60.0, gt=0)
    memory_mb: int = Field(2048, ge=256)
    requirements: list[str] = Field(default_factory=list)
    validate_references: bool = True
    backend: Literal["auto", "bubblewrap", "process", "ray"] = "auto"
    allow_unisolated: bool = False
    concurrency: int = Field(0, ge=0)


class GitHistorySource(TaskSource):
    """A git repository's history → change tasks (see the module docstring).

    Args:
        sandbox: run the tests here instead of a sandbox made from the options (tests, benches).
    Raises (from :meth:`read`):
        SourceError: the path is not a git repository, git is missing, or ``rev`` is unknown.
    """

    Options = GitHistoryOptions
    name = "git_history"

    def __init__(self, options, base_dir: Path, domain: str, sandbox: Sandbox | None = None) -> None:
        super().__init__(options, base_dir, domain)
        self._sandbox = sandbox

    def _load(self) -> SourceResult:
        opts: GitHistoryOptions = self.options  # type: ignore[assignment]
        repo = GitRepo(self.resolve(opts.path))
        sandbox, own = self._sandbox, self._sandbox is None
        if own:
            from sdk.sandbox import make_sandbox
            from sdk.sandbox.config import SandboxConfig
            sandbox = make_sandbox(SandboxConfig(backend=opts.backend, allow_unisolated=opts.allow_unisolated,
                                                 concurrency=opts.concurrency, cache=False))
        try:
            result = _Miner(self, repo, sandbox).mine()
        finally:
            if own:
                sandbox.close()
        return result


class _Miner:
    """One pass over the history (state kept between the steps of :meth:`mine`)."""

    def __init__(self, src: GitHistorySource, repo: GitRepo, sandbox: Sandbox) -> None:
        self.src, self.repo, self.sandbox = src, repo, sandbox
        self._changed: set[str] = set()
        self._left_out: set[str] = set()   # code files of this commit's snapshots too large or not UTF-8
        self.opts: GitHistoryOptions = src.options  # type: ignore[assignment]
        go = self.opts.language == "go" or (self.opts.language == "auto" and repo.has_file(self.opts.rev, "go.mod"))
        self.language = Language.GO if go else Language.PYTHON
        globs = self.opts.test_globs if self.opts.test_globs is not None else (GO_TEST_GLOBS if go else TEST_GLOBS)
        self.tests_g, self.runner_g = tuple(globs), tuple(self.opts.runner_globs)
        self.ext = ".go" if go else ".py"
        self.result = SourceResult(splits_fixed=True)
        self.counts = {"commits_scanned": 0, "skipped_no_source_change": 0, "skipped_no_test_change": 0}
        self.limits = Limits(timeout_s=self.opts.suite_timeout_s, cpu_s=int(self.opts.suite_timeout_s) + 1,
                             memory_mb=self.opts.memory_mb, processes=128, output_bytes=1 << 20)

    def mine(self) -> SourceResult:
        """Scan, build, validate and split; counts in :attr:`SourceResult.counts`."""
        tasks: list[Task] = []
        commits, start = self.repo.commits(self.opts.rev, self.opts.max_commits), time.perf_counter()
        for n, commit in enumerate(commits, 1):
            if self.opts.max_tasks is not None and len(tasks) >= self.opts.max_tasks:
                break
            self.counts["commits_scanned"] += 1
            held = len(self.result.quarantined)
            task = self._commit(commit)
            if task is not None:
                tasks.append(task)
            if task is not None or len(self.result.quarantined) > held:
                outcome = "task" if task else self.result.quarantined[-1].reason.split(":")[0]
                reasons.note(n, len(commits), commit.sha, outcome, len(tasks), len(self.result.quarantined),
                             time.perf_counter() - start)
        if self.opts.validate_references and tasks:
            tasks = self._validate(tasks)
        self.result.tasks = time_split(tasks, self.opts.heldout_fraction)
        recall = mean_recall_pct([t.metadata.get("context_recall") for t in self.result.tasks])
        if recall is not None:
            self.counts["context_recall_mean_pct"] = recall
        by_reason: dict[str, int] = {}
        for q in self.result.quarantined:
            key = "quarantined_" + q.reason.split(":")[0]
            by_reason[key] = by_reason.get(key, 0) + 1
        self.result.counts = {**self.counts, "tasks": len(self.result.tasks),
                              "quarantined": len(self.result.quarantined), **dict(sorted(by_reason.items()))}
        return self.result

    def _kind(self, path: str) -> str:
        if matches(path, self.runner_g):
            return "runner"
        if matches(path, self.tests_g):
            return "test"
        return "source" if path.endswith(self.ext) else "other"

    def _quarantine(self, commit: Commit, reason: str) -> None:
        self.result.quarantined.append(Quarantined(reason=reason, source=self._source(commit)))

    def _source(self, commit: Commit) -> Source:
        return Source(connector="git_history", uri=str(self.repo.path), locator=commit.sha[:12], commit=commit.sha)

    def _commit(self, commit: Commit) -> Task | None:
        changes = self.repo.changes(commit.parent, commit.sha)
        kinds = {c.path: self._kind(c.path) for c in changes} | {c.old_path: self._kind(c.old_path)
                                                                 for c in changes if c.old_path}
        self._changed = set(kinds)
        self._gone = {c.path for c in changes if c.status == "D"} | {c.old_path for c in changes if c.status == "R"}
        source_paths = sorted(p for p, k in kinds.items() if k == "source")
        test_paths = sorted(p for p, k in kinds.items() if k == "test")
        if not source_paths:
            self.counts["skipped_no_source_change"] += 1
            return None
        if not test_paths:
            self.counts["skipped_no_test_change"] += 1
            return None
        self._left_out = set()
        parent_files, commit_files = self._snapshot(commit.parent), self._snapshot(commit.sha)
        size = sum(len(t) for t in commit_files.values()) // 1024
        why = f"snapshot_too_large: {size} KiB of text files (max_snapshot_kb {self.opts.max_snapshot_kb})" \
            if size > self.opts.max_snapshot_kb else \
            reasons.left_out_reason(sorted(self._left_out & set(kinds)), self.opts.max_file_kb)
        if why:
            self._quarantine(commit, why)
            return None
        return self._build(commit, parent_files, commit_files, source_paths, test_paths)

    def _snapshot(self, sha: str) -> dict[str, str]:
        files, skipped = self.repo.snapshot(sha, self.opts.max_file_kb * 1024)
        self._left_out |= {p for p in skipped if self._kind(p) in ("source", "test")
                           and not matches(p, tuple(self.opts.exclude))}
        return {p: t for p, t in files.items() if not matches(p, tuple(self.opts.exclude))}

    def _split_files(self, files: dict[str, str]) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
        """(source, test-side support, test modules) of a snapshot; runner files go nowhere."""
        source, support, tests = {}, {}, {}
        for p, t in files.items():
            kind = self._kind(p)
            if kind == "test":
                (tests if is_test_module(p, self.tests_g) else support)[p] = t
            elif kind != "runner":
                source[p] = t
        return source, support, tests

    def _build(self, commit: Commit, parent_files: dict[str, str], commit_files: dict[str, str],
               source_paths: list[str], test_paths: list[str]) -> Task | None:
        p_source, _, p_tests = self._split_files(parent_files)
        c_source, support, c_tests = self._split_files(commit_files)
        touched = {p for p in test_paths if p in c_tests}
        nested = reasons.nested_go_modules(commit_files) if self.language == Language.GO else []
        if nested and touched and all(reasons.in_nested(p, nested) for p in touched):
            self._quarantine(commit, reasons.nested_reason(sorted(touched), nested))
            return None
        c_tests = {p: t for p, t in c_tests.items() if not reasons.in_nested(p, nested)}
        touched = {p for p in touched if p in c_tests}
        if not touched:
            self._quarantine(commit, reasons.untouched_reason(test_paths, self._gone))
            return None
        if self.language == Language.GO:
            selected = select_go_test_files(c_tests, touched, source_paths, c_source, self.opts.max_test_files)
            target = GO_CANDIDATE
        else:
            selected = select_test_files(c_tests, touched, source_paths, self.opts.max_test_files)
            target = _candidate_path(c_source)
        tests = {p: c_tests[p] for p in selected}
        runs = 1 + self.opts.reruns
        at_parent, at_commit = run_states(self.sandbox, [{**p_source, **support}, {**c_source, **support}], tests,
                                          runs, self.limits, tuple(self.opts.requirements), target, self.language)
        found = discover(at_parent, at_commit, changed_tests(p_tests, tests), touched, self.opts.max_pass_to_pass)
        why = reasons.no_task_reason(found, touched, self.language == Language.GO, commit_files,
                                     sorted(self._left_out))
        if why:
            self._quarantine(commit, why)
            return None
        changed = {c for c in self._changed if self._kind(c) in ("source", "other") and (c in p_source or c in c_source)}
        return self._task(commit, p_source, support, tests, found, source_paths, target, sorted(changed))

    def _task(self, commit: Commit, p_source: dict[str, str], support: dict[str, str], tests: dict[str, str],
              found, source_paths: list[str], target: str, ref_paths: list[str]) -> Task:
        keep = {i.split("::")[0] for i in found.fail_to_pass + found.pass_to_pass}
        if self.language == Language.GO:   # a package's test files build together: keep the packages
            dirs = {k.rpartition("/")[0] for k in keep}
            keep = {p for p in tests if p.rpartition("/")[0] in dirs}
        lang = {"language": Language.GO, "framework": Framework.GO_REPO} if self.language == Language.GO else {}
        verifier = ChangeVerifier(**lang, files=p_source, support=support, tests={p: t for p, t in tests.items() if p in keep},
                                  fail_to_pass=tuple(found.fail_to_pass), pass_to_pass=tuple(found.pass_to_pass),
                                  test_globs=self.tests_g, runner_globs=self.runner_g, target_path=target,
                                  timeout_s=self.opts.test_timeout_s, requirements=tuple(self.opts.requirements))
        dropped = sorted(p for p in ref_paths if verifier.protected(p))   # go.mod, loader files: no diff may edit them
        reference = self.repo.diff(commit.parent, commit.sha, [p for p in ref_paths if p not in dropped])
        ctx = build_context(self.opts.context, p_source, source_paths, commit.message, self.opts.context_chars,
                            self.ext, self.opts.retriever, self.opts.context_chunk_chars)
        prompt = PROMPT.rsplit("{context}", 1)[0].format(name=self.repo.path.name.removesuffix(".git"),
                                                         parent=commit.parent[:12], message=commit.message.strip())
        prompt += ctx.text + ASK[self.opts.answer]
        return Task(domain=self.src.domain, prompt=(Message(role="user", content=prompt),), verifier=verifier,
                    reference=reference, source=self._source(commit),
                    metadata={"parent": commit.parent, "commit_time": commit.time, "subject": commit.subject,
                              "source_files": source_paths, "flaky": found.flaky[:50],
                              "fail_to_pass": len(found.fail_to_pass), "pass_to_pass": len(found.pass_to_pass),
                              **({"dropped_from_reference": dropped} if dropped else {}),
                              **ctx.metadata(self.opts.context)})

    def _validate(self, tasks: list[Task]) -> list[Task]:
        from sdk.rewards.change import calibrate
        from sdk.rewards.config import RewardConfig
        from sdk.rewards.tiered import score_batch

        reasons.progress_log.info(f"git_history: scoring the {len(tasks)} references "
                                  "(each commit's own diff must earn 1.0)")
        results = score_batch(tasks, [f"```diff\n{t.reference}```" for t in tasks], self.sandbox, RewardConfig())
        tasks, results = calibrate(tasks, results, lambda ts: score_batch(
            ts, [f"```diff\n{t.reference}```" for t in ts], self.sandbox, RewardConfig()))
        kept = []
        for task, res in zip(tasks, results):
            if res.status.value == "ok" and res.score is not None and res.score >= 1.0 - 1e-9 and not res.flags:
                kept.append(task)
            else:   # a flagged reference would not complete its own change (sdk.eval.change)
                self.result.quarantined.append(Quarantined(reason=reasons.reference_reason(
                    res, task.metadata.get("dropped_from_reference", [])), task=task, source=task.source))
        return kept


def select_test_files(tests: dict[str, str], touched: set[str], source_paths: list[str], budget: int) -> list[str]:
    """The test modules to run: the touched ones, then modules naming a touched source module
    (by its module name), in path order, up to ``budget`` (touched ones always run)."""
    names = {Path(p).stem for p in source_paths if Path(p).stem != "__init__"}
    names |= {Path(p).parent.name for p in source_paths if Path(p).stem == "__init__"}
    related = [p for p in sorted(tests) if p not in touched and any(n and n in tests[p] for n in names)]
    return sorted(touched) + related[:max(0, budget - len(touched))]


GO_CANDIDATE = "_tl_change.txt"   # the sandbox's (empty) candidate file: not a .go file, so no package sees it


def select_go_test_files(tests: dict[str, str], touched: set[str], source_paths: list[str], source: dict[str, str],
                         budget: int) -> list[str]:
    """Whole Go packages of test files: those of the touched test files' and source files' folders
    (always), then, in path order and up to ``budget`` files, those of folders whose ``.go`` files
    import a touched package (``"<module>/<folder>"``, the module from ``go.mod``)."""
    from sdk.sandbox.languages.gorepo import module_path

    def folder(p: str) -> str:
        return p.rpartition("/")[0]
    own = {folder(p) for p in touched} | {folder(p) for p in source_paths}
    module = module_path(source)
    paths = {f'"{module}/{d}"' if d else f'"{module}"' for d in own} if module else set()
    users = {folder(p) for p, t in {**source, **tests}.items() if p.endswith(".go") and any(x in t for x in paths)}
    first = sorted(p for p in tests if folder(p) in own)
    related = sorted(p for p in tests if folder(p) in users - own)
    take = [p for p in related if folder(p) in {folder(q) for q in related[:max(0, budget - len(first))]}]
    return first + take


def _candidate_path(source: dict[str, str]) -> str:
    """The empty candidate module's path: under ``src/`` for a src layout (the harness then puts
    ``src/`` on ``sys.path``), else at the root."""
    src_layout = any(p.startswith("src/") and p.endswith(".py") for p in source) and \
        not any("/" not in p and p.endswith(".py") and p != "setup.py" for p in source)
    return "src/_tl_change.py" if src_layout else "_tl_change.py"


def time_split(tasks: list[Task], heldout_fraction: float) -> list[Task]:
    """The newest ``heldout_fraction`` of ``tasks`` (given oldest first) held out, the rest train;
    at least one held out when there are two or more tasks and the fraction is positive."""
    n = len(tasks)
    k = int(n * heldout_fraction)
    if heldout_fraction > 0 and n >= 2:
        k = max(k, 1)
    return [t.with_(split=Split.HELDOUT if i >= n - k else Split.TRAIN) for i, t in enumerate(tasks)]
