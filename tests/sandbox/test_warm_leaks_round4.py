"""Red team, round 4 (issue 14): more ways for one task to leave something for the next on a warm (or
cold) bubblewrap slot. Each writer leaves its mark, often from a detached child (``setsid``, fork,
stopped or sleeping), and two readers on the same sandbox look for it: none may see it, and no
process of the writer may be left behind.
"""

from __future__ import annotations

import pytest

from tests.sandbox.test_hostile import probe

DETACH = "pid = os.fork()\nif pid == 0:\n    os.setsid()\n{child}\n    os._exit(0)\n"
LEAKS = {  # name: (writer body, reader body returning something that must equal the expected value, expected)
    # an abstract unix socket (network namespace, no file) held by a detached sleeping child
    "abstract_socket": (
        "import os, socket, time\ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\ns.bind('\\0tl-leak-r4')\n"
        + DETACH.format(child="    time.sleep(60)") + "return 1",
        "import socket\ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\ntry:\n    s.bind('\\0tl-leak-r4')\n"
        "except OSError as e:\n    return 'taken: %s' % e\nreturn 'free'", "free"),
    # a pseudo-terminal opened by a stopped detached child
    "pty_left_open": (
        "import os, pty, signal\nm, s = pty.openpty()\n" + DETACH.format(child="    os.kill(os.getpid(), signal.SIGSTOP)")
        + "return 1",
        "import os\nreturn sorted(x for x in os.listdir('/dev/pts') if x != 'ptmx')", []),
    # an advisory lock on a file every sandbox shares read-only (the interpreter's os.py)
    "flock_on_a_shared_file": (
        "import fcntl, os, time\nfd = os.open(os.__file__, os.O_RDONLY)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
        + DETACH.format(child="    time.sleep(60)") + "return 1",
        "import fcntl, os\nfd = os.open(os.__file__, os.O_RDONLY)\ntry:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "except OSError as e:\n    return 'locked: %s' % e\nreturn 'free'", "free"),
    # the environment and the working folder's parent: nothing written back to the warm server
    "environment": (
        "import os\nos.environ['TL_LEAK_R4'] = 'x'\nos.putenv('TL_LEAK_R4', 'x')\nreturn 1",
        "import os\nreturn os.environ.get('TL_LEAK_R4', 'none')", "none"),
    # cgroup files: none visible, none writable (a tiny memory.max would poison the slot)
    "cgroup_limits": (
        "import os\nfor d in ('/sys/fs/cgroup', '/sys/fs/cgroup/memory'):\n    for f in ('memory.max', 'pids.max', "
        "'memory.limit_in_bytes'):\n        try:\n            open(os.path.join(d, f), 'w').write('4096')\n"
        "        except OSError:\n            pass\nreturn 1",
        "import os\nreturn [p for p in ('/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/pids.max') if os.access(p, os.W_OK)]",
        []),
}


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
@pytest.mark.parametrize("name", list(LEAKS))
def test_nothing_a_task_leaves_reaches_the_next(bubblewrap_sandbox, name, cold):
    writer, reader, expected = LEAKS[name]
    wrote = bubblewrap_sandbox.run_one(probe(writer, "assert r == 1", cold=cold))
    assert wrote.status.value == "ok", (name, wrote.status, wrote.detail[:300])
    got = bubblewrap_sandbox.run([probe(reader, f"assert r == {expected!r}, r", cold=cold) for _ in range(2)])
    assert [r.status.value for r in got] == ["ok", "ok"], (name, [r.detail[:300] for r in got])
    assert bubblewrap_sandbox.stray_processes() == []


@pytest.mark.parametrize("name", ["abstract_socket", "pty_left_open", "flock_on_a_shared_file"])
def test_each_reader_sees_the_mark_inside_the_writers_own_request(bubblewrap_sandbox, name):
    """The control: run inside the writer's request (its child still alive), the reader finds the mark."""
    writer, reader, expected = LEAKS[name]
    body = (writer.replace("return 1", "import time\ntime.sleep(0.3)\n") + "\ndef _read():\n"
            + "".join("    " + ln + "\n" for ln in reader.splitlines()) + "\nreturn _read()")
    res = bubblewrap_sandbox.run_one(probe(body, f"assert r != {expected!r}, r"))
    assert res.status.value == "ok", (name, res.detail[:300])
    assert bubblewrap_sandbox.stray_processes() == []
