"""A repository's history through the git CLI: commits, what each changed, files at a commit.

Why the git CLI and not a library: git is already needed by the change reward (``git apply``,
:mod:`sdk.rewards.patch`) and by anyone who has a repository; its C diff and rename detection
are fast on real histories, and ``git cat-file --batch`` reads a whole tree in one process.
dulwich (pure Python) is not a dependency and its tree diffs are slower; pygit2 needs libgit2.
Every call runs ``git`` with a fixed environment (no system config, no pager, C locale) and runs no
program the repository's own ``.git/config`` names (external diff, textconv, fsmonitor).
"""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sdk.errors import SourceError

_SEP = "\x1e"


@dataclass(frozen=True)
class Commit:
    """One commit on the walked line: ``sha``, its first ``parent``, committer time (Unix seconds,
    UTC), the ``subject`` and the whole ``message``."""

    sha: str
    parent: str | None
    time: int
    subject: str
    message: str


@dataclass(frozen=True)
class Change:
    """One path a commit changed: git's status letter (A, M, D, R...), the new and the old path."""

    status: str
    path: str
    old_path: str | None = None


@functools.cache
def _empty_home() -> str:
    """An empty folder (made once per process) that git sees as ``HOME``: no user configuration in it."""
    return tempfile.mkdtemp(prefix="tuneloop-git-home-")


class GitRepo:
    """A local git repository (a work tree or a bare mirror).

    Raises:
        SourceError: ``path`` is not a git repository or git is not installed.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise SourceError(f"repository {self.path} does not exist", "set `path:` to a git clone or mirror")
        try:
            self.git_dir = self._git("rev-parse", "--absolute-git-dir").strip()
        except SourceError as exc:
            raise SourceError(f"{self.path} is not a git repository ({exc.what})",
                              "point `path:` at a clone (`git clone URL`) or a bare mirror") from exc

    def _git(self, *args: str, input: bytes | None = None, binary: bool = False):
        # git with no configuration but the repository's own: the user's ~/.gitconfig (or XDG file) and
        # /etc/gitconfig could change what the tasks are made of (diff.noprefix, diff.external,
        # log.showSignature, aliases...); HOME is an empty folder for git versions before GIT_CONFIG_GLOBAL
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": _empty_home(), "XDG_CONFIG_HOME": _empty_home(),
               "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_PAGER": "cat", "LC_ALL": "C",
               "GIT_OPTIONAL_LOCKS": "0"}
        try:
            proc = subprocess.run(["git", "-C", str(self.path), "-c", "core.quotepath=off", "-c", "core.fsmonitor=false",
                                   *args], input=input,
                                  capture_output=True, env=env, timeout=600, check=False)
        except FileNotFoundError as exc:
            raise SourceError("git is not installed", "install git (Debian: apt-get install git)") from exc
        if proc.returncode != 0:
            raise SourceError(f"git {' '.join(args[:3])} failed: {proc.stderr.decode('utf-8', 'replace').strip()[:300]}",
                              "check the repository and the `rev:` option")
        return proc.stdout if binary else proc.stdout.decode("utf-8", "replace")

    def has_file(self, rev: str, path: str) -> bool:
        """True when ``path`` exists at ``rev``."""
        try:
            self._git("cat-file", "-e", f"{rev}:{path}")
        except SourceError:
            return False
        return True

    def commits(self, rev: str = "HEAD", max_count: int = 200) -> list[Commit]:
        """The newest ``max_count`` commits on the first-parent line of ``rev``, oldest first (a
        merge stands for its whole branch, diffed against its first parent). The root is skipped.
        The order is the line's own (each commit after its parent), whatever the clocks said."""
        out = self._git("log", "--first-parent", f"--max-count={max_count}", f"--format=%H %P%x1f%ct%x1f%s%x1f%B{_SEP}", rev)
        commits = []
        for record in out.split(_SEP):
            record = record.strip("\n")
            if not record:
                continue
            head, ctime, subject, body = record.split("\x1f", 3)
            sha, *parents = head.split()
            if parents:
                commits.append(Commit(sha=sha, parent=parents[0], time=int(ctime), subject=subject, message=body.strip()))
        return commits[::-1]

    def changes(self, parent: str, sha: str) -> list[Change]:
        """Paths changed from ``parent`` to ``sha`` (renames detected)."""
        out = self._git("diff", "--name-status", "-M", "--no-color", "-z", parent, sha)
        parts, changes, i = out.split("\0"), [], 0
        while i < len(parts) - 1:
            status = parts[i]
            if status[:1] in ("R", "C"):
                changes.append(Change(status=status[0], path=parts[i + 2], old_path=parts[i + 1]))
                i += 3
            else:
                changes.append(Change(status=status[:1], path=parts[i + 1]))
                i += 2
        return changes

    def diff(self, parent: str, sha: str, paths: list[str]) -> str:
        """``git diff`` from ``parent`` to ``sha`` restricted to ``paths`` (a/ b/ prefixes, renames)."""
        if not paths:
            return ""
        # no external diff and no textconv: a driver the repository's .git/config names would run here
        return self._git("diff", "-M", "--no-color", "--no-ext-diff", "--no-textconv", parent, sha, "--", *paths)

    def snapshot(self, sha: str, max_file_bytes: int) -> tuple[dict[str, str], list[str]]:
        """Text files at ``sha``: ``(path -> text, skipped paths)``; a file is skipped when it is
        larger than ``max_file_bytes``, not UTF-8, a symlink or a submodule."""
        listing = self._git("ls-tree", "-r", "-l", "-z", "--full-tree", sha)
        wanted, skipped = [], []
        for entry in filter(None, listing.split("\0")):
            meta, path = entry.split("\t", 1)
            mode, kind, obj, size = meta.split()
            if kind != "blob" or mode == "120000" or int(size) > max_file_bytes:
                skipped.append(path)
            else:
                wanted.append((obj, path))
        if not wanted:
            return {}, skipped
        raw = self._git("cat-file", "--batch", input="".join(f"{o}\n" for o, _ in wanted).encode(), binary=True)
        files, pos = {}, 0
        for obj, path in wanted:
            eol = raw.index(b"\n", pos)
            size = int(raw[pos:eol].split()[2])
            body = raw[eol + 1:eol + 1 + size]
            pos = eol + 1 + size + 1
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                skipped.append(path)
                continue
            if "\0" in text:
                skipped.append(path)
            else:
                files[path] = text
        return files, skipped

