"""Issue 13, item 5: a saved task set stores each repository once (content-addressed snapshots)."""

from __future__ import annotations

import json

import pytest

from sdk.errors import SourceError
from sdk.tasks.records import Message, Quarantined, Source, Task, UnitTestVerifier
from sdk.tasks.taskset import TaskSet

REPO = {f"pkg/mod{i}.py": f"def f{i}():\n    return {i}\n" + "# padding\n" * 1000 for i in range(10)}  # ~100 KB


def _task(i: int, files: dict[str, str]) -> Task:
    v = UnitTestVerifier(files=files, target_path="pkg/mod0.py", entry_point="f0",
                         tests={"tests/test_x.py": f"def test_{i}():\n    assert True\n"})
    return Task(domain="d/x", prompt=(Message(role="user", content=f"write f0 #{i}"),), verifier=v,
                reference="def f0():\n    return 0\n", source=Source(connector="pytest"))


def test_each_repository_is_stored_once_and_loads_back_the_same(tmp_path):
    other = {"other/a.py": "X = 1\n"}
    tasks = [_task(i, REPO) for i in range(50)] + [_task(99, other)]
    quarantined = [Quarantined(reason="weak_tests: x", task=_task(100, REPO))]
    path = TaskSet(tasks, quarantined).save(tmp_path / "tasks.jsonl")
    snapshots = sorted((tmp_path / "snapshots").glob("*.json"))
    assert len(snapshots) == 2
    repo_bytes = len(json.dumps(REPO))
    total = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
    assert total < repo_bytes + 51 * 2_000  # the repository once plus a small line per task, not 51 copies
    line = json.loads(path.read_text().splitlines()[0])
    assert line["verifier"]["files"] == {} and len(line["files_snapshot"]) == 32
    loaded = TaskSet.load(path)
    assert [t.id for t in loaded] == [t.id for t in tasks] and list(loaded) == tasks
    assert loaded.tasks[0].verifier.files is loaded.tasks[1].verifier.files  # shared, not copied per task
    assert loaded.quarantined[0].task == quarantined[0].task


def test_old_inline_files_still_load(tmp_path):
    task = _task(1, REPO)
    (tmp_path / "tasks.jsonl").write_text(json.dumps(task.model_dump(mode="json")) + "\n")
    assert list(TaskSet.load(tmp_path / "tasks.jsonl")) == [task]


def test_a_missing_snapshot_is_a_clear_error(tmp_path):
    path = TaskSet([_task(1, REPO)]).save(tmp_path / "tasks.jsonl")
    for snap in (tmp_path / "snapshots").iterdir():
        snap.unlink()
    with pytest.raises(SourceError) as err:
        TaskSet.load(path)
    assert "snapshot" in err.value.what and "snapshots/" in err.value.fix
