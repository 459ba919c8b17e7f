"""Red team, round 7 (issue 14): the warm slot's reset as an attacker sees it.

Between two warm requests the server sends ``S <pid>`` on its channel and a root helper on the host
(``sdk/sandbox/slotreset.py``), joined to the slot's mount namespace, detaches and remounts ``/tmp`` and
``/dev/shm`` by path, chowns them and ``/tmp/run``, and may write the slot's ``ns_last_pid``. Each test
here is a task that tries to steer that root helper: forge the ``S`` (or ``D``) line on any channel it can
reach, put a symlink where the helper mounts or chowns, or write the pid counter itself. Stopped when the
request itself ends as an ordinary ``ok``, the next tasks are honest ``ok`` on fresh real folders, and
nothing outside the slot moved.
"""

from __future__ import annotations

import os

import pytest

from tests.sandbox.test_hostile import probe

# the slot's other processes' fds through /proc (bwrap's init in the slot is dumpable and holds the pipes
# to the host: stdin, the requests, and stdout, the channel the host reads S/R/D lines from), tried by number
# (no listdir, which the audit hook flags); returns the fds it opened and wrote
FORGE = ("import os\nframe = b'\\nS 1\\nD {\"exit\": 0, \"clean\": true}\\nS 7\\n'\nsent = []\n"
         "for pid in range(1, 64):\n    if pid == os.getpid():\n        continue\n    for n in range(0, 32):\n"
         "        p = '/proc/%d/fd/%d' % (pid, n)\n        try:\n            fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK)\n"
         "        except OSError:\n            continue\n        try:\n            if 'pipe' in os.readlink(p):\n"
         "                os.write(fd, frame)\n                sent.append(p)\n        except OSError:\n            pass\n"
         "        os.close(fd)\nreturn sent")
# the paths the helper mounts and chowns, and their parents: renamed away, or replaced by symlinks to
# a folder outside the task's own (a root chown or mount would follow them)
REDIRECT = ("import os\ndone = []\n"
            "for a, b in (('/dev/shm', '/dev/shm_x'), ('/tmp', '/tmp_x'), ('/dev', '/dev_x'), ('/tmp/run', '/tmp/run_x')):\n"
            "    try:\n        os.rename(a, b)\n        done.append('rename ' + a)\n    except OSError:\n        continue\n"
            "    try:\n        os.symlink('/usr', a)\n        done.append('symlink ' + a)\n    except OSError:\n        pass\n"
            "try:\n    os.symlink('/usr', '/tmp/run/x')\nexcept OSError:\n    pass\n"
            "return done")
# the next task: both roots are real folders on their own mounts, /tmp/run a folder, /usr untouched
FRESH = ("import os\nout = []\n"
         "for p in ('/tmp', '/dev/shm'):\n    out.append(os.path.islink(p) or not os.path.ismount(p))\n"
         "out.append(os.path.islink('/tmp/run'))   # (cold runs have none)\n"
         "out.append(not os.path.isdir('/usr/lib'))   # a tmpfs mounted over /usr hides it\n"
         "return out")


def _honest_after(sb, cold):
    got = sb.run([probe(FRESH, "assert not any(r), r", cold=cold) for _ in range(2)])
    assert [r.status.value for r in got] == ["ok", "ok"], [(r.detail[:300], r.stdout[-300:]) for r in got]


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
def test_a_forged_reset_or_done_line_reaches_no_channel(bubblewrap_sandbox, cold):
    """``S``/``D`` frames written to every fd the candidate holds and to every ``/proc/*/fd`` it can open:
    the request still ends as the check says (a forged ``D`` would end it without an answer), and the
    next tasks run on fresh roots."""
    res = bubblewrap_sandbox.run_one(probe(FORGE, "assert r == [], r", cold=cold))
    assert res.status.value == "ok", (res.status, res.detail[:300])
    _honest_after(bubblewrap_sandbox, cold)
    assert bubblewrap_sandbox.stray_processes() == []


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
def test_the_roots_the_helper_remounts_cannot_be_redirected(bubblewrap_sandbox, cold):
    """Renaming ``/tmp``, ``/dev/shm``, ``/dev`` (mount points) fails; ``/tmp/run`` may be renamed (the
    task's own folder) but the helper makes a new one in a fresh tmpfs, so no symlink left in the old
    ``/tmp`` is followed by root."""
    res = bubblewrap_sandbox.run_one(probe(REDIRECT, "assert not [d for d in r if 'run' not in d], r", cold=cold))
    assert res.status.value == "ok", (res.status, res.detail[:300])
    _honest_after(bubblewrap_sandbox, cold)


def test_the_slot_cannot_write_its_pid_counter_itself(bubblewrap_sandbox):
    """Only the host's helper writes ``ns_last_pid`` (it needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN over
    the slot's user namespace): the candidate's write is refused."""
    body = ("try:\n    with open('/proc/sys/kernel/ns_last_pid', 'w') as fh:\n        fh.write('1')\n"
            "    return 'wrote'\nexcept OSError as e:\n    return e.errno")
    res = bubblewrap_sandbox.run_one(probe(body, "assert r != 'wrote', r"))
    assert res.status.value == "ok", res.detail[:300]


# found here: the slot's root (bwrap's tmpfs, owned by the task's uid) was writable and a warm slot keeps it,
# so a file at /, under /opt or a made-up /root reached the next task; and the host's Python lives under
# /root/.pyenv, so a task could plant modules on the paths the root helper would import from after joining
# the slot's mount namespace (it imports nothing there today; it also clears sys.path before joining)
ROOT_WRITE = ("import os\ndone = []\nfor p in ('/leak', '/opt/leak', '/root/.pyenv/x.py', '/etc/leak'):\n    try:\n"
              "        os.makedirs(os.path.dirname(p), exist_ok=True)\n        open(p, 'w').write('x')\n"
              "        done.append(p)\n    except OSError:\n        pass\nreturn done")
ROOT_READ = "import os\nreturn [p for p in ('/leak', '/opt/leak', '/root', '/etc/leak') if os.path.exists(p)]"


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
def test_the_slot_root_is_read_only_and_keeps_nothing(bubblewrap_sandbox, cold):
    """Writes outside /tmp and /dev/shm fail (``--remount-ro /``) and nothing of them reaches the next task."""
    wrote = bubblewrap_sandbox.run_one(probe(ROOT_WRITE, "assert r == [], r", cold=cold))
    assert wrote.status.value == "ok", (wrote.status, wrote.detail[:300])
    got = bubblewrap_sandbox.run([probe(ROOT_READ, "assert r == [], r", cold=cold) for _ in range(2)])
    assert [r.status.value for r in got] == ["ok", "ok"], [r.detail[:300] for r in got]


def test_the_root_helper_imports_nothing_from_the_slot(monkeypatch):
    """When the helper joins the slot's mount namespace its ``sys.path`` is empty: a lazy import there could
    only find built-in and frozen modules, never a file the slot put on the host Python's own paths."""
    import io
    import sys

    from sdk.sandbox import _slot_helper as helper

    seen = []

    class Libc:
        def setns(self, fd, kind):
            seen.append((kind, list(sys.path), dict(sys.path_importer_cache)))
            return 0

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "path_importer_cache", dict(sys.path_importer_cache))
    monkeypatch.setattr(sys, "argv", ["helper", str(os.getpid()), "-1"])
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.setattr(helper, "LIBC", Libc())
    monkeypatch.setattr(helper, "_mounts", lambda pid: {p: (0, "") for p in helper.PATHS})
    monkeypatch.setattr(helper.os, "open", lambda *a, **k: os.dup(0))
    helper.main()
    assert sys.stdout.getvalue() == "ok\n"
    assert [s[0] for s in seen] == [helper.CLONE_NEWNS, helper.CLONE_NEWPID]
    assert all(path == [] and cache == {} for _, path, cache in seen), seen


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
def test_no_slot_process_the_task_can_inspect_holds_a_host_pipe(bubblewrap_sandbox, cold):
    """bwrap's init (pid 1 in the slot: dumpable, the task's uid) held the warm server's stdin and stdout, the
    host's request pipe and its S/R/D channel: a task could list them in /proc/1/fd and, on a host whose uid
    is the task's (no root, no uid of its own), open them to read requests or forge frames. The host now
    passes both pipes beside stdio; bwrap's init closes extra fds, so it holds no pipe at all. A cold run's
    launcher pipes sat on pid 1 the same way (its 0-2): they are now passed beside bwrap's /dev/null stdio and
    moved onto 0-2 by a shell inside the slot (bwrap.STDIO_SHIM)."""
    body = ("import os\nout = []\nfor pid in range(1, 64):\n    if pid == os.getpid():\n        continue\n"
            "    for n in range(32):\n        try:\n            link = os.readlink('/proc/%d/fd/%d' % (pid, n))\n"
            "        except OSError:\n            continue\n        if link.startswith(('pipe:', 'socket:')):\n"
            "            out.append((pid, n, link))\nreturn out")
    res = bubblewrap_sandbox.run_one(probe(body, "assert r == [], r", cold=cold))
    assert res.status.value == "ok", (res.status, res.detail[:300])
