"""Unified diffs from completions: find the diff, split it by file, apply it to a snapshot.

Applying uses ``git apply`` (the git CLI, which the ``git_history`` source needs anyway) in a
private temporary folder holding only the files the diff names, outside any repository:
git's own parser handles renames, new and deleted files and ``\\ No newline at end of file``;
``--recount`` forgives wrong hunk line counts (common in model output, and harmless: the
context lines still have to match). Nothing in the diff is ever run here: applying is text
only, and git refuses paths that leave the folder. Symlinks and submodules (modes 120000,
160000) and binary patches are refused before git sees them.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

_FENCE = re.compile(r"```(?:diff|patch|udiff)?[^\n`]*\n(.*?)```", re.DOTALL)  # no ` in the info string:
# with [^\n]* a run of backticks without a newline was quadratic (200k backticks: 23 s, now 6 ms)
# fences on lines of their own: a diff's own lines start with ' ', '+', '-', '@', '\\' or a header word,
# so a line that starts with ``` ends the block, while ``` inside a changed Markdown file or docstring
# (`` ```go`` in a README hunk) does not (the loose pattern above cut such a diff short)
_LINE_FENCE = re.compile(r"^```(?:diff|patch|udiff)?[^\n`]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
_GIT_HEADER = re.compile(r"^diff --git (?:\"?a/)?(\S+?)\"? (?:\"?b/)?(\S+?)\"?$")
_BINARY = re.compile(r"^(?:GIT binary patch|Binary files )", re.MULTILINE)
_MODES = re.compile(r"^(?:new file |deleted file |new |old )?mode (120000|160000)", re.MULTILINE)


class PatchError(Exception):
    """The diff does not apply; the message says why (git's own words where git refused it)."""


@dataclass(frozen=True)
class FileDiff:
    """One file's section of a unified diff: old and new paths (None for /dev/null) and the text."""

    old: str | None
    new: str | None
    text: str

    @property
    def paths(self) -> tuple[str, ...]:
        """The distinct paths the section touches."""
        return tuple(dict.fromkeys(p for p in (self.old, self.new) if p))


@dataclass
class Applied:
    """A diff applied to a snapshot: the new ``files`` and which paths changed or were deleted."""

    files: dict[str, str]
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


def extract_diff(completion: str) -> str | None:
    """The unified diff in ``completion``: the first fenced block that looks like one (```diff,
    ```patch or a bare fence; fences on lines of their own first, so a hunk holding ``` stays
    whole), else the text from the first ``diff --git`` / ``--- `` line; None when there is none."""
    for pattern in (_LINE_FENCE, _FENCE):   # fences on their own lines first, then anywhere
        for block in pattern.findall(completion):
            if _looks_like_diff(block):
                return block
    lines = completion.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("diff --git ") or (line.startswith("--- ") and i + 1 < len(lines)
                                               and lines[i + 1].startswith("+++ ")):
            return "".join(lines[i:])
    return None


def _looks_like_diff(text: str) -> bool:
    return bool(re.search(r"^(diff --git |--- \S)", text, re.MULTILINE) and re.search(r"^@@ ", text, re.MULTILINE)) \
        or bool(re.search(r"^diff --git ", text, re.MULTILINE))


def _strip(path: str) -> str | None:
    path = path.strip().split("\t")[0].strip('"')
    if path == "/dev/null":
        return None
    return path[2:] if path[:2] in ("a/", "b/") else path


def split_diff(diff: str) -> list[FileDiff]:
    """The per-file sections of ``diff`` (``diff --git`` headers, or bare ``---``/``+++`` pairs)."""
    lines = diff.splitlines(keepends=True)
    starts = [i for i, ln in enumerate(lines) if ln.startswith("diff --git ")]
    if not starts:
        starts = [i for i, ln in enumerate(lines) if ln.startswith("--- ") and i + 1 < len(lines)
                  and lines[i + 1].startswith("+++ ")]
    out = []
    for a, b in zip(starts, starts[1:] + [len(lines)]):
        chunk = lines[a:b]
        old = new = None
        m = _GIT_HEADER.match(chunk[0].rstrip("\n"))
        if m:
            old, new = m.group(1), m.group(2)
        for ln in chunk:
            if ln.startswith("--- "):
                old = _strip(ln[4:])
            elif ln.startswith("+++ "):
                new = _strip(ln[4:])
                break
            elif ln.startswith(("rename from ", "copy from ")):
                old = ln.split(" from ", 1)[1].strip()
            elif ln.startswith(("rename to ", "copy to ")):
                new = ln.split(" to ", 1)[1].strip()
        out.append(FileDiff(old=old, new=new, text="".join(chunk)))
    return out


def apply_diff(files: dict[str, str], sections: list[FileDiff], timeout_s: float = 20.0) -> Applied:
    """``files`` with ``sections`` applied (a new dict; ``files`` is not changed).

    Raises:
        PatchError: a path leaves the repository, a mode is a symlink or submodule, a section is a
            binary patch, a hunk does not match, or git is missing.
    """
    if not sections:
        raise PatchError("the diff changes no file")
    for s in sections:
        for p in s.paths:
            if p.startswith(("/", ".git/")) or ".." in p.split("/"):
                raise PatchError(f"path {p!r} leaves the repository")
        if _MODES.search(s.text):
            raise PatchError(f"{s.paths[0]}: symlinks and submodules cannot be changed by a diff here")
        if _BINARY.search(s.text):  # zlib data: a 281 kB diff wrote a 50 MB file into every run's request
            raise PatchError(f"{s.paths[0] if s.paths else 'a section'}: binary patches are not accepted; "
                             "change source files as text hunks")
    touched = sorted({p for s in sections for p in s.paths})
    with tempfile.TemporaryDirectory(prefix="tl-apply-") as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        for p in touched:
            if p in files:
                (root / p).parent.mkdir(parents=True, exist_ok=True)
                (root / p).write_text(files[p], encoding="utf-8")
        diff = "".join(_with_header(s) for s in sections)
        _git_apply(root, diff, timeout_s)
        out = dict(files)
        applied = Applied(files=out)
        for p in touched:
            path = root / p
            if path.is_symlink():
                raise PatchError(f"{p}: the diff made a symlink")
            if path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace")
                if out.get(p) != text:
                    out[p] = text
                    applied.changed.append(p)
            elif p in out:
                del out[p]
                applied.deleted.append(p)
    return applied


def _with_header(section: FileDiff) -> str:
    """The section in git's own form: a ``diff --git a/OLD b/NEW`` header (so that ``--recount``
    knows where the last hunk ends), ``new file mode`` / ``deleted file mode`` where a plain diff
    creates or deletes, ``---``/``+++`` lines with ``a/``/``b/`` prefixes whatever the model wrote
    (``/dev/null`` kept), and a final newline."""
    old, new = section.old or section.new, section.new or section.old
    lines = section.text.splitlines()
    if lines and lines[0].startswith("diff --git "):
        lines = lines[1:]
    out, done = [f"diff --git a/{old} b/{new}"], False
    head = lines[:next((i for i, ln in enumerate(lines) if ln.startswith("--- ")), len(lines))]
    if section.old is None and section.new and not any(ln.startswith("new file mode") for ln in head):
        out.append("new file mode 100644")  # a plain `--- /dev/null` creation: git needs the git-style line
    elif section.new is None and section.old and not any(ln.startswith("deleted file mode") for ln in head):
        out.append("deleted file mode 100644")
    for line in lines:
        if not done and line.startswith("--- "):
            line = "--- " + (f"a/{section.old}" if section.old else "/dev/null")
        elif not done and line.startswith("+++ "):
            line, done = "+++ " + (f"b/{section.new}" if section.new else "/dev/null"), True
        out.append(line)
    return "\n".join(out) + "\n"


def _git_apply(root: Path, diff: str, timeout_s: float) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CEILING_DIRECTORIES": str(root.parent),
           "HOME": str(root.parent), "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}
    try:
        proc = subprocess.run(["git", "apply", "-p1", "--recount", "--whitespace=nowarn", "-"], cwd=root,
                              input=diff.encode(), capture_output=True, timeout=timeout_s, env=env, check=False)
    except FileNotFoundError as exc:
        raise PatchError("git is not installed: install git to score change tasks") from exc
    except subprocess.TimeoutExpired as exc:
        raise PatchError(f"git apply took longer than {timeout_s} s") from exc
    if proc.returncode != 0:
        raise PatchError(proc.stderr.decode("utf-8", "replace").strip()[-500:] or "git apply refused the diff")
