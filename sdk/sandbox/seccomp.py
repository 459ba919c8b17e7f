"""The seccomp filter bubblewrap installs (``--seccomp FD``), built with ``pyseccomp``.

Default action: allow. Denied with ``EPERM`` (the program sees an ordinary error, so a
language runtime that probes a feature keeps working): ptrace, process_vm_readv/writev,
mount/umount2/pivot_root/chroot, unshare/setns, keyctl/add_key/request_key, bpf,
perf_event_open, userfaultfd, io_uring_* (io_uring can open sockets past seccomp), module and
kexec loading, reboot, swapon/off, open_by_handle_at, setting or removing extended attributes
(one on a warm slot's ``/tmp`` outlived the wipe), and all of System V IPC (shm, msg, sem)
and POSIX message queues (issue 14: they outlive a request in a warm slot's IPC namespace,
and SysV shared memory is not bounded by ``memory_mb``). ``socket()`` is denied with ``EACCES``
for every address family except ``AF_UNIX`` (runtimes use Unix socketpairs internally; the
network namespace has no route anyway). Scheduling settings of *another* process are refused with
``EPERM`` (``setpriority`` other than ``PRIO_PROCESS`` of itself, ``sched_setaffinity``/``sched_setscheduler``/
``sched_setparam``/``sched_setattr`` of a pid other than 0, ``ioprio_set`` other than its own): a task set the
nice value, CPU mask, policy or I/O priority of the warm server (or every process of its uid), and each later
candidate inherited it (issue 14, round 8: ``tests/sandbox/test_hostile_round8.py``). A process may still
change its own, which its children inherit and which ends with it. Compiled once per process into a private file.
"""

from __future__ import annotations

import atexit
import errno
import os
import shutil
import socket
import tempfile
import threading

from sdk.errors import SandboxError

DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root", "chroot",
          "unshare", "setns", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
          "io_uring_setup", "io_uring_enter", "io_uring_register", "init_module", "finit_module",
          "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "open_by_handle_at",
          "fanotify_init", "name_to_handle_at",
          # System V IPC and POSIX message queues outlive the process that made them (a warm
          # slot's later task would see them) and shm is not bounded by RLIMIT_AS: unavailable
          "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop",
          "semctl", "semtimedop", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
          "mq_getsetattr",
          # extended attributes: one set on the root of a warm slot's /tmp or /dev/shm survived the wipe
          # (issue 14, round 6: tests/sandbox/test_hostile_round6.py); nothing the tasks need
          "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", "setxattrat",
          "removexattrat")
# (syscall, argument index, the only value allowed there): another process's scheduling settings
SELF_ONLY = (("setpriority", 0, 0), ("setpriority", 1, 0),   # PRIO_PROCESS, who = 0 (the caller)
             ("sched_setaffinity", 0, 0), ("sched_setscheduler", 0, 0), ("sched_setparam", 0, 0),
             ("sched_setattr", 0, 0), ("ioprio_set", 0, 1), ("ioprio_set", 1, 0))   # IOPRIO_WHO_PROCESS, 0
_lock = threading.Lock()
_path: str | None = None


def build_filter():
    """The ``pyseccomp.SyscallFilter`` described in the module docstring.

    Raises:
        SandboxError: pyseccomp or libseccomp is missing.
    """
    try:
        import pyseccomp as sc  # noqa: PLC0415
        filt = sc.SyscallFilter(defaction=sc.ALLOW)
    except Exception as exc:  # noqa: BLE001 - ImportError or OSError from loading libseccomp
        raise SandboxError(f"seccomp is unavailable: {exc}",
                           "pip install pyseccomp and apt-get install libseccomp2") from exc
    for name in DENIED:
        try:
            filt.add_rule(sc.ERRNO(errno.EPERM), name)
        except Exception:  # noqa: BLE001 - a syscall this architecture does not have
            continue
    filt.add_rule(sc.ERRNO(errno.EACCES), "socket", sc.Arg(0, sc.NE, socket.AF_UNIX))
    for name, arg, value in SELF_ONLY:
        try:
            filt.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(arg, sc.NE, value))
        except Exception:  # noqa: BLE001 - a syscall this architecture does not have
            continue
    return filt


def seccomp_bpf_path() -> str:
    """Path of the compiled BPF program (0600, in a private 0700 folder; built once)."""
    global _path
    with _lock:
        if _path is None or not os.path.exists(_path):
            from sdk.sandbox.pyruntime import remove_stale  # noqa: PLC0415

            remove_stale("tuneloop-seccomp-")
            folder = tempfile.mkdtemp(prefix=f"tuneloop-seccomp-{os.getpid()}-")
            atexit.register(shutil.rmtree, folder, True)
            path = os.path.join(folder, "filter.bpf")
            with open(path, "wb") as fh:
                build_filter().export_bpf(fh)
            _path = path
        return _path
