"""The repository's own pytest suite (tasks build's traced run) runs in bubblewrap: a hostile conftest.py
cannot write outside its temporary folder nor reach a TCP service on 127.0.0.1, and the outcomes are still read."""

from __future__ import annotations

import logging
import os
import pwd
import socket
import uuid
from pathlib import Path

import pytest

from connectors.suites import isolate
from connectors.suites.pytest_collect import run_suite
from sdk.errors import SourceError

CONFTEST = '''
import os, socket
from pathlib import Path

def _write(path):
    try:
        Path(path).write_text("pwned")
        return "written"
    except OSError as exc:
        return type(exc).__name__

def _connect(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        return "connected"
    except OSError as exc:
        return type(exc).__name__

RESULTS = {{"repo": _write({repo_file!r}), "listener": _connect({port}), "postgres": _connect(5432)}}
if Path({home_flag!r}).exists():
    RESULTS["home"] = _write({home_file!r})
os.environ.update({{"TL_" + k.upper(): v for k, v in RESULTS.items()}})
'''

TESTS = '''
import os
from mylib import add

def test_add():
    assert add(1, 2) == 3

def test_repo_write_denied():
    assert os.environ["TL_REPO"] != "written"

def test_listener_unreachable():
    assert os.environ["TL_LISTENER"] != "connected"

def test_postgres_unreachable():
    assert os.environ["TL_POSTGRES"] != "connected"

def test_home_write_denied():
    assert os.environ.get("TL_HOME", "not tried") != "written"
'''


def _bwrap_or_skip() -> None:
    if isolate._bwrap()[0] is None:
        pytest.skip(f"bubblewrap does not work here: {isolate._bwrap()[1]}")


def _repo(tmp_path: Path, port: int, home_file: str, try_home: bool) -> Path:
    repo = tmp_path / "repo"
    (repo / "mylib").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "mylib" / "__init__.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests" / "test_m.py").write_text(TESTS)
    (repo / "tests" / "conftest.py").write_text(CONFTEST.format(
        repo_file=str(repo / "pwned.txt"), port=port, home_flag=str(repo / "try_home"), home_file=home_file))
    if try_home:
        (repo / "try_home").write_text("")
    return repo


@pytest.fixture
def listener():
    """A TCP server on 127.0.0.1 (an ephemeral port) that the host can reach: the suite must not."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    yield srv.getsockname()[1]
    srv.close()


def test_hostile_conftest_is_contained(tmp_path: Path, listener: int) -> None:
    _bwrap_or_skip()
    socket.create_connection(("127.0.0.1", listener), timeout=5).close()  # reachable from the host
    home_file = os.path.join(pwd.getpwuid(os.getuid()).pw_dir, f"tuneloop-pwned-{uuid.uuid4().hex}.txt")
    repo = _repo(tmp_path, listener, home_file, try_home=True)
    try:
        run = run_suite(repo, "tests", repo / "mylib", timeout_s=120, isolate="on")
    finally:
        leaked = Path(home_file).exists()
        Path(home_file).unlink(missing_ok=True)
    assert not leaked
    assert not (repo / "pwned.txt").exists()
    outcomes = {i.name: i.outcome for i in run.items}
    overlay = isolate._overlay_ok(isolate._bwrap()[0])  # the write lands in the overlay's tmpfs, not on the host
    assert outcomes == {"test_add": "passed", "test_repo_write_denied": "failed" if overlay else "passed",
                        "test_listener_unreachable": "passed", "test_postgres_unreachable": "passed",
                        "test_home_write_denied": "passed"}, run.errors
    assert any("add" in c[1] for i in run.items if i.name == "test_add" for c in i.calls)  # still traced


def test_unisolated_run_is_not_contained(tmp_path: Path, listener: int) -> None:
    """The control: with ``isolate: off`` the same conftest writes into the repository and reaches the listener."""
    repo = _repo(tmp_path, listener, "/nonexistent/never", try_home=False)
    run = run_suite(repo, "tests", repo / "mylib", timeout_s=120, isolate="off")
    outcomes = {i.name: i.outcome for i in run.items}
    assert (repo / "pwned.txt").exists()
    assert outcomes["test_repo_write_denied"] == "failed" and outcomes["test_listener_unreachable"] == "failed"
    assert outcomes["test_add"] == "passed"


def test_modes_when_bwrap_cannot_run(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(isolate, "_bwrap", lambda: (None, "no namespaces for you"))
    monkeypatch.setattr(isolate, "_warned", [])
    cmd, env = ["python", "-m", "pytest"], {"PATH": "/usr/bin"}
    with pytest.raises(SourceError, match="no namespaces for you"):
        isolate.isolate_command(cmd, env, mode="on", cwd="/", tmp="/tmp", keep=())
    with caplog.at_level(logging.WARNING, logger="tuneloop.connectors.pytest"):
        assert isolate.isolate_command(cmd, env, mode="auto", cwd="/", tmp="/tmp", keep=()) == (cmd, env)
        assert isolate.isolate_command(cmd, env, mode="auto", cwd="/", tmp="/tmp", keep=()) == (cmd, env)
    assert len([r for r in caplog.records if "UNISOLATED" in r.getMessage()]) == 1
    assert isolate.isolate_command(cmd, env, mode="off", cwd="/", tmp="/tmp", keep=()) == (cmd, env)
    with pytest.raises(SourceError, match="isolate must be one of"):
        isolate.isolate_command(cmd, env, mode="yes", cwd="/", tmp="/tmp", keep=())


def test_wrap_argv_hides_tmp_and_home_and_binds_back_what_the_run_reads(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolate, "_homes", lambda: ["/root-fake"])
    repo, run_tmp = tmp_path / "repo", tmp_path / "run"
    repo.mkdir()
    run_tmp.mkdir()
    argv = isolate.wrap_argv("bwrap", str(run_tmp), (str(repo), str(repo / "pkg"), "/usr/lib"), str(repo))
    text = " ".join(argv)
    assert "--unshare-net" in argv and "--ro-bind / /" in text and "--tmpfs /tmp" in text
    assert "--tmpfs /root-fake" in text and "--remount-ro /root-fake" in text
    assert f"--ro-bind {repo} {repo}" in text  # under /tmp: bound back read-only
    assert f"--bind {run_tmp} {run_tmp}" in text and f"--ro-bind {run_tmp}" not in text
    assert "--ro-bind /usr/lib" not in text and str(repo / "pkg") not in text  # visible already / missing
    assert argv[-3:] == ["--chdir", str(repo), "--"] and "--tmp-overlay" not in argv
    over = isolate.wrap_argv("bwrap", str(run_tmp), (str(repo),), str(repo), overlay=True)
    assert " ".join(over).endswith(f"--bind {run_tmp} {run_tmp} --overlay-src {repo} --tmp-overlay {repo} "
                                   f"--remount-ro /root-fake --chdir {repo} --")


def test_a_suite_that_writes_beside_its_tests_runs_and_leaves_the_repository_unchanged(tmp_path: Path) -> None:
    """Where overlays work, a test writing a file into its repository and reading it back passes
    under isolation, and the file never reaches the host's repository."""
    _bwrap_or_skip()
    if not isolate._overlay_ok(isolate._bwrap()[0]):
        pytest.skip("bwrap cannot mount an overlay here: the repository is read-only instead")
    repo = tmp_path / "repo"
    (repo / "mylib").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "mylib" / "__init__.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests" / "test_w.py").write_text(
        "from pathlib import Path\nfrom mylib import add\n\n\ndef test_snapshot():\n"
        "    out = Path(__file__).with_name('snap.txt')\n    out.write_text(str(add(1, 2)))\n"
        "    assert out.read_text() == '3'\n")
    run = run_suite(repo, "tests", repo / "mylib", timeout_s=120, isolate="on")
    assert {i.name: i.outcome for i in run.items} == {"test_snapshot": "passed"}, run.errors
    assert not (repo / "tests" / "snap.txt").exists()
