"""Red team, round 10 (issue 14): cross-task leaks through bwrap's init, the one process of a warm slot that
lives across its requests and that the task's uid may write to (pid 1 in the slot: dumpable, the task's uid).

Found open (warm slots; cold runs were clean): a task wrote pid 1's ``oom_score_adj`` (777),
``coredump_filter`` (0x1ab) and autogroup nice (13) under ``/proc/1``, and a mark into init's writable mappings
through ``/proc/1/mem`` (11 of them; also through ``/proc/1/task/1/mem`` and ``/proc/1/root/proc/1/mem``), and
the next task on the slot read each back. Closed: bwrap covers those
files of pid 1 (and ``/proc/1/task/1``'s, ``clear_refs``, ``sched``) with a read-only ``/dev/null`` while it is
still pid 1 setting up (:data:`sdk.sandbox.bwrap.INIT_MASKED`: ``/proc/1/mem`` cannot be opened), and the host
reads the three knobs of the slot's init after every request (:func:`sdk.sandbox.warm._init_marks`): a change
makes the slot dirty, replaced before its next task. Also tried, and held: pid 1's resource limits through
``prlimit`` (read back from ``/proc/1/limits``), its name (``/proc/1/comm``) and timer slack, and each of these
on every other pid the task can see.
"""

from __future__ import annotations

import pytest

from tests.sandbox.test_hostile_round9 import one_slot, write_then_read  # noqa: F401 - the module's warm slot

MARK = "tl-r10-mark"
# write ``value`` into /proc/<pid>/<knob> of every pid but the task's own
WRITE = ("import os\nout = []\nfor pid in range(1, 400):\n    if pid == os.getpid():\n        continue\n    try:\n"
         "        with open('/proc/%d/{knob}' % pid, 'wb') as fh:\n            fh.write(b'{value}')\n"
         "        out.append(pid)\n    except OSError:\n        pass\nreturn out")
# the knob of every pid but the task's own (a set: pids differ from one request to the next)
READ = ("import os\nout = set()\nfor pid in range(1, 400):\n    if pid == os.getpid():\n        continue\n    try:\n"
        "        out.add(open('/proc/%d/{knob}' % pid).read().split()[-1])\n    except OSError:\n        pass\nreturn sorted(out)")
# a mark in every writable mapping of pid 1 (a few bytes at the end of each: bss and heap tails, never in use)
MEM_WRITE = ("import os\nout = []\ntry:\n    maps = open('/proc/1/maps').read().splitlines()\n    fd = os.open('/proc/1/mem', os.O_RDWR)\n"
             "except OSError:\n    return out\nfor line in maps:\n    span, perms = line.split()[:2]\n    if perms[:2] != 'rw':\n"
             "        continue\n    end = int(span.split('-')[1], 16)\n    try:\n"
             "        os.pwrite(fd, b'{m}', end - 64)\n        out.append(span)\n    except OSError:\n        pass\n"
             "return out").format(m=MARK)
MEM_READ = ("import os\ntry:\n    maps = open('/proc/1/maps').read().splitlines()\n    fd = os.open('/proc/1/mem', os.O_RDONLY)\n"
            "except OSError as e:\n    return 'closed'\nhits = 0\nfor line in maps:\n    span, perms = line.split()[:2]\n"
            "    if perms[:2] != 'rw':\n        continue\n    end = int(span.split('-')[1], 16)\n    try:\n"
            "        hits += b'{m}' in os.pread(fd, 64, end - 64)\n    except OSError:\n        pass\nreturn hits").format(m=MARK)
PRLIMIT = ("import resource\nout = []\nfor pid in (1, 2, 3):\n    try:\n"
           "        resource.prlimit(pid, resource.RLIMIT_CORE, (4321, 4321))\n        out.append(pid)\n"
           "    except OSError:\n        pass\nreturn out")
LIMITS_READ = ("out = []\nfor pid in (1, 2, 3):\n    try:\n"
               "        out += [ln for ln in open('/proc/%d/limits' % pid) if 'core' in ln]\n    except OSError:\n"
               "        pass\nreturn '4321' in ''.join(out)")
LEAKS = {  # name: (writer body, reader body, what the reader must return: None for "as before the writer")
    "init_oom_score_adj": (WRITE.format(knob="oom_score_adj", value="777"), READ.format(knob="oom_score_adj"), None),
    "init_coredump_filter": (WRITE.format(knob="coredump_filter", value="0x1ab"), READ.format(knob="coredump_filter"), None),
    "init_autogroup_nice": (WRITE.format(knob="autogroup", value="13"), READ.format(knob="autogroup"), None),
    "init_comm": (WRITE.format(knob="comm", value=MARK), READ.format(knob="comm"), None),
    "init_timer_slack": (WRITE.format(knob="timerslack_ns", value="777777"), READ.format(knob="timerslack_ns"), None),
    "init_memory_through_proc_mem": (MEM_WRITE, MEM_READ, None),
    "init_memory_through_its_task_folder": (MEM_WRITE.replace("/proc/1/mem", "/proc/1/task/1/mem"),
                                            MEM_READ.replace("/proc/1/mem", "/proc/1/task/1/mem"), None),
    "init_memory_through_its_root_link": (MEM_WRITE.replace("/proc/1/mem", "/proc/1/root/proc/1/mem"),
                                          MEM_READ.replace("/proc/1/mem", "/proc/1/root/proc/1/mem"), None),
    "init_core_limit_through_prlimit": (PRLIMIT, LIMITS_READ, False),
}


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
@pytest.mark.parametrize("name", list(LEAKS))
def test_nothing_a_task_writes_into_the_slots_init_reaches_the_next(one_slot, name, cold):  # noqa: F811
    """The reader must see what it saw before the writer ran (or ``expected``), twice; nothing left behind.
    Before round 10 the first three read 777, 0x1ab and nice 13 on a warm slot."""
    wrote, before, after = write_then_read(one_slot, LEAKS[name], cold)
    assert wrote.status.value in ("ok", "runtime_error", "failed"), (name, wrote.status, wrote.detail[:300])
    assert after == [before] * 2, (name, before, after, wrote.stdout[-300:])
    assert one_slot.stray_processes() == []
