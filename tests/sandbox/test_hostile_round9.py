"""Red team, round 9 (issue 14): cross-task leaks on one warm (and, where it differs, cold) bubblewrap slot
that no earlier round tried. Each writer leaves a mark or a watcher behind; the next tasks on the same slot
look for it: none may see it, and no process of the writer may be left.

New here: a daemon that escapes the candidate as a subreaper's double-forked grandchild, one made a sibling
of the candidate with ``clone(CLONE_PARENT)``, one exec'd into a shell that ignores every catchable signal;
an inotify watcher left on ``/tmp`` and ``/dev/shm`` to copy the *next* task's files; the UTS namespace's
host and domain names; interval timers, pending and blocked signals; a mark in every folder the task can
write anywhere in the slot; forged ``r N``/``ok`` lines of the root reset helper written to every pipe the
task can open under ``/proc`` (any fd number, not just round 7's first 32).
"""

from __future__ import annotations

import pytest

from tests.sandbox.conftest import bubblewrap_or_skip
from tests.sandbox.test_hostile import probe

MARK = "tl-r9-mark"
# what a daemon does once it is loose: wait for the request to end, then leave a file and hold a name
LOOSE = ("    import signal, socket, time\n    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):\n"
         "        signal.signal(s, signal.SIG_IGN)\n    time.sleep(0.5)\n"
         "    for p in ('/tmp/{m}', '/dev/shm/{m}'):\n        try:\n            open(p, 'w').write('x')\n"
         "        except OSError:\n            pass\n    k = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
         "    k.bind('\\0{m}')\n    time.sleep(60)\n    os._exit(0)\n").format(m=MARK)
# the reader: a file, an abstract name, or a process whose command line carries the mark
SEEN = ("import os, socket, time\ntime.sleep(1.0)\nout = [p for p in ('/tmp/{m}', '/dev/shm/{m}') if os.path.exists(p)]\n"
        "k = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\ntry:\n    k.bind('\\0{m}')\nexcept OSError:\n"
        "    out.append('abstract name taken')\nfor pid in range(1, 400):\n    try:\n"
        "        if b'{m}' in open('/proc/%d/cmdline' % pid, 'rb').read():\n            out.append(pid)\n"
        "    except OSError:\n        pass\nreturn out").format(m=MARK)
SUBREAPER = ("import ctypes, os\nctypes.CDLL(None).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER\n"
             "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n" + "".join("    " + ln + "\n" for ln in LOOSE.splitlines())
             + "    os._exit(0)\nos.wait()\nreturn 1")
# clone(CLONE_PARENT | SIGCHLD): the child's parent is the candidate's parent (the warm server)
CLONE_PARENT = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                "pid = libc.syscall(56, 0x8000 | 17, 0, 0, 0, 0)\nif pid == 0:\n" + LOOSE + "return 1")
EXEC_SHELL = ("import os\nif os.fork() == 0:\n    os.setsid()\n"
              "    os.execv('/bin/sh', ['sh', '-c', 'trap \"\" TERM HUP INT QUIT USR1 USR2; sleep 0.5; "
              "echo x > /tmp/{m}; exec sleep 60 {m}'])\nreturn 1").format(m=MARK)
# an inotify watcher on /tmp and /dev/shm (and the run folder) that copies whatever the next task creates
INOTIFY = ("import ctypes, os, shutil, struct, time\nlibc = ctypes.CDLL(None, use_errno=True)\n"
           "if os.fork() == 0:\n    os.setsid()\n    fd = libc.inotify_init1(0)\n"
           "    for d in (b'/tmp', b'/dev/shm', b'/tmp/run', os.getcwd().encode()):\n"
           "        libc.inotify_add_watch(fd, d, 0x100 | 0x8)\n    end = time.time() + 30\n    while time.time() < end:\n"
           "        buf = os.read(fd, 4096)\n        i = 0\n        while i < len(buf):\n"
           "            wd, mask, cookie, n = struct.unpack_from('iIII', buf, i)\n"
           "            name = buf[i + 16:i + 16 + n].rstrip(b'\\0').decode()\n            i += 16 + n\n"
           "            for d in ('/tmp', '/dev/shm'):\n                try:\n"
           "                    shutil.copy(os.path.join(d, name), '/dev/shm/copy-' + name)\n"
           "                except OSError:\n                    pass\n    os._exit(0)\nreturn 1")
INOTIFY_READ = ("import os, time\nfor d in ('/tmp', '/dev/shm'):\n    open(os.path.join(d, 'secret-r9'), 'w').write('s')\n"
                "time.sleep(0.5)\nreturn sorted(n for n in os.listdir('/dev/shm') if n.startswith('copy-'))")
NAMES = ("import socket\nout = []\nfor f in ('sethostname', 'setdomainname'):\n    try:\n"
         "        getattr(__import__('ctypes').CDLL(None, use_errno=True), f)(b'{m}', {n})\n    except OSError:\n"
         "        pass\ntry:\n    socket.sethostname('{m}')\nexcept OSError:\n    pass\nreturn 1").format(m=MARK, n=len(MARK))
NAMES_READ = "import os\nu = os.uname()\nreturn [u.nodename, open('/proc/sys/kernel/domainname').read().strip()]"
TIMERS = ("import os, signal\nfor t in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF):\n"
          "    signal.setitimer(t, 30, 30)\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGALRM})\n"
          "os.kill(os.getpid(), signal.SIGUSR1)\nfor s in (signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF):\n"
          "    signal.signal(s, signal.SIG_IGN)\nreturn 1")
TIMERS_READ = ("import signal\nreturn [[signal.getitimer(t) for t in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, "
               "signal.ITIMER_PROF)], sorted(signal.sigpending()), sorted(signal.pthread_sigmask(signal.SIG_BLOCK, []))]")
# every folder of the slot the task can create a file in (but its own run folder), marked
WALK = ("import os\nout = []\nhere = os.path.realpath(os.getcwd())\n"
        "for top in ('/', '/tmp', '/dev', '/run', '/var', '/home', '/etc', '/opt', '/srv', '/mnt', '/media', '/root'):\n"
        "    for d, subs, _ in os.walk(top):\n        subs[:] = [s for s in subs if os.path.join(d, s) not in "
        "('/proc', '/sys', '/usr', '/dev/pts') and not os.path.join(d, s).startswith(here)]\n"
        "        if top == '/':\n            subs[:] = []\n        {act}\nreturn sorted(set(out))")
WALK_WRITE = WALK.replace("{act}", "try:\n            open(os.path.join(d, '" + MARK + "'), 'w').close()\n"
                          "            out.append(d)\n        except OSError:\n            pass")
WALK_READ = WALK.replace("{act}", "if os.path.exists(os.path.join(d, '" + MARK + "')):\n            out.append(d)")
LEAKS = {  # name: (writer body returning 1 or anything, reader body, what the reader must return)
    "daemon_of_a_subreaper_double_fork": (SUBREAPER, SEEN, []),
    "daemon_cloned_as_the_candidates_sibling": (CLONE_PARENT, SEEN, []),
    "daemon_exec_shell_ignoring_signals": (EXEC_SHELL, SEEN, []),
    "inotify_watcher_copies_the_next_tasks_files": (INOTIFY, INOTIFY_READ, []),
    "itimers_pending_and_blocked_signals": (TIMERS, TIMERS_READ, None),
    "host_and_domain_names": (NAMES, NAMES_READ, None),
    "a_mark_in_every_writable_folder": (WALK_WRITE, WALK_READ, []),
}


@pytest.fixture(scope="module")
def one_slot():
    """One warm slot: every request lands on the same server."""
    sb = bubblewrap_or_skip(1)
    yield sb
    sb.close()


def _value(res):
    assert res.status.value == "ok", (res.status, res.detail[:300], res.stderr[-300:])
    return res.stdout.split("VALUE")[-1].strip()


def write_then_read(slot, leak: tuple, cold: bool):
    """``(writer's result, reader's value before, [reader's value after] * 2)`` for one ``(writer, reader,
    expected)`` leak on ``slot``; ``expected`` (when not None) stands for the value before."""
    writer, reader, expected = leak
    read = probe(reader, "print('VALUE', r)", cold=cold)
    before = _value(slot.run_one(read)) if expected is None else repr(expected)
    wrote = slot.run_one(probe(writer, "print('WROTE', r)", cold=cold))
    return wrote, before, [_value(slot.run_one(read)) for _ in range(2)]


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
@pytest.mark.parametrize("name", list(LEAKS))
def test_nothing_a_task_leaves_reaches_the_next(one_slot, name, cold):
    """``None`` as the expectation: the reader must see what it saw before the writer ran."""
    wrote, before, after = write_then_read(one_slot, LEAKS[name], cold)
    assert wrote.status.value in ("ok", "runtime_error", "failed"), (name, wrote.status, wrote.detail[:300])
    assert after == [before] * 2, (name, before, after, wrote.stdout[-300:])
    assert one_slot.stray_processes() == []


@pytest.mark.parametrize("name", ["daemon_of_a_subreaper_double_fork", "daemon_exec_shell_ignoring_signals"])
def test_each_daemon_is_loose_inside_its_own_request(one_slot, name):
    """The control: inside the writer's own request (the request waits for it), the daemon leaves its mark."""
    writer = LEAKS[name][0]
    body = writer.replace("return 1", "import time\ntime.sleep(1.2)\n") + "\nreturn sorted(os.listdir('/tmp'))"
    res = one_slot.run_one(probe(body, f"assert {MARK!r} in r, r"))
    assert res.status.value == "ok", (name, res.status, res.detail[:300], res.stdout[-300:])
    assert one_slot.stray_processes() == []


# the root reset helper's pipes (``r N`` asked by the server, ``ok`` answered): any fd number of any pid (pid 1's
# stdio is /dev/null: writable, and not counted)
FORGE_RESET = ("import os\nsent = []\nfor pid in range(1, 200):\n    if pid == os.getpid():\n        continue\n"
               "    try:\n        fds = os.listdir('/proc/%d/fd' % pid)\n    except OSError:\n        continue\n"
               "    for n in fds:\n        p = '/proc/%d/fd/%s' % (pid, n)\n        try:\n"
               "            fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK)\n        except OSError:\n            continue\n"
               "        try:\n            os.write(fd, b'r 1\\nok\\nerror x\\n-\\n')\n"
               "            if os.readlink(p).startswith(('pipe:', 'socket:')):\n                sent.append(p)\n"
               "        except OSError:\n            pass\n        os.close(fd)\nreturn sent")
FRESH = ("import os\nreturn [os.path.islink(p) or not os.path.ismount(p) for p in ('/tmp', '/dev/shm')]"
         " + [sorted(os.listdir('/tmp')) != ['run'] and sorted(os.listdir('/tmp'))]")


def test_forged_reset_helper_lines_reach_no_pipe(one_slot):
    """Only the candidate's own descriptors may take the forged lines (its stdio is the supervisor's): no
    other process's pipe is writable, and the next tasks still get fresh roots."""
    res = one_slot.run_one(probe(FORGE_RESET, "assert r == [], r"))
    assert res.status.value == "ok", (res.status, res.detail[:300], res.stdout[-300:])
    got = [one_slot.run_one(probe(FRESH, "assert r == [False, False, False], r")) for _ in range(2)]
    assert [g.status.value for g in got] == ["ok", "ok"], [(g.detail[:300], g.stdout[-300:]) for g in got]
    assert one_slot.stray_processes() == []
