"""A seccomp filter that lets a test program make threads but no process (stdlib only; issue 14).

Used by ``tl_build.py`` for the Rust test binary (spec key ``"nofork"``), installed between fork
and exec, so it covers the binary from its first instruction and everything it runs. The same
rule as ``tl_test.h``'s guard for a C/C++ test child: ``fork``/``vfork`` and ``clone`` without
``CLONE_THREAD`` fail with ``EPERM``; ``clone3`` fails with ``ENOSYS`` (glibc then makes its
threads with ``clone``, which passes: libtest runs each test on a thread). A syscall from another
ABI (i386 ``int 0x80``, x32) kills the process (SIGSYS), as in ``tl_guard``.

Why: a test binary that may fork has an oracle for the expected value (issue 14, round 9,
``tests/rewards/test_redteam_round9.py``): the code under test forks a child per guess, the child
returns that guess and runs the rest of the test with its output on ``/dev/null``, and its exit
status says whether the guess passed; the parent then returns the guess that passed.
Cost: an honest test that starts a process (``std::process::Command``) gets an error there.
"""

import ctypes
import struct

# machine -> (AUDIT_ARCH, clone, clone3, syscalls that only make a process)
ARCH = {"x86_64": (0xC000003E, 56, 435, (57, 58)), "aarch64": (0xC00000B7, 220, 435, ())}
ALLOW, KILL, ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
LD, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
EPERM, ENOSYS, CLONE_THREAD = 1, 38, 0x00010000
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


def program(machine):
    """``(bytes, count)``: the ``struct sock_filter`` array for ``machine`` (``os.uname().machine``),
    or None for a machine without numbers here (no sandbox is built there: ``tl_guard``)."""
    if machine not in ARCH:
        return None
    arch, clone, clone3, forks = ARCH[machine]
    ops = [(LD, 0, 0, 4), (JEQ, 1, 0, arch), (RET, 0, 0, KILL), (LD, 0, 0, 0)]
    if machine == "x86_64":
        ops.append((JGE, "kill", 0, 0x40000000))   # x32
    ops += [(JEQ, "eperm", 0, nr) for nr in forks]
    ops += [(JEQ, "clone", 0, clone), (JEQ, "enosys", 0, clone3), (RET, 0, 0, ALLOW)]
    labels = {"clone": len(ops)}
    ops += [(LD, 0, 0, 16), (JSET, 0, 1, CLONE_THREAD), (RET, 0, 0, ALLOW)]   # args[0]: the flags
    labels["eperm"] = len(ops)
    ops.append((RET, 0, 0, ERRNO | EPERM))
    labels["enosys"] = len(ops)
    ops.append((RET, 0, 0, ERRNO | ENOSYS))
    labels["kill"] = len(ops)
    ops.append((RET, 0, 0, KILL))
    code = b""
    for i, (c, jt, jf, k) in enumerate(ops):
        jt = labels[jt] - i - 1 if isinstance(jt, str) else jt
        code += struct.pack("=HBBI", c, jt, jf, k)
    return code, len(ops)


class _Prog(ctypes.Structure):
    """``struct sock_fprog``."""
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def installer(machine):
    """A ``preexec_fn`` that installs the filter in the child (built here, before the fork: the
    child only calls ``prctl``). Raises OSError in the child when it cannot be installed, so the
    program never runs unguarded (``subprocess`` then raises ``SubprocessError`` in the caller);
    None for a machine :func:`program` has no numbers for."""
    built = program(machine)
    if built is None:
        return None
    buf = ctypes.create_string_buffer(built[0], len(built[0]))
    prog = _Prog(built[1], ctypes.addressof(buf))
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]

    def install():
        keep = buf   # the filter's bytes live as long as this function
        if prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0 or \
                prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0 or keep is None:
            raise OSError(ctypes.get_errno(), "the no-new-process seccomp filter could not be installed")
    return install
