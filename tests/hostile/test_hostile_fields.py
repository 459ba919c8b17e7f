"""Hostile field input, round 2: values a real table, config or repository holds that the first
round did not try. Each test is the right behaviour for one finding; no model is needed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from connectors.feedback_tables.source import SqlFeedbackSource
from sdk.config import load_config
from sdk.errors import ConfigError

GOOD = "```python\ndef add(a, b):\n    return a + b\n```"


def _feedback_db(path: Path, rows: list[tuple]) -> Path:
    """A ``fb`` table without declared types (SQLite keeps each value's own type: text, blob, int)."""
    con = sqlite3.connect(path)
    con.execute("create table fb(id, message_id, prompt, response, rating)")
    con.executemany("insert into fb values (?, ?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    return path


def _read(db: Path, **options):
    opts = {"url": f"sqlite:///{db.name}", "table": "fb", "timezone": "UTC", "rating": "thumbs",
            "columns": {"row_id": "id", "message_id": "message_id"}, **options}
    return SqlFeedbackSource(opts, db.parent, "fb").read()


@pytest.mark.parametrize("ingest", ["rows", "fast"])
def test_blob_text_is_decoded_or_quarantined_never_trained_as_its_repr(tmp_path, ingest):
    db = _feedback_db(tmp_path / "fb.db", [
        (1, "m1", "Write add(a, b)", GOOD, 1),
        (2, "m2", "Write add(a, b) \u00e9".encode(), GOOD, 1),   # a BLOB holding valid UTF-8
        (3, "m3", b"\xff\xfe bad", GOOD, 1),                     # a BLOB that is no text
        (4, "m4", "Write add(a, b)", b"\xc3\x28 cut", 1),
    ])
    result = _read(db, ingest=ingest)
    texts = [m.content for e in result.sft_examples for m in e.messages]
    assert not any(t.startswith("b'") or "\\x" in t for t in texts), texts
    assert "Write add(a, b) \u00e9" in texts
    reasons = sorted(q.reason for q in result.quarantined)
    assert len(reasons) == 2 and all("not UTF-8" in r for r in reasons), reasons
    assert {q.raw.get("id") for q in result.quarantined} == {3, 4}
    assert len(result.sft_examples) == 2


def _config(tmp_path: Path, run_dir: str, path: str) -> Path:
    (tmp_path / "b.jsonl").write_text("")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"run_dir: {run_dir}\nsources:\n  - {{type: jsonl, domain: a, options: {{path: '{path}'}}}}\n")
    return cfg


def test_environment_variables_in_config_values_are_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("TL_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("TL_DATA", str(tmp_path))
    cfg = load_config(_config(tmp_path, "${TL_RUNS}/one", "${TL_DATA}/b.jsonl"))
    assert cfg.run_path == tmp_path / "runs" / "one"
    assert cfg.sources[0].options["path"] == f"{tmp_path}/b.jsonl"


def test_an_unset_environment_variable_is_one_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.delenv("TL_NOT_SET", raising=False)
    with pytest.raises(ConfigError) as err:
        load_config(_config(tmp_path, "${TL_NOT_SET}/one", "b.jsonl"))
    assert "TL_NOT_SET" in str(err.value) and "run_dir" in str(err.value)
    assert not list(tmp_path.glob("$*"))  # no folder literally named '${TL_NOT_SET}'


def test_a_literal_dollar_brace_is_written_twice(tmp_path):
    cfg = load_config(_config(tmp_path, "runs/$${x}", "b.jsonl"))
    assert cfg.run_dir == "runs/${x}"


def _bench_rows(n: int) -> bytes:
    import json
    rows = [{"task_id": f"T/{i}", "prompt": f'def f{i}(a):\n    """Add {i}."""\n',
             "canonical_solution": f"    return a + {i}\n", "entry_point": f"f{i}",
             "test": f"def check(candidate):\n    assert candidate(1) == {1 + i}\n"} for i in range(n)]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_a_truncated_gzip_keeps_the_rows_before_the_cut(tmp_path):
    import gzip
    import zlib

    from connectors.suites.jsonl_bench import load_benchmark
    data = _bench_rows(200)
    whole = gzip.compress(data)
    # a partial download: the stream stops mid-way (a deflate stream cut after the first rows)
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    cut = packer.compress(data) + packer.flush(zlib.Z_SYNC_FLUSH)
    path = tmp_path / "b.jsonl.gz"
    path.write_bytes(cut[: len(cut) * 3 // 4])
    result = load_benchmark(path, "humaneval", {}, domain="a", connector="jsonl")
    assert 50 < len(result.tasks) < 200
    assert [q.reason for q in result.quarantined if "truncated" in q.reason], result.quarantined
    path.write_bytes(whole)
    assert len(load_benchmark(path, "humaneval", {}, domain="a", connector="jsonl").tasks) == 200


def test_a_gz_name_on_a_plain_file_is_one_clear_error(tmp_path):
    from connectors.suites.jsonl_bench import load_benchmark
    from sdk.errors import SourceError
    path = tmp_path / "b.jsonl.gz"
    path.write_bytes(_bench_rows(2))
    with pytest.raises(SourceError) as err:
        load_benchmark(path, "humaneval", {}, domain="a", connector="jsonl")
    assert "not gzip" in str(err.value) and "rename" in err.value.fix


def test_the_traced_suite_run_sees_no_secret_of_the_caller(tmp_path, monkeypatch):
    """tasks build runs the repository's own suite on this machine (to map tests to functions):
    a conftest.py there must not read the caller's credentials from the environment."""
    from connectors.suites.pytest_collect import run_suite
    repo = tmp_path / "repo"
    (repo / "mylib").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "mylib" / "__init__.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests" / "test_add.py").write_text("from mylib import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    # the suite's own test reads its environment (a file written outside the run's temporary folder would not
    # reach the host: the run is isolated in bubblewrap where that works), its outcome says what it saw
    (repo / "tests" / "test_env.py").write_text(
        "import json, os\n\n\ndef test_env():\n    env = dict(os.environ)\n"
        "    assert 'AWS_SECRET_ACCESS_KEY' not in env and 'hunter2' not in json.dumps(env)\n"
        f"    assert env['TUNELOOP_TEST_TIMEOUT'] == '30' and env['PATH'] and env['HOME'] != {str(Path.home())!r}\n")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter2")
    monkeypatch.setenv("TUNELOOP_TEST_TIMEOUT", "30")
    run = run_suite(repo, "tests", repo / "mylib")
    assert {i.name: i.outcome for i in run.items} == {"test_add": "passed", "test_env": "passed"}, \
        [i.detail for i in run.items]


def test_links_out_of_the_repository_are_never_read(tmp_path, caplog):
    """A symlink in the repository that points outside it (a key, another checkout) is left out of
    task files and snapshots with a warning; a link to a file inside the repository is kept."""
    from connectors.suites.file_tasks import _walk
    from connectors.suites.pyrepo import package_data, read_package, support_files
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.py").write_text('def leaked():\n    return "SECRET"\n')
    (outside / "id_rsa").write_text("SECRET KEY\n")
    repo = tmp_path / "repo"
    pkg = repo / "mylib"
    (repo / "tests").mkdir(parents=True)
    pkg.mkdir()
    (pkg / "__init__.py").write_text("def add(a, b):\n    return a + b\n")
    (pkg / "real.txt").write_text("inside\n")
    (pkg / "leak.py").symlink_to(outside / "leak.py")
    (pkg / "data.txt").symlink_to(outside / "id_rsa")
    (pkg / "alias.txt").symlink_to(pkg / "real.txt")
    (repo / "tests" / "helper_data.txt").symlink_to(outside / "id_rsa")
    modules, files = read_package(repo, pkg)
    files.update(package_data(repo, pkg))
    files.update(support_files(repo, "tests", pkg))
    assert "SECRET" not in "".join(files.values())
    assert {m.path for m in modules} == {"mylib/__init__.py"}
    assert files["mylib/alias.txt"] == "inside\n"
    assert "mylib/leak.py" not in _walk(repo) and "mylib/alias.txt" in _walk(repo)
    assert any("outside the repository" in r.getMessage() and "leak.py" in r.getMessage() for r in caplog.records)


def test_feedback_commands_and_adapter_commands_use_one_store(tmp_path, monkeypatch):
    """With $TUNELOOP_STORE_URL set, `feedback create-key` wrote ./feedback_store.db while `adapters`
    read the variable's store and answered "no application"."""
    from typer.testing import CliRunner

    from feedback.adapters_cli import app as adapters_app
    from feedback.cli import app as feedback_app
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TUNELOOP_STORE_URL", f"sqlite:///{tmp_path / 'shared.db'}")
    made = CliRunner().invoke(feedback_app, ["create-key", "support-bot"])
    assert made.exit_code == 0, made.output
    assert not (tmp_path / "feedback_store.db").exists()
    listed = CliRunner().invoke(adapters_app, ["list", "-a", "support-bot"])
    assert "no application" not in listed.output, listed.output
    keys = CliRunner().invoke(feedback_app, ["keys", "list", "--json"])
    assert '"support-bot"' in keys.output


def _adapter(tmp_path: Path, config: object, weights: bytes | None = None) -> Path:
    """An adapter folder with ``config`` as adapter_config.json and a valid (or the given) weights file."""
    import json
    import struct
    folder = tmp_path / "adapter"
    folder.mkdir(exist_ok=True)
    (folder / "adapter_config.json").write_text(json.dumps(config))
    if weights is None:
        header = json.dumps({"a.lora_A.weight": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}).encode()
        weights = struct.pack("<Q", len(header)) + header + bytes(16)
    (folder / "adapter_model.safetensors").write_bytes(weights)
    return folder


GOOD_LORA = {"peft_type": "LORA", "r": 8, "lora_alpha": 16, "target_modules": ["q_proj"]}


@pytest.mark.parametrize("config,words", [([1, 2], "not a JSON object"),
                                          ({**GOOD_LORA, "r": "sixteen"}, "`r`"),
                                          ({**GOOD_LORA, "rank_pattern": {"q_proj": "big"}}, "rank_pattern"),
                                          ({**GOOD_LORA, "rank_pattern": [64]}, "rank_pattern"),
                                          ({**GOOD_LORA, "modules_to_save": "lm_head"}, "modules_to_save")])
def test_a_hand_edited_adapter_config_is_one_serve_error(tmp_path, config, words):
    from sdk.serve.preflight import (
        ServeError,
        check_adapter_servable,
        lora_rank_plan,
        read_adapter_config,
    )
    folder = _adapter(tmp_path, config)
    with pytest.raises(ServeError) as err:
        cfg = read_adapter_config(folder)
        check_adapter_servable(cfg)
        lora_rank_plan(cfg)
    assert words in str(err.value)


def test_a_truncated_weights_file_is_refused_before_it_is_hashed(tmp_path):
    from sdk.serve.preflight import ServeError, adapter_digest
    whole = _adapter(tmp_path, GOOD_LORA)
    assert len(adapter_digest(whole)) == 64
    data = (whole / "adapter_model.safetensors").read_bytes()
    for cut in (data[:-5], data[:20], b"\x00" * 7, b"not safetensors at all"):
        (whole / "adapter_model.safetensors").write_bytes(cut)
        with pytest.raises(ServeError) as err:
            adapter_digest(whole)
        assert "adapter_model.safetensors" in str(err.value) and "copy" in err.value.fix


def test_an_unreadable_lineage_is_not_silently_dropped_from_a_registration(tmp_path):
    from feedback.registration import registration_from_folder
    from sdk.errors import TuneloopError
    folder = _adapter(tmp_path, GOOD_LORA)
    (folder / "lineage.json").write_text('{"stage": ')
    with pytest.raises(TuneloopError) as err:
        registration_from_folder(folder, base_model="some/base")
    assert "lineage.json" in str(err.value)


def test_a_repositorys_git_config_runs_no_program_when_change_tasks_are_mined(tmp_path):
    """A repository handed over with its .git folder can name a textconv driver for *.py: `git diff`
    ran it on this machine while mining change tasks, and the reference diff came back empty."""
    from connectors.history.gitrepo import GitRepo
    from tests.connectors import history_repo
    repo = tmp_path / "r"
    repo.mkdir()
    history_repo.build(repo)
    gitrepo = GitRepo(repo)
    last = gitrepo.commits()[-1]
    clean = gitrepo.diff(last.parent, last.sha, ["calc/ops.py"])
    marker, script = tmp_path / "ran", tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    script.chmod(0o755)
    config = repo / ".git" / "config"
    config.write_text(config.read_text() + f'[diff "evil"]\n\ttextconv = {script}\n[core]\n\tfsmonitor = {script}\n')
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("*.py diff=evil\n")
    assert gitrepo.diff(last.parent, last.sha, ["calc/ops.py"]) == clean != ""
    gitrepo.changes(last.parent, last.sha)
    gitrepo.snapshot(last.sha, 1 << 20)
    assert not marker.exists()


@pytest.mark.parametrize("edit", ["bad_split", "no_prompt", "a_list", "bad_verifier"])
def test_a_hand_edited_task_file_is_one_error_naming_its_line(tmp_path, edit):
    import json

    from sdk.errors import SourceError
    from sdk.tasks.records import Message, Source, Task, UnitTestVerifier
    from sdk.tasks.taskset import TaskSet
    tasks = [Task(domain="d", prompt=(Message(role="user", content=f"add {i}"),), reference="x = 1\n",
                  verifier=UnitTestVerifier(tests={"test_x.py": "def test_x():\n    assert True\n"}, entry_point="f"),
                  source=Source(connector="jsonl", uri="b.jsonl", locator=str(i))) for i in range(3)]
    path = TaskSet(tasks).save(tmp_path / "tasks" / "tasks.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    if edit == "bad_split":
        rows[1]["split"] = "bogus"
    elif edit == "no_prompt":
        rows[1].pop("prompt")
    elif edit == "a_list":
        rows[1] = [1, 2]
    else:
        rows[1]["verifier"] = "pytest"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(SourceError) as err:
        TaskSet.load(path)
    assert f"{path}:2" in str(err.value) and "tasks build" in err.value.fix


def test_a_file_that_is_not_sqlite_is_one_source_error_naming_it(tmp_path):
    from sdk.errors import SourceError
    (tmp_path / "fb.db").write_text("id,prompt,response\n1,a,b\n")  # a CSV export named .db
    with pytest.raises(SourceError) as err:
        _read(tmp_path / "fb.db")
    assert "not a database" in str(err.value) and "url:" in err.value.fix


def test_a_folder_given_as_a_file_is_called_a_folder(tmp_path):
    from connectors.suites.jsonl_bench import load_benchmark
    from sdk.errors import SourceError
    (tmp_path / "bench.jsonl").mkdir()
    with pytest.raises(SourceError) as err:
        load_benchmark(tmp_path / "bench.jsonl", "humaneval", {}, domain="a", connector="jsonl")
    assert "is a folder" in str(err.value)
    (tmp_path / "fb.db").mkdir()
    with pytest.raises(SourceError) as err:
        _read(tmp_path / "fb.db")
    assert "is a folder" in str(err.value)


@pytest.mark.parametrize("body,words", [
    ("- a\n", ["must hold a mapping"]),
    ("store_url: 5\n", ["`application`", "`run_config`", "is required"]),
    ("store_url: s\napplication: a\nadapter: b\nrun_config: r.yaml\nwatch: yes\n", ["unknown key `watch`", "min_new_feedback"]),
    ("store_url: ${TL_NOT_SET_EITHER}\napplication: a\nadapter: b\nrun_config: r.yaml\n", ["TL_NOT_SET_EITHER"]),
])
def test_a_wrong_loop_config_names_each_wrong_key(tmp_path, monkeypatch, body, words):
    from feedback.loop import load_loop_config
    monkeypatch.delenv("TL_NOT_SET_EITHER", raising=False)
    (tmp_path / "r.yaml").write_text("sources: []\n")
    (tmp_path / "loop.yaml").write_text(body)
    with pytest.raises(ConfigError) as err:
        load_loop_config(tmp_path / "loop.yaml")
    text = str(err.value)
    assert all(w in text for w in words), text
    assert "LoopConfig" not in text and "pydantic" not in text


def test_a_loop_config_reads_environment_variables(tmp_path, monkeypatch):
    from feedback.loop import load_loop_config
    monkeypatch.setenv("TL_STORE", "postgresql://u:secret@db/feedback")
    (tmp_path / "r.yaml").write_text("sources: []\n")
    (tmp_path / "loop.yaml").write_text("store_url: ${TL_STORE}\napplication: a\nadapter: b\nrun_config: r.yaml\n")
    assert load_loop_config(tmp_path / "loop.yaml").store_url == "postgresql://u:secret@db/feedback"


@pytest.mark.parametrize("ingest", ["rows", "fast"])
def test_a_quarantined_feedback_row_says_which_row_it_is(tmp_path, ingest):
    """`tasks build` prints 'e.g. <locator>: <reason>'; the locator was empty ('(row)') for bad rows."""
    db = _feedback_db(tmp_path / "fb.db", [(1, "m1", "Write add(a, b)", GOOD, 1), (7, "m7", None, GOOD, 1),
                                           (9, "m9", "Write add(a, b)", GOOD, "yes")])
    result = _read(db, ingest=ingest)
    assert sorted(q.source.locator for q in result.quarantined) == ["id=7;message_id=m7", "id=9;message_id=m9"]


def test_a_test_module_that_hangs_at_import_costs_its_own_tests_only(tmp_path):
    from connectors.suites.pytest_collect import run_suite
    repo = tmp_path / "repo"
    (repo / "mylib").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "mylib" / "__init__.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests" / "test_add.py").write_text("from mylib import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    (repo / "tests" / "test_hang.py").write_text("import time\n\nwhile True:\n    time.sleep(0.1)\n")
    run = run_suite(repo, "tests", repo / "mylib", timeout_s=30)  # a deadline a loaded machine meets
    assert [(i.nodeid, i.outcome) for i in run.items] == [("tests/test_add.py::test_add", "passed")]
    assert any("tests/test_hang.py" in e and "did not finish" in e for e in run.errors), run.errors
