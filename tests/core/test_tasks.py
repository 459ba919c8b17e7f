"""Task records, task sets and splits."""

import pytest
from pydantic import ValidationError

from sdk.tasks import Message, Source, Split, Task, TaskSet, UnitTestVerifier
from sdk.tasks.split import assign_splits, logic_key


def make(name: str, body: str = "return a + b", domain: str = "acme/math") -> Task:
    ref = f"def {name}(a, b):\n    {body}\n"
    return Task(domain=domain, prompt=(Message(role="user", content=f"Write {name}"),),
                verifier=UnitTestVerifier(tests={"test_x.py": f"from solution import {name}\n"}, entry_point=name),
                reference=ref, source=Source(connector="test"))


def test_id_is_a_stable_content_hash():
    a, b = make("add"), make("add")
    assert a.id == b.id and len(a.id) == 16
    assert make("sub", "return a - b").id != a.id
    with pytest.raises(ValidationError, match="content hash"):
        Task(**{**a.model_dump(), "id": "0" * 16})


def test_split_and_difficulty_keep_the_id():
    a = make("add")
    assert a.with_(split=Split.HELDOUT, difficulty=0.5).id == a.id


def test_changing_an_id_field_gives_the_new_content_hash():
    a = make("add")
    system = (Message(role="system", content="Be brief."), *a.prompt)
    b = a.with_(prompt=system, split=Split.HELDOUT)
    assert b.id != a.id and b.id == b.content_hash() and b.split == Split.HELDOUT
    assert Task.model_validate(b.model_dump(mode="json")) == b  # a saved copy loads back (id checked)
    assert b.with_(prompt=a.prompt).id == a.id
    strict = a.verifier.model_copy(update={"timeout_s": 3.0})
    assert a.with_(verifier=strict).id not in (a.id, b.id)
    assert a.with_(reference="def add(a, b):\n    return b + a\n").id != a.id
    assert a.with_(domain="acme/other").id != a.id
    with pytest.raises(ValidationError, match="content hash"):
        a.with_(prompt=system, id=a.id)  # a stale id given explicitly is refused
    with pytest.raises(ValidationError):
        a.with_(prompt=())


def test_framework_is_an_enum_with_the_same_json():
    from sdk.types import Framework

    a = make("add")
    old = {**a.model_dump(mode="json")}
    old["verifier"] = {**old["verifier"], "framework": "script"}  # a task file as written before the enum
    t = Task.model_validate({**old, "id": ""})
    assert t.verifier.framework is Framework.SCRIPT and t.model_dump(mode="json")["verifier"]["framework"] == "script"
    assert a.model_dump_json().count('"framework":"pytest"') == 1
    with pytest.raises(ValidationError):
        UnitTestVerifier(tests={"t.py": "x"}, framework="nose")


def test_verifier_rejects_paths_outside_the_task_folder():
    with pytest.raises(ValidationError, match="relative"):
        UnitTestVerifier(tests={"../evil.py": "x"})


def test_taskset_roundtrip_and_dataset(tmp_path):
    ts = TaskSet([make("add"), make("mul", "return a * b"), make("add")])
    assert len(ts) == 2
    path = ts.save(tmp_path / "tasks.jsonl")
    back = TaskSet.load(path)
    assert back.version == ts.version and [t.id for t in back] == [t.id for t in ts]
    ds = ts.to_dataset()
    assert ds.num_rows == 2 and set(ds.column_names) >= {"id", "prompt", "task_json"}
    assert Task.model_validate_json(ds[0]["task_json"]).id == ds[0]["id"]


def test_bad_jsonl_line_names_the_line(tmp_path):
    from sdk.errors import SourceError

    path = tmp_path / "tasks.jsonl"
    path.write_text('{"not": "a task"\n')
    with pytest.raises(SourceError, match="tasks.jsonl:1"):
        TaskSet.load(path)


def test_logic_key_ignores_names_and_docstrings():
    a = make("add")
    b = make("plus")
    assert logic_key(a) == logic_key(b)
    assert logic_key(a) != logic_key(make("mul", "return a * b"))


def test_splits_are_deterministic_and_keep_near_copies_together():
    tasks = [make(f"f{i}", f"return a + {i}") for i in range(40)] + [make("g", "return b", domain="humaneval")]
    out1, q1 = assign_splits(tasks, 0.4, ["humaneval"], seed=0)
    out2, _ = assign_splits(list(reversed(tasks)), 0.4, ["humaneval"], seed=0)
    assert {t.id: t.split for t in out1} == {t.id: t.split for t in out2}
    splits = [t.split for t in out1]
    assert splits.count(Split.OOD) == 1 and 5 < splits.count(Split.HELDOUT) < 30
    # a renamed copy in another domain lands in the same split as the original
    copy = make("f3_copy", "return a + 3", domain="acme/other")
    out3, _ = assign_splits(tasks + [copy], 0.4, ["humaneval"], seed=0)
    by_id = {t.id: t.split for t in out3}
    assert by_id[copy.id] == by_id[make("f3", "return a + 3").id]
    # an exact logic duplicate in the same domain is quarantined, not silently dropped
    dup = make("f3_dup", "return a + 3")
    _, q = assign_splits(tasks + [dup], 0.4, ["humaneval"], seed=0)
    assert len(q) == 1 and q[0].reason.startswith("duplicate_logic")
