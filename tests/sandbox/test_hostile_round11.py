"""Red team, round 11 (issue 14): cross-task leaks and denials on one warm (and cold) bubblewrap slot that no
earlier round tried. Each writer leaves a mark, a counter or a limit behind; the next tasks on the same slot
must see what they saw before it (twice), and no process of the writer may be left.

New here: the peak memory (``VmHWM``) of every process the task can see, after a 120 MiB answer the supervisor
had to take (a counter that would tell the next task how big the last answer was); ``RLIMIT_NOFILE`` lowered to
9 on every other pid (``prlimit``: the supervisor's would fail the next honest task as the model's fault); a
core dump left by a crash with ``RLIMIT_CORE`` raised; ``/tmp`` and ``/dev/shm`` filled to the last byte and
inode under a mode-000 folder (the next honest task would fail to write: the model's fault); the slot's cgroup
counters (peak memory, CPU use) and the task's cgroup path; a mark in the environment of every process.
Measured: all held (warm and cold) at the start of the round: the other processes' ``status`` shows no
``VmHWM`` (the supervisor is not dumpable), the ``prlimit`` kills the writer (``runner_tampering``), no core
file is written anywhere the next task looks, ``/tmp`` and ``/dev/shm`` come back empty and writable, no
cgroup counter is readable, and no environment but the task's own carries the mark.
"""

from __future__ import annotations

import pytest

from tests.sandbox.test_hostile import probe
from tests.sandbox.test_hostile_round9 import one_slot, write_then_read  # noqa: F401 - the module's warm slot

MARK = "tl-r11-mark"
OTHERS = "import os\npids = [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]\n"
HWM_READ = (OTHERS + "out = 0\nfor p in pids:\n    try:\n        for ln in open('/proc/%d/status' % p):\n"
            "            if ln.startswith('VmHWM'):\n                out = max(out, int(ln.split()[1]))\n    except OSError:\n"
            "        pass\nreturn out // 65536")   # in 64 MiB steps: the next task's own noise stays below
NOFILE = (OTHERS + "import resource\nout = []\nfor p in pids:\n    try:\n"
          "        resource.prlimit(p, resource.RLIMIT_NOFILE, (9, 9))\n        out.append(p)\n    except OSError:\n"
          "        pass\nreturn out")
NOFILE_READ = ("import os\nout = set()\nfor p in os.listdir('/proc'):\n    if not p.isdigit():\n        continue\n    try:\n"
               "        out |= {ln.split()[3] for ln in open('/proc/%s/limits' % p) if ln.startswith('Max open files')}\n"
               "    except OSError:\n        pass\nfds = [open('/dev/null') for _ in range(40)]\nreturn sorted(out) + [len(fds)]")
CORE = ("import os, resource, signal\nresource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"
        "for d in ('/tmp', '/dev/shm', os.getcwd()):\n    try:\n        os.chdir(d)\n        break\n    except OSError:\n"
        "        pass\nif os.fork() == 0:\n    os.kill(os.getpid(), signal.SIGSEGV)\nos.wait()\nos.kill(os.getpid(), signal.SIGABRT)")
CORE_READ = ("import os\nout = []\nfor top in ('/tmp', '/dev/shm', os.getcwd(), '/'):\n    try:\n"
             "        out += [top + '/' + n for n in os.listdir(top) if n.startswith('core')]\n    except OSError:\n        pass\n"
             "return sorted(out)")
FILL = ("import os\nout = []\nfor d in ('/tmp', '/dev/shm'):\n    h = os.path.join(d, '.h')\n    os.makedirs(h, exist_ok=True)\n"
        "    n = 0\n    try:\n        with open(os.path.join(h, 'f'), 'wb') as fh:\n            while True:\n"
        "                fh.write(b'x' * (1 << 20))\n                n += 1\n    except OSError:\n        pass\n"
        "    for i in range(100000):\n        try:\n            os.mkdir(os.path.join(h, str(i)))\n        except OSError:\n"
        "            break\n    os.chmod(h, 0)\n    out.append(n)\nreturn out")
FILL_READ = ("import os\nout = []\nfor d in ('/tmp', '/dev/shm'):\n    p = os.path.join(d, 'probe-w')\n    try:\n"
             "        with open(p, 'wb') as fh:\n            fh.write(b'y' * (4 << 20))\n        os.unlink(p)\n        out.append('ok')\n"
             "    except OSError as e:\n        out.append(str(e))\nreturn out")
CGROUP_WRITE = "x = bytearray(200 << 20)\nfor i in range(0, len(x), 4096):\n    x[i] = 1\nreturn len(x)"
CGROUP_READ = ("out = []\nfor f in ('/sys/fs/cgroup/memory.peak', '/sys/fs/cgroup/memory/memory.max_usage_in_bytes',"
               " '/sys/fs/cgroup/cpu.stat', '/sys/fs/cgroup/cpuacct/cpuacct.usage', '/sys/fs/cgroup/memory.stat'):\n"
               "    try:\n        out.append(open(f).read()[:200])\n    except OSError as e:\n        out.append(type(e).__name__)\n"
               "return out + [open('/proc/self/cgroup').read()]")
ENV_WRITE = "import os\nos.environ['{m}'] = '1'\nos.putenv('{m}', '1')\nreturn 1".format(m=MARK)
ENV_READ = ("import os\nout = []\nfor p in os.listdir('/proc'):\n    if p.isdigit():\n        try:\n"
            "            if b'{m}' in open('/proc/%s/environ' % p, 'rb').read():\n                out.append(p)\n"
            "        except OSError:\n            pass\nreturn out + [k for k in os.environ if k == '{m}']").format(m=MARK)
LEAKS = {  # name: (writer body, reader body, what the reader must return: None for "as before the writer")
    "peak_memory_of_every_process_after_a_big_answer": ("return 'x' * (120 << 20)", HWM_READ, None),
    "open_files_limit_of_every_other_process": (NOFILE, NOFILE_READ, None),
    "core_file_of_a_crash": (CORE, CORE_READ, []),
    "tmp_and_shm_filled_under_a_mode_000_folder": (FILL, FILL_READ, ["ok", "ok"]),
    "cgroup_counters_after_200_mib": (CGROUP_WRITE, CGROUP_READ, None),
    "a_mark_in_the_environment_of_every_process": (ENV_WRITE, ENV_READ, []),
}


def test_round_eleven_has_five_new_leaks():
    assert len(LEAKS) >= 5


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
@pytest.mark.parametrize("name", list(LEAKS))
def test_nothing_a_task_leaves_reaches_the_next(one_slot, name, cold):  # noqa: F811
    """The reader sees what it saw before the writer ran (or the expectation), twice; nothing left behind."""
    wrote, before, after = write_then_read(one_slot, LEAKS[name], cold)
    assert wrote.status.value in ("ok", "runtime_error", "failed", "memory_limit"), (name, wrote.status, wrote.detail[:300])
    assert after == [before] * 2, (name, before, after, wrote.stdout[-300:])
    assert one_slot.stray_processes() == []


def test_a_writer_that_limits_the_supervisor_is_flagged(one_slot):  # noqa: F811
    """The control of the prlimit row: the writer is stopped by the guard, not merely unlucky."""
    res = one_slot.run_one(probe(NOFILE, "assert r == []"))
    assert res.status.value == "failed" and "runner_tampering" in res.flags, (res.status, res.flags, res.detail[:300])
