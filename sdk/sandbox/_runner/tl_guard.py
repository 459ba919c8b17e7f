"""A seccomp filter that keeps the code under test from signalling the processes that judge it
(stdlib only, installed through ``ctypes``; issue 14).

The candidate process (Python) and the forked test child of ``tl_test.h`` (C/C++, which builds
the same program in C) run as the same uid as the harness, so ``kill(getppid(), SIGSTOP)`` or
``SIGKILL`` would stop or end the process that computes the verdict. :func:`protect` installs,
on top of the sandbox's own filter, a classic-BPF program that *kills the calling process with
SIGSYS* when it aims ``kill``, ``tkill``, ``tgkill``, ``rt_sigqueueinfo``, ``rt_tgsigqueueinfo``,
``pidfd_open`` or ``prlimit64`` at one of the protected ids: its ancestors (walked through
``/proc/<pid>/stat`` when the filter is installed, before any solution code ran), their process
groups (as ``-pgid``), ``0`` (its own group, which holds the harness) and ``-1`` (everyone);
``pidfd_send_signal`` (a ``/proc/<pid>`` directory is a pidfd too) always kills. The harness
reads a candidate that died of SIGSYS as tampering (flag ``runner_tampering``), so the attempt
is both stopped and reported. Signals to itself and to its own children work as before.

A syscall from another ABI (i386 ``int 0x80``, x32) is killed outright: no honest program
here uses one, and their numbers differ. On an architecture other than x86_64 and aarch64,
:func:`protect` installs nothing and returns False; no sandbox is built there at all
(:func:`sdk.sandbox.local.require_guard` refuses loudly, from this module's :data:`ARCH`).
"""

import ctypes
import os
import struct

# (AUDIT_ARCH, {name: number}) per machine
ARCH = {
    "x86_64": (0xC000003E, {"kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
                            "pidfd_open": 434, "prlimit64": 302, "pidfd_send_signal": 424}),
    "aarch64": (0xC00000B7, {"kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
                             "pidfd_open": 434, "prlimit64": 261, "pidfd_send_signal": 424}),
}
ALLOW, KILL = 0x7FFF0000, 0x80000000
LD, JEQ, JGE, RET = 0x20, 0x15, 0x35, 0x06
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
SERVER = []   # the warm server's own (pid, pgid) and its ancestors' (remember_server), empty elsewhere
TEMPLATE = []   # in the warm server: [filter buffer, sock_fprog, byte offsets of SLOT, guarded ids]
SLOT = 0x7FFFFFFE   # stands for the candidate's parent in TEMPLATE (never a pid: pid_max <= 2**22)
SIBLING = [0]   # in the warm server: the long-lived supervisor, a sibling of the candidate it forks (tl_zygote)
GUARDED = set()   # the kill() targets the filter refuses (the candidate's audit hook reports an attempt first)
ARMED = [None]   # in the warm server: the slot value TEMPLATE and GUARDED hold already (arm)
NNP = [False]   # in the warm server: no_new_privs is set (inherited by every process it forks)


def ancestors(pid=None, limit=16):
    """``[(pid, pgid)]`` of the caller's parent, its parent... up to the sandbox's init."""
    out, pid = [], os.getppid() if pid is None else pid
    while pid > 0 and len(out) < limit:
        try:
            with open("/proc/%d/stat" % pid, "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            break
        out.append((pid, int(fields[2])))
        pid = int(fields[1])
    return out


def remember_server():
    """Record, in the warm server (:mod:`tl_zygote`) before it forks anything, its own
    ``(pid, pgid)`` and its ancestors, and build the filter for a candidate forked two levels
    below it (server -> supervisor -> candidate) with its parent's pid left as a slot: the
    candidate then only writes that pid into its copy and installs it (walking ``/proc`` and
    building the program in every candidate cost each warm request about 0.9 ms of CPU, mostly
    copy-on-write faults; issue 14). When the server forks the candidate itself (beside a
    long-lived supervisor, :data:`SIBLING`), the slot holds that supervisor instead."""
    SERVER[:] = [(os.getpid(), os.getpgrp())] + ancestors()
    spec = ARCH.get(os.uname().machine)
    if spec is None:
        return
    pids = [p for p, _ in SERVER]
    signalled = [0, -1] + pids + [-g for _, g in SERVER if g > 0]
    code, count = program(spec[0], spec[1], signalled + [SLOT], pids + [SLOT])
    slots = [i for i in range(4, len(code), 8) if struct.unpack_from("=I", code, i)[0] == SLOT]
    buf = ctypes.create_string_buffer(code, len(code))
    TEMPLATE[:] = [buf, _Prog(count, ctypes.addressof(buf)), slots, signalled]
    NNP[0] = _PRCTL(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) == 0


def arm(slot):
    """(The warm server, before it forks candidates.) Write ``slot`` (the pid :func:`protect`
    puts in the template's slot: the long-lived supervisor, :data:`SIBLING`) into the template
    and :data:`GUARDED` here, once per supervisor, so that each forked candidate installs the
    filter without writing to either: a candidate that patched them copied their pages and ran
    the patching code, about 50 page faults and 0.2 ms of CPU per request (issue 14). The
    filter a candidate installs is the same."""
    if TEMPLATE and ARMED[0] != slot:
        buf, _, slots, signalled = TEMPLATE
        for at in slots:
            struct.pack_into("=I", buf, at, slot)
        GUARDED.clear()
        GUARDED.update(signalled + [slot])
        ARMED[0] = slot


def chain():
    """``[(pid, pgid)]`` of the caller's ancestors: its parent plus the recorded server chain
    under a warm server, else walked through ``/proc`` (:func:`ancestors`)."""
    if SERVER:
        parent = os.getppid()
        if parent == SERVER[0][0]:   # the supervisor is gone: reparented to the server (subreaper)
            return list(SERVER)
        try:
            return [(parent, os.getpgid(parent))] + SERVER
        except OSError:
            pass
    return ancestors()


def program(arch, numbers, signalled, pids):
    """The BPF program as bytes (``struct sock_filter`` array) and its length: the signal
    syscalls may not aim at ``signalled``, ``pidfd_open``/``prlimit64`` not at ``pids``."""
    ops = [(LD, 0, 0, 4), (JEQ, 1, 0, arch), (RET, 0, 0, KILL), (LD, 0, 0, 0)]
    if arch == ARCH["x86_64"][0]:
        ops.append((JGE, "kill", 0, 0x40000000))
    ops.append((JEQ, "kill", 0, numbers["pidfd_send_signal"]))
    ops += [(JEQ, "sig", 0, numbers[n]) for n in ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")]
    ops += [(JEQ, "pid", 0, numbers[n]) for n in ("pidfd_open", "prlimit64")]
    ops.append((RET, 0, 0, ALLOW))
    labels = {}
    for label, ids in (("sig", signalled), ("pid", pids)):
        labels[label] = len(ops)
        ops.append((LD, 0, 0, 16))   # args[0], low 32 bits (the ids are C ints)
        ops += [(JEQ, "kill", 0, v) for v in sorted({v & 0xFFFFFFFF for v in ids})]
        ops.append((RET, 0, 0, ALLOW))
    labels["kill"] = len(ops)
    ops.append((RET, 0, 0, KILL))
    code = b""
    for i, (c, jt, jf, k) in enumerate(ops):
        jt = labels[jt] - i - 1 if isinstance(jt, str) else jt
        code += struct.pack("=HBBI", c, jt, jf, k)
    return code, len(ops)


def protect(extra=()):
    """Install the filter in the calling process (inherited by its children); True when it is
    in place. ``extra``: more ids to protect (e.g. a process that is no ancestor)."""
    if TEMPLATE and not extra:
        parent = os.getppid()
        if parent == SERVER[0][0] and ARMED[0] == (SIBLING[0] or parent):
            return _install(TEMPLATE[1])   # forked by the warm server, which armed the template (arm)
        buf, prog, slots, signalled = TEMPLATE
        try:
            same_group = -os.getpgid(parent) in signalled   # the parent's group is guarded already
        except OSError:
            same_group = False
        if same_group:   # the slot: the candidate's parent, or the supervisor beside it (SIBLING)
            slot = SIBLING[0] or parent
            if ARMED[0] != slot:   # else the server wrote it before the fork (arm)
                for at in slots:
                    struct.pack_into("=I", buf, at, slot)
                GUARDED.update(signalled + [slot])
            return _install(prog)
    spec = ARCH.get(os.uname().machine)
    if spec is None:
        return False
    found = chain()
    pids = [p for p, _ in found] + list(extra)
    signalled = [0, -1] + pids + [-g for _, g in found if g > 0]
    GUARDED.update(signalled)
    code, count = program(spec[0], spec[1], signalled, pids)
    buf = ctypes.create_string_buffer(code, len(code))
    return _install(_Prog(count, ctypes.addressof(buf)))


def _install(prog):
    if not NNP[0] and _PRCTL(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:   # set in the warm server: inherited
        return False
    return _PRCTL(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0


class _Prog(ctypes.Structure):
    """``struct sock_fprog``."""
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


# set up once at import (the warm server imports this module, so each forked candidate has it)
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl
_PRCTL.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
