"""TaskSet: an immutable, content-versioned collection of tasks, saved as JSONL.

The version is a hash over the sorted task ids and their splits, so two task sets with the
same tasks in the same splits have the same version whatever their order on disk.
Quarantined tasks travel with the set (and are counted in the report) but are never trained on.

Snapshots (issue 13, item 5): a unit-test verifier's ``files`` (the repository the tests run
against, the same for every task of one source) is written once, content-addressed, to
``snapshots/<sha>.json`` beside the tasks file; the task's line holds ``"files": {}`` and
``"files_snapshot": "<sha>"`` instead (also for quarantined tasks). :meth:`TaskSet.load` puts the
files back, shared by every task of the snapshot, so a loaded task is the task that was saved
(same fields, same id) and every consumer sees complete verifiers. Files written before
snapshots existed (files inline) load unchanged; a missing snapshot is a clear error. The size
of a saved set grows with the repositories plus the tasks, not their product.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Callable, Iterable, Iterator, TypeVar

from pydantic import ValidationError

from sdk.errors import SourceError
from sdk.tasks.records import Quarantined, Split, Task
from sdk.types import canonical_json

T = TypeVar("T")

SNAPSHOTS = "snapshots"  # folder beside the tasks file


class TaskSet:
    """An immutable list of :class:`Task` plus the quarantine.

    Args:
        tasks: the tasks; duplicate ids are collapsed (first wins).
        quarantined: tasks or rows held back, each with its reason.

    Raises:
        SourceError: when loading a file that is missing or has a malformed line.
    """

    def __init__(self, tasks: Iterable[Task], quarantined: Iterable[Quarantined] = ()) -> None:
        seen: dict[str, Task] = {}
        for task in tasks:
            seen.setdefault(task.id, task)
        self._tasks: tuple[Task, ...] = tuple(seen.values())
        self._quarantined: tuple[Quarantined, ...] = tuple(quarantined)

    @property
    def tasks(self) -> tuple[Task, ...]:
        """The tasks, in insertion order (duplicates collapsed)."""
        return self._tasks

    @property
    def quarantined(self) -> tuple[Quarantined, ...]:
        """Held-back tasks and rows, each with its reason."""
        return self._quarantined

    @property
    def version(self) -> str:
        """16-hex-char hash of sorted ``(id, split)`` pairs."""
        body = "\n".join(sorted(f"{t.id}:{t.split.value}" for t in self._tasks))
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[Task]:
        return iter(self._tasks)

    def split(self, split: Split | str) -> "TaskSet":
        """The tasks of one split (quarantine not included)."""
        split = Split(split)
        return TaskSet([t for t in self._tasks if t.split == split])

    def counts(self) -> dict[str, dict[str, int]]:
        """``{split: {domain: n}}`` plus ``quarantined: {reason-prefix: n}``."""
        out: dict[str, dict[str, int]] = {}
        for t in self._tasks:
            out.setdefault(t.split.value, Counter())[t.domain] += 1  # type: ignore[index]
        out["quarantined"] = Counter(q.reason.split(":")[0] for q in self._quarantined)
        return {k: dict(v) for k, v in out.items()}

    def replace(self, tasks: Iterable[Task] | None = None, quarantined: Iterable[Quarantined] | None = None) -> "TaskSet":
        """A new set with tasks and/or quarantine replaced."""
        return TaskSet(self._tasks if tasks is None else tasks,
                       self._quarantined if quarantined is None else quarantined)

    # ----- persistence -------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write ``tasks.jsonl`` (one task per line) and ``quarantine.jsonl`` beside it.

        Each distinct verifier ``files`` goes once to ``snapshots/<sha>.json`` (see the module
        docstring). Returns the path of the tasks file. Writes atomically (temp file, then rename).
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        store = _Snapshots(path.parent / SNAPSHOTS)
        _write_jsonl(path, (store.pack(t.model_dump(mode="json")) for t in self._tasks))
        _write_jsonl(path.with_name(path.stem + ".quarantine.jsonl"),
                     (_pack_quarantined(store, q.model_dump(mode="json")) for q in self._quarantined))
        return path

    @classmethod
    def load(cls, path: str | Path) -> "TaskSet":
        """Read a set written by :meth:`save` (with or without snapshots).

        Raises:
            SourceError: the file is missing, a line is malformed, or a snapshot it names is missing.
        """
        path = Path(path)
        store = _Snapshots(path.parent / SNAPSHOTS, source=path)
        tasks = list(_records(path, store.unpack))
        qpath = path.with_name(path.stem + ".quarantine.jsonl")
        quarantined = list(_records(qpath, lambda r: _unpack_quarantined(store, r))) if qpath.exists() else []
        return cls(tasks, quarantined)

    def to_dataset(self):
        """A Hugging Face ``datasets.Dataset`` with columns id, domain, split, prompt
        (list of ``{role, content}``), reference, task_json (the full record)."""
        from datasets import Dataset

        return Dataset.from_list([
            {
                "id": t.id,
                "domain": t.domain,
                "split": t.split.value,
                "prompt": [m.model_dump() for m in t.prompt],
                "reference": t.reference or "",
                "task_json": t.model_dump_json(),
            }
            for t in self._tasks
        ])


class _Snapshots:
    """Content-addressed verifier ``files`` in ``folder`` (``<sha>.json``), cached in memory."""

    def __init__(self, folder: Path, source: Path | None = None) -> None:
        self.folder, self.source = folder, source
        self.loaded: dict[str, dict[str, str]] = {}
        self.written: set[str] = set()

    def pack(self, row: dict) -> dict:
        """``row`` (a dumped task) with its verifier's files replaced by a snapshot reference."""
        files = (row.get("verifier") or {}).get("files")
        if not files:
            return row
        text = canonical_json(files)
        sha = hashlib.sha256(text.encode()).hexdigest()[:32]
        if sha not in self.written:
            target = self.folder / f"{sha}.json"
            if not target.exists():
                self.folder.mkdir(parents=True, exist_ok=True)
                tmp = target.with_suffix(".tmp")
                tmp.write_text(text, encoding="utf-8")
                tmp.replace(target)
            self.written.add(sha)
        return {**row, "verifier": {**row["verifier"], "files": {}}, "files_snapshot": sha}

    def unpack(self, row: dict) -> Task:
        """The task of a saved ``row``, its snapshot's files put back (one shared dict per snapshot)."""
        sha = row.pop("files_snapshot", None)
        if not sha:
            return Task.model_validate(row)
        files = self._load(str(sha), row.get("id", "?"))
        task = Task.model_validate({**row, "verifier": {**row["verifier"], "files": files}})
        return task.model_copy(update={"verifier": task.verifier.model_copy(update={"files": files})})

    def _load(self, sha: str, task_id: str) -> dict[str, str]:
        if sha not in self.loaded:
            target = self.folder / f"{sha}.json"
            try:
                self.loaded[sha] = json.loads(target.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise SourceError(f"task {task_id} in {self.source} needs the repository snapshot {target}, "
                                  f"which is missing or unreadable ({exc})",
                                  f"copy the {SNAPSHOTS}/ folder together with the task file, or rebuild the "
                                  "task set (`tuneloop tasks build CONFIG --force`)") from exc
        return self.loaded[sha]


def _pack_quarantined(store: _Snapshots, row: dict) -> dict:
    return {**row, "task": store.pack(row["task"])} if row.get("task") else row


def _unpack_quarantined(store: _Snapshots, row: dict) -> Quarantined:
    if not row.get("task") or "files_snapshot" not in row["task"]:
        return Quarantined.model_validate(row)
    return Quarantined.model_validate({**row, "task": None}).model_copy(update={"task": store.unpack(dict(row["task"]))})


def _write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    tmp.replace(path)


def _records(path: Path, make: Callable[[dict], T]) -> Iterator[T]:
    """``make(row)`` per line of ``path``; a line that is JSON but no valid record (a hand edit, a file
    of another version) is one :class:`SourceError` naming ``path:line`` and the first wrong field."""
    for lineno, row in enumerate(_read_jsonl(path), 1):
        try:
            yield make(row)
        except SourceError:
            raise
        except (ValidationError, KeyError, TypeError, AttributeError) as exc:
            why = (f"`{'.'.join(map(str, exc.errors()[0]['loc']))}`: {exc.errors()[0]['msg']}"
                   if isinstance(exc, ValidationError) else f"{type(exc).__name__}: {exc}")
            raise SourceError(f"{path}:{lineno} is not a valid record ({why})",
                              "rebuild with `tuneloop tasks build CONFIG --force`, or repair that line") from None


def _read_jsonl(path: Path) -> Iterator[dict]:
    if not path.exists():
        raise SourceError(f"task file {path} does not exist", "run `tuneloop tasks build CONFIG` first, or fix the path")
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise SourceError(f"{path}:{lineno} is not valid JSON ({exc.msg})",
                                  "repair or delete that line; task files are one JSON object per line") from exc
