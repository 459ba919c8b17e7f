"""The warm server's warm-up (issue 14): before its first supervisor, ``tl_zygote.warm_up`` runs
a synthetic request through the real harness code against a forked candidate, and the
candidate's side of calls in-process, so forked supervisors and candidates inherit quickened code. It must really run that path (each round's check passes)
and leave nothing behind in the server: no process, descriptor, working folder, ``sys.path``
entry or current-candidate reference. Run in a child interpreter (the runner modules are
imported from the runner folder, as in the sandbox)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sdk.sandbox import pyruntime

SCRIPT = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import tl_remote, tl_zygote
os.chdir(sys.argv[3])
fds, path = sorted(os.listdir("/proc/self/fd")), list(sys.path)
passed, answered = tl_zygote.warm_up(sys.argv[2], rounds=int(sys.argv[4]))
try:
    children = os.waitpid(-1, os.WNOHANG)[0]
except ChildProcessError:
    children = None
print(json.dumps({"passed": passed, "answered": answered, "fds": fds == sorted(os.listdir("/proc/self/fd")), "path": path == sys.path,
                  "cwd": os.getcwd(), "current": len(tl_remote.CURRENT), "children": children}))
"""


def _warm_up(run_dir: Path, cwd: Path, rounds: int) -> dict:
    out = subprocess.run([sys.executable, "-I", "-S", "-c", SCRIPT, str(pyruntime.RUNNER_DIR), str(run_dir), str(cwd), str(rounds)],
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_warm_up_runs_the_harness_path_and_leaves_nothing(tmp_path):
    got = _warm_up(tmp_path / "run", tmp_path, rounds=2)
    assert got == {"passed": 2, "answered": 96, "fds": True, "path": True, "cwd": str(tmp_path), "current": 0, "children": None}, got


def test_a_failed_warm_up_costs_speed_only(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    got = _warm_up(blocker / "run", tmp_path, rounds=1)   # the run folder cannot be made: no round passes
    assert got == {"passed": 0, "answered": 48, "fds": True, "path": True, "cwd": str(tmp_path), "current": 0, "children": None}, got


class _Group:
    """Stands in for a slot's cgroup: records each ``set_limits`` call; ``fail`` raises once."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []
        self.fail = False

    def set_limits(self, memory_mb: int, processes: int) -> None:
        self.calls.append((memory_mb, processes))
        if self.fail:
            self.fail = False
            raise OSError("write refused")


def test_slot_limits_are_written_only_when_they_change():
    from sdk.sandbox.warm import Zygote

    z = object.__new__(Zygote)   # no server: only the limit bookkeeping
    z.cgroup, z._limits = _Group(), None
    z.limit(576, 72)
    z.limit(576, 72)
    assert z.cgroup.calls == [(576, 72)]
    z.limit(1088, 72)
    assert z.cgroup.calls[-1] == (1088, 72) and len(z.cgroup.calls) == 2
    z.cgroup.fail = True
    z.limit(576, 72)   # refused: not recorded, so the next request writes again
    z.limit(576, 72)
    assert z.cgroup.calls[-2:] == [(576, 72), (576, 72)]
    z.limit(576, 72)
    assert len(z.cgroup.calls) == 4


def test_supervisor_reads_output_files_capped(tmp_path, monkeypatch):
    """``tl_supervisor.read_capped`` (plain descriptor reads since issue 14): the first ``cap`` bytes
    as text, the file's full size; a missing file is ("", 0)."""
    monkeypatch.syspath_prepend(str(pyruntime.RUNNER_DIR))
    import tl_supervisor

    cases = {"empty": b"", "small": b"hello\n", "big": b"x" * 300_000, "utf": "é€".encode() * 10 + b"\xff"}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        for cap in (0, 5, 1 << 16, 1 << 20):
            assert tl_supervisor.read_capped(str(tmp_path / name), cap) == (data[:cap].decode("utf-8", "replace"), len(data))
    assert tl_supervisor.read_capped(str(tmp_path / "missing"), 10) == ("", 0)
