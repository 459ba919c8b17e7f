"""Red team, round 8 (issue 14): what one warm task can leave in the scheduler's view of the slot's
processes for the next task to read.

Found open: every process of a warm slot runs as the slot's uid, so a candidate could change the
scheduling settings of the warm server that forks the next candidates (or of every process of its uid):
the nice value (``setpriority``, ``PRIO_USER`` or each pid), the CPU mask (``sched_setaffinity``), the
policy (``sched_setscheduler``) and the I/O priority (``ioprio_set``). Each is inherited through ``fork``,
so the next task read what the last one wrote (a few bits to tens of bits per request), and a task could
slow every later task of its slot. Closed: the sandbox's seccomp filter refuses those calls aimed at any
process but the caller (``sdk/sandbox/seccomp.py``, ``SELF_ONLY``); a process may still change its own.

Also here: an honest answer too large to print in decimal (Python refuses ints of more than 4,300
digits) crossed the harness/candidate boundary as JSON, failed, and was flagged ``exit_trick``; it now
travels as hex (``_runner/tl_wire.py``).
"""

from __future__ import annotations

import pytest

from sdk.sandbox import ExecRequest
from tests.sandbox.conftest import bubblewrap_or_skip
from tests.sandbox.test_hostile import probe

EVERY_PID = "import os\nfor p in range(1, 1 << 12):\n    try:\n        {call}\n    except OSError:\n        pass\nreturn 1"
IOPRIO = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
LEAKS = {  # name: (writer body, reader body returning what the writer would have changed)
    "nice_of_the_uid": ("import os\ntry:\n    os.setpriority(os.PRIO_USER, os.getuid(), 19)\nexcept OSError:\n    pass\nreturn 1",
                        "import os\nreturn os.getpriority(os.PRIO_PROCESS, 0)"),
    "nice_of_every_pid": (EVERY_PID.format(call="os.setpriority(os.PRIO_PROCESS, p, 19)"),
                          "import os\nreturn os.getpriority(os.PRIO_PROCESS, 0)"),
    "cpu_mask_of_every_pid": (EVERY_PID.format(call="os.sched_setaffinity(p, {min(os.sched_getaffinity(0))})"),
                              "import os\nreturn sorted(os.sched_getaffinity(0))"),
    "policy_of_every_pid": (EVERY_PID.format(call="os.sched_setscheduler(p, os.SCHED_IDLE, os.sched_param(0))"),
                            "import os\nreturn os.sched_getscheduler(0)"),
    # ioprio_set(IOPRIO_WHO_USER, uid, class 2 level 6) and (IOPRIO_WHO_PROCESS, pid, class 3 level 5)
    "io_priority": (IOPRIO + "libc.syscall(251, 3, __import__('os').getuid(), (2 << 13) | 6)\n"
                    "for p in range(1, 1 << 12):\n    libc.syscall(251, 1, p, (3 << 13) | 5)\nreturn 1",
                    IOPRIO + "return libc.syscall(252, 1, 0)"),
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


@pytest.mark.parametrize("name", list(LEAKS))
def test_scheduling_settings_do_not_carry_to_the_next_task(one_slot, name):
    writer, reader = LEAKS[name]
    read = probe(reader, "print('VALUE', r)")
    before = _value(one_slot.run_one(read))
    wrote = one_slot.run_one(probe(writer, "assert r == 1"))
    assert wrote.status.value == "ok", (name, wrote.status, wrote.detail[:300])
    after = [_value(one_slot.run_one(read)) for _ in range(3)]   # a candidate may be forked ahead of its request
    assert after == [before] * 3, (name, before, after)
    assert one_slot.stray_processes() == []


def test_another_process_s_settings_are_refused_and_its_own_are_not(one_slot):
    """The defence: aimed at the parent, each call fails with EPERM; aimed at itself, it works."""
    body = ("import errno, os\nout = []\nn = min(os.getpriority(os.PRIO_PROCESS, 0) + 1, 19)\n"
            "for f in (lambda p: os.setpriority(os.PRIO_PROCESS, p, n),\n"
            "          lambda p: os.sched_setaffinity(p, os.sched_getaffinity(0)),\n"
            "          lambda p: os.sched_setscheduler(p, os.SCHED_BATCH, os.sched_param(0))):\n"
            "    for p, want in ((os.getppid(), errno.EPERM), (0, None)):\n        try:\n            f(p)\n"
            "            out.append(None)\n        except OSError as e:\n            out.append(e.errno)\n"
            "return out == [errno.EPERM, None] * 3 and os.getpriority(os.PRIO_PROCESS, 0) == n or out")
    res = one_slot.run_one(probe(body, "assert r is True, r"))
    assert res.status.value == "ok", (res.detail[:300], res.stdout[-300:])


@pytest.mark.parametrize("framework", ["script", "pytest"])
def test_an_honest_answer_too_big_to_print_passes(one_slot, framework):
    """``7 ** 100000`` has 84,510 digits: it crosses as hex, not as a JSON decimal Python refuses to write."""
    tests = ({"t.py": "def check(candidate):\n    assert candidate(7, 100000) == 7 ** 100000\n    assert candidate(2, 3) == 8\n"}
                  if framework == "script" else
             {"test_p.py": "from solution import pw\n\n\ndef test_big():\n    assert pw(7, 100000) == 7 ** 100000\n"
                           "    assert pw(-7, 99999) == -(7 ** 99999)\n"})
    res = one_slot.run_one(ExecRequest(framework=framework, solution="def pw(a, b):\n    return a ** b\n",
                                       entry_point="pw", tests=tests))
    assert res.status.value == "ok" and not res.flags, (res.status, res.flags, res.detail[:300], res.stderr[-300:])
    wrong = one_slot.run_one(ExecRequest(framework=framework, solution="def pw(a, b):\n    return a ** b + 1\n",
                                         entry_point="pw", tests=tests))
    assert wrong.status.value == "failed" and not wrong.flags, (wrong.status, wrong.flags, wrong.detail[:300])
