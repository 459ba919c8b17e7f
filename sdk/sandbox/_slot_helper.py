"""Root helper of :mod:`sdk.sandbox.slotreset` (stdlib only; run as a script on the host).

usage: _slot_helper.py SERVER_PID UID [IN_FD OUT_FD]

Opens the host's ``ns_last_pid`` and the server's pid and mount namespaces, reads the options of its
``/tmp`` and ``/dev/shm`` mounts and the owner and mode of their roots, joins the mount namespace and
answers ``ok`` on stdout (to the host). Then it reads the warm server's requests on ``IN_FD`` and
answers on ``OUT_FD`` (pipes straight to and from the server, so the host's thread is no relay:
issue 14; without them, on stdin and stdout), per ``r N`` line: detach both mounts, mount fresh tmpfs roots with the
same options, owner and mode, make ``/tmp/run`` (0700, the server's uid), and when N > 0 fork a child
into the pid namespace that writes N to its ``ns_last_pid``; answer ``ok`` (or ``error <why>``).
"""

import ctypes
import os
import sys

CLONE_NEWNS, CLONE_NEWPID, MNT_DETACH = 0x00020000, 0x20000000, 2
FLAGS = {"ro": 1, "nosuid": 2, "nodev": 4, "noexec": 8, "noatime": 1024, "nodiratime": 2048,
         "relatime": 1 << 21, "strictatime": 1 << 24}
PATHS = ("/tmp", "/dev/shm")
MAX_PID = 1 << 22   # the kernel's largest pid_max
LIBC = ctypes.CDLL(None, use_errno=True)


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mounts(pid):
    """{path: (flags, data)} of the tmpfs mounts at :data:`PATHS` as the server sees them."""
    out = {}
    with open(f"/proc/{pid}/mountinfo") as fh:
        for line in fh:
            left, _, right = line.partition(" - ")
            fields, (fstype, _, sup) = left.split(), right.split()[:3]
            if fields[4] in PATHS and fstype == "tmpfs":
                flags = sum(FLAGS.get(o, 0) for o in fields[5].split(","))
                data = ",".join(o for o in sup.split(",") if o not in ("rw", "ro"))
                out[fields[4]] = (flags, data)   # the last mount at a path is the one in use
    return out


def _remake(mounts, roots, uid):
    for path in PATHS:
        flags, data = mounts[path]
        _check(LIBC.umount2(path.encode(), MNT_DETACH), f"umount {path}")
        _check(LIBC.mount(b"tmpfs", path.encode(), b"tmpfs", flags, data.encode()), f"mount {path}")
        st = roots[path]
        os.chown(path, st.st_uid, st.st_gid)
        os.chmod(path, st.st_mode & 0o7777)
    os.mkdir("/tmp/run", 0o700)
    if uid >= 0:
        os.chown("/tmp/run", uid, uid)


def _reset_pids(last_fd, last_pid):
    child = os.fork()   # in the slot's pid namespace: ns_last_pid is the writer's namespace's
    if child == 0:
        try:
            os.pwrite(last_fd, str(last_pid).encode(), 0)   # at offset 0: a sysctl ignores later offsets
            os._exit(0)
        except OSError:
            os._exit(1)
    _, status = os.waitpid(child, 0)
    if status != 0:
        raise OSError("ns_last_pid could not be written")


def main():
    """Join the server's namespaces, then remake its roots on each request line (see the module)."""
    pid, uid, *fds = (int(a) for a in sys.argv[1:5])
    try:
        last_fd = os.open("/proc/sys/kernel/ns_last_pid", os.O_WRONLY)
        pid_ns = os.open(f"/proc/{pid}/ns/pid", os.O_RDONLY)
        mnt_ns = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY)
        mounts = _mounts(pid)
        if set(mounts) != set(PATHS):
            raise OSError(f"no tmpfs at {sorted(set(PATHS) - set(mounts))}")
        # nothing is imported after this (the slot's mount namespace resolves every path from here on); were
        # anything imported, it must not come from files a task could have put there (issue 14, round 7)
        sys.path.clear()
        sys.path_importer_cache.clear()
        _check(LIBC.setns(mnt_ns, CLONE_NEWNS), "setns mnt")
        roots = {p: os.stat(p) for p in PATHS}
        _check(LIBC.setns(pid_ns, CLONE_NEWPID), "setns pid")   # for children only
    except OSError as exc:
        sys.stdout.write(f"error {exc}\n")
        return
    sys.stdout.write("ok\n")
    sys.stdout.flush()
    for fd, target in zip(fds, (0, 1)):   # from here on the server is the other end (nothing was read from stdin yet)
        os.dup2(fd, target)
        os.close(fd)
    for line in sys.stdin:
        word, _, arg = line.strip().partition(" ")
        if word != "r" or not arg.isdigit():
            continue
        try:
            _remake(mounts, roots, uid)
            if int(arg) > 0:
                _reset_pids(last_fd, min(int(arg), MAX_PID))
            sys.stdout.write("ok\n")
        except OSError as exc:
            sys.stdout.write(f"error {exc}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
