"""A change task's repository as a per-rollout scratch copy, for agentic rollouts (issue 17).

:class:`Workspace` holds the source files of a :class:`~sdk.tasks.change.ChangeVerifier` at the
parent commit (``verifier.files``) *in memory*, copied once per rollout. The agent's file tools
(:mod:`sdk.rollout.change_tools`) read, list, search and edit this copy; nothing here ever opens a
path on the host, so the trainer's file system is out of the agent's reach by construction:

* a path is a relative POSIX path inside the repository; an absolute path (``/etc/passwd``,
  ``~``, ``C:``), a ``..`` part, a backslash or a NUL is refused with a :class:`ToolError`
  naming the rule (the tools answer it to the model as an error, the rollout goes on);
* there are no symlinks to follow: the snapshot keeps regular text files only (the
  ``git_history`` source skips symlinks and submodules), and the tools write text, never links;
* edits to test-side files and CI / runner configuration (``verifier.protected``) are refused: the
  grader drops them anyway (``edits_tests`` / ``edits_ci``), so the agent is told at once;
* the workspace never holds the commit's tests (``verifier.tests``) or support files: hidden
  verifier content is not in it.

:meth:`Workspace.diff` is the rollout's final change: a unified diff (git's form, with
``new file`` / ``deleted file`` headers and ``\\ No newline at end of file`` markers) of the
copy against the parent, which :mod:`sdk.rewards.change` scores like any model-written diff.
"""

from __future__ import annotations

import difflib

from sdk.rollout.errors import ToolError
from sdk.tasks.change import ChangeVerifier

MAX_FILE_CHARS = 200_000  # a write larger than this is refused
MAX_FILES = 5_000        # files the workspace may hold (new files count)


def clean_path(path: str, allow_root: bool = False) -> str:
    """``path`` as a normalised relative POSIX path inside the repository ("" for the root when
    ``allow_root``).

    Raises:
        ToolError: the path is absolute, has a ``..`` part, a backslash or a NUL, or is empty.
    """
    if not isinstance(path, str):
        raise ToolError(f"path must be a string, got {type(path).__name__}", "give a path relative to the repository")
    raw = path.strip()
    if "\0" in raw or "\\" in raw:
        raise ToolError(f"path {path!r} has a NUL or a backslash", "use / between folders")
    if raw.startswith(("/", "~")) or (len(raw) > 1 and raw[1] == ":"):
        raise ToolError(f"path {path!r} is absolute: only paths inside the repository can be used",
                        "give a path relative to the repository root, e.g. pkg/module.py")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ToolError(f"path {path!r} leaves the repository ('..' is not allowed)",
                        "give a path relative to the repository root, without '..'")
    if not parts and not allow_root:
        raise ToolError("path is empty", "name a file, e.g. pkg/module.py")
    return "/".join(parts)


class Workspace:
    """One rollout's in-memory copy of a change task's repository at the parent commit.

    Args:
        verifier: the task's verifier; its ``files`` are copied, its ``protected`` rule guards edits.
    """

    def __init__(self, verifier: ChangeVerifier) -> None:
        self.verifier = verifier
        self.original: dict[str, str] = dict(verifier.files)
        self.files: dict[str, str] = dict(verifier.files)

    def read(self, path: str) -> str:
        """The text of ``path``.

        Raises:
            ToolError: the path is refused (see :func:`clean_path`) or names no file.
        """
        p = clean_path(path)
        if p not in self.files:
            hint = "it is a folder: list it with list_dir" if self.is_dir(p) else "list_dir shows the files"
            raise ToolError(f"no file {p!r} in the repository", hint)
        return self.files[p]

    def is_dir(self, p: str) -> bool:
        """True when some file lies under folder ``p`` ("" is the root)."""
        return p == "" or any(f.startswith(p + "/") for f in self.files)

    def listdir(self, path: str = ".") -> list[str]:
        """The entries right under folder ``path``: files by name, folders with a trailing ``/``.

        Raises:
            ToolError: the path is refused, is a file, or names nothing.
        """
        p = clean_path(path, allow_root=True)
        if p in self.files:
            raise ToolError(f"{p!r} is a file, not a folder", "read it with read_file")
        if not self.is_dir(p):
            raise ToolError(f"no folder {p!r} in the repository", "list_dir with path '.' shows the top level")
        prefix = p + "/" if p else ""
        entries = set()
        for f in self.files:
            if f.startswith(prefix):
                head, sep, _ = f[len(prefix):].partition("/")
                entries.add(head + "/" if sep else head)
        return sorted(entries)

    def search(self, text: str, path: str = ".", max_hits: int = 50) -> list[str]:
        """Lines holding ``text`` (a literal, case-sensitive: no regular expressions, so no
        pattern can hang this process) in the files under ``path``: ``file:line: text``.

        Raises:
            ToolError: ``text`` is empty, or the path is refused / names nothing.
        """
        if not text:
            raise ToolError("the search text is empty", "give a word or a piece of code to look for")
        p = clean_path(path, allow_root=True)
        if p not in self.files and not self.is_dir(p):
            raise ToolError(f"no file or folder {p!r} in the repository", "search with path '.' looks everywhere")
        hits: list[str] = []
        for f in sorted(self.files):
            if f == p or p == "" or f.startswith(p + "/"):
                for k, line in enumerate(self.files[f].splitlines(), start=1):
                    if text in line:
                        hits.append(f"{f}:{k}: {line.strip()[:200]}")
                        if len(hits) >= max_hits:
                            return hits
        return hits

    def write(self, path: str, text: str) -> str:
        """Set ``path``'s text (a new file is created); returns the clean path.

        Raises:
            ToolError: the path is refused, names a folder or a protected (test-side or CI) file,
                or the text or the file count is over the limits.
        """
        p = self._writable(path)
        if len(text) > MAX_FILE_CHARS:
            raise ToolError(f"the new text of {p} is {len(text)} characters (limit {MAX_FILE_CHARS})",
                            "change the file in smaller pieces with old_text")
        if p not in self.files and len(self.files) >= MAX_FILES:
            raise ToolError(f"the repository already holds {MAX_FILES} files", "edit existing files")
        self.files[p] = text
        return p

    def replace(self, path: str, old: str, new: str) -> str:
        """Replace the one occurrence of ``old`` in ``path`` by ``new``; returns the clean path.

        Raises:
            ToolError: the file is missing or protected, or ``old`` occurs zero or several times.
        """
        p = self._writable(path)
        text = self.read(p)
        count = text.count(old)
        if count != 1:
            raise ToolError(f"old_text occurs {count} times in {p} (it must occur exactly once)",
                            "copy old_text exactly from read_file, with enough lines to be unique")
        return self.write(p, text.replace(old, new, 1))

    def _writable(self, path: str) -> str:
        p = clean_path(path)
        why = self.verifier.protected(p)
        if why:
            kind = "test-side" if why == "edits_tests" else "CI / test-runner configuration"
            raise ToolError(f"{p} is {kind}: the grader ignores edits to tests and CI ({why})",
                            "change the source files instead")
        if p not in self.files and self.is_dir(p):
            raise ToolError(f"{p!r} is a folder", "name a file inside it")
        return p

    def changed(self) -> list[str]:
        """Paths whose text differs from the parent's (new files included), sorted."""
        return sorted(p for p in self.files if self.original.get(p) != self.files[p])

    def diff(self) -> str:
        """The unified diff of the workspace against the parent ("" when nothing changed)."""
        return "".join(file_diff(p, self.original.get(p), self.files.get(p)) for p in self.changed())


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def file_diff(path: str, old: str | None, new: str | None) -> str:
    """One file's section in git's form (``None`` text: the file does not exist on that side)."""
    head = f"diff --git a/{path} b/{path}\n"
    if old is None:
        head += "new file mode 100644\n"
    elif new is None:
        head += "deleted file mode 100644\n"
    body = difflib.unified_diff(_lines(old or ""), _lines(new or ""), "a/" + path if old is not None else "/dev/null",
                                "b/" + path if new is not None else "/dev/null", n=3)
    out = []
    for line in body:
        if line.startswith(("---", "+++")):
            line = line.rstrip() + "\n"   # difflib puts a tab after the name when no date is given
        if "\n\\ No newline at end of file\n" in line:   # the marker travels inside its line
            out.append(line)
            continue
        out.append(line if line.endswith("\n") else line + "\n")
    return head + "".join(out)
