"""Why a commit makes no task (the quarantine reasons of the ``git_history`` source), nested Go
modules, and the source's progress lines.

Reasons start with their key (``tests_cannot_run``, ``no_fail_to_pass``, ``flaky_fail_to_pass``,
``snapshot_too_large``, ``reference_fails``), then say what was seen, so a user can tell a commit
whose tests cannot run from one that simply adds no deciding test; where the user can act, a last
``fix:`` line says how (the build summary shows it, :func:`sdk.run.health.group_fix`).
"""

from __future__ import annotations

import logging

progress_log = logging.getLogger("tuneloop.progress")

GOPATH_HINT = ("; no go.mod at the commit: a tree from before Go modules, whose imports of its own packages "
               "do not resolve in module mode")
GOPATH_FIX = ("\nfix: none needed: commits from before the repository's go.mod make no task whatever the options "
              "(a later `rev` or a smaller `max_commits` skips them); `exclude` does not help here")
TIMEOUT_FIX = ("\nfix: raise the source's `suite_timeout_s` (one run of the commit's test modules, default 120 s; "
               "e.g. --set sources.0.options.suite_timeout_s=600) or lower `max_test_files`")
FLAG_HINTS = {"edits_ci": "the commit changes a file the change reward treats as runner configuration "
                          "(go.mod/go.sum, CI files, pytest.ini, ...): those edits are dropped from every diff, "
                          "its own included",
              "edits_tests": "the commit's source diff touches a test-side path"}


def folder(path: str) -> str:
    """``a/b/c.go`` -> ``a/b``; a root file -> ``''``."""
    return path.rpartition("/")[0]


def no_task_reason(found, touched: set[str], go: bool = False, commit_files: dict[str, str] | None = None,
                   left_out: list[str] = ()) -> str | None:
    """Why a commit makes no task (``found``: the :class:`~connectors.history.mine.Discovery`), or
    None. Go (``go``): a touched test file counts as run when any test of its package ran (a
    helper ``_test.go`` file defines no test of its own); ``commit_files`` without a root
    ``go.mod`` add :data:`GOPATH_HINT` to a ``tests_cannot_run`` reason, and code files ``left_out``
    of the snapshot are named there (the tests may import them)."""
    gopath = go and commit_files is not None and "go.mod" not in commit_files
    hint = GOPATH_HINT if gopath else ""
    if left_out:
        hint += f"; left out of the snapshot (over max_file_kb, or not UTF-8 text): {', '.join(left_out[:3])}"
    hint += GOPATH_FIX if gopath else ""
    for state, failure in (("commit", found.commit.failure), ("parent", found.parent.failure)):
        if failure:   # a timeout or sandbox fault at the parent says nothing about the tests either
            slow = TIMEOUT_FIX if failure.startswith("timeout") else ""
            return f"tests_cannot_run: at the {state}: {failure}{hint if state == 'commit' else ''}{slow}"
    ran = {i.split("::")[0] for r in found.commit.runs for i in r}
    hit = {folder(p) for p in ran} & {folder(p) for p in touched} if go else ran & touched
    if not hit:
        errors = "; ".join(f"{p}: {last_error(e)}" for p, e in sorted(found.commit.uncollected.items()) if p in touched)
        return (f"tests_cannot_run: the commit's test modules do not run at the commit "
                f"({errors or 'no tests collected'}){hint}")
    if not found.fail_to_pass:
        flaky = [i for i in found.changed if i in found.flaky]
        if flaky:
            return f"flaky_fail_to_pass: the only candidates are flaky ({', '.join(sorted(flaky)[:3])})"
        return "no_fail_to_pass: no test the commit adds or changes fails at the parent and passes at the commit"
    return None


def left_out_reason(paths: list[str], max_file_kb: int) -> str | None:
    """``snapshot_too_large`` for a commit that changes code files the snapshot left out (``paths``:
    larger than ``max_file_kb`` KiB, not UTF-8 text), or None when it changes none: its reference
    could not apply, its tests could not import them."""
    if not paths:
        return None
    return (f"snapshot_too_large: the commit changes files left out of the snapshot (larger than max_file_kb "
            f"{max_file_kb} KiB, or not UTF-8 text): {', '.join(paths[:3])}\nfix: raise the source's `max_file_kb` "
            f"(e.g. --set sources.0.options.max_file_kb={max_file_kb * 4})")


def untouched_reason(test_paths: list[str], deleted: set[str]) -> str:
    """The reason for a commit that changes test-side files but no test module present at the
    commit (in the snapshot): it deletes (or renames away) test modules, or changes only support
    files (conftest, helpers, data) or files the ``exclude`` option leaves out, so no test it adds
    or changes can fail at the parent."""
    gone = [p for p in test_paths if p in deleted]
    kept = [p for p in test_paths if p not in deleted]
    what = "; ".join(part for part in (f"deletes {', '.join(gone[:3])}" if gone else "",
                                       f"changes only test support or excluded files {', '.join(kept[:3])}"
                                       if kept else "") if part)
    return f"no_fail_to_pass: the commit changes no test module that exists at the commit ({what})"


def last_error(message: str) -> str:
    """The last ``E   ...`` line of a pytest error (the exception itself), else the message's start."""
    lines = [ln[1:].strip() for ln in message.splitlines() if ln.startswith("E ")] or \
        [ln.strip() for ln in message.splitlines() if ".go:" in ln]   # go build errors
    return (lines[-1] if lines else message)[:200]


def reference_reason(res, dropped: list[str] = ()) -> str:
    """``reference_fails`` for a reference scored ``res`` (a :class:`~sdk.rewards.result.RewardResult`):
    its score, status and detail, the flags raised with what they mean here, and the files the
    commit changed that were ``dropped`` from the reference (no change may edit them: ``go.mod``,
    loader files), which it may have needed."""
    flags = "".join(f"; flagged {f}" + (f": {FLAG_HINTS[f]}" if f in FLAG_HINTS else "") for f in res.flags)
    if dropped:
        flags += (f"; the commit also changes {', '.join(dropped[:3])}, runner configuration that no change may "
                  f"edit here (left out of the reference)")
    return f"reference_fails: the commit's own diff scored {res.score} ({res.status.value}: {res.detail[:300]}){flags}"


def nested_go_modules(files: dict[str, str]) -> list[str]:
    """Folders (not the root) holding a ``go.mod`` of their own: separate modules, whose packages
    ``go test`` from the root does not build."""
    return sorted(folder(p) for p in files if p.endswith("/go.mod"))


def in_nested(path: str, nested: list[str]) -> bool:
    """``path`` lies under one of the ``nested`` module folders."""
    return any(path.startswith(d + "/") for d in nested)


def nested_reason(paths: list[str], nested: list[str]) -> str:
    """``tests_cannot_run`` for a commit whose touched tests all lie in nested Go modules."""
    mods = sorted({d for d in nested for p in paths if p.startswith(d + "/")})
    return (f"tests_cannot_run: the commit's test files ({', '.join(paths[:3])}) belong to a nested module "
            f"({', '.join(m + '/go.mod' for m in mods)}); only the root module's packages are run")


def note(n: int, total: int, sha: str, outcome: str, tasks: int, quarantined: int, spent: float) -> None:
    """One progress line per candidate commit on the ``tuneloop.progress`` logger (``tuneloop``
    shows it on stderr; ``bench/git_history.py`` too)."""
    progress_log.info(f"git_history: commit {n}/{total} {sha[:10]}: {outcome} ({tasks} tasks, {quarantined} "
                      f"quarantined so far, {spent:.0f} s)")
