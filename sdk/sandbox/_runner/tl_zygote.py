"""A pre-forked ("warm") Python for the ``script`` framework, one per sandbox slot.

Runs inside one long-lived bubblewrap (same namespaces, seccomp and uid as a cold run) and
serves requests read as JSON lines on stdin; answers one JSON line per request on stdout.
Per request it forks a child that: starts a new session, lowers its rlimits to the request's,
sends stdout/stderr to files in a fresh /tmp/run, and runs ``tl_runner.run_script`` with the
test source taken from the request (never from disk, so the solution cannot edit it). After
the child ends (or its wall clock runs out) the server kills every other process it can see
(``kill(-1)``: everything of this uid in this pid namespace), reaps them as a subreaper, reads
the capped outputs and wipes /tmp and /dev/shm. The server is not dumpable (no /proc/<pid>/mem
for the child) and seccomp denies ptrace; a child that kills the server only fails its own task
(the caller respawns the slot).
"""

import ctypes
import json
import os
import resource
import select
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tl_runner  # noqa: E402

PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36
RUN = "/tmp/run"


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _child(req, wfd):
    os.closerange(3, wfd)
    os.closerange(wfd + 1, 65536)
    os.setsid()
    try:  # the request's processes, not the server, are the memory killer's first choice
        with open("/proc/self/oom_score_adj", "w") as fh:
            fh.write("1000")
    except OSError:
        pass
    lim = req["limits"]
    mib = 1 << 20
    resource.setrlimit(resource.RLIMIT_NPROC, (lim["processes"] + 3, lim["processes"] + 3))  # + bwrap, init, server
    resource.setrlimit(resource.RLIMIT_CPU, (lim["cpu_s"], lim["cpu_s"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (lim["memory_mb"] * mib, lim["memory_mb"] * mib))
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim["file_size_mb"] * mib, lim["file_size_mb"] * mib))
    resource.setrlimit(resource.RLIMIT_NOFILE, (lim["open_files"], lim["open_files"]))
    os.chdir(RUN)
    for fd, name in ((1, ".stdout"), (2, ".stderr")):
        f = os.open(os.path.join(RUN, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
    chan = tl_runner.Channel(wfd, req["nonce"])
    chan.emit(event="start", python=sys.version.split()[0], warm=True)
    try:
        tl_runner.run_script_source(chan, req["target"], req["code"], req["test_path"], req["test"], req["entry"])
    finally:
        tl_runner._usage(chan)
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)


def _read_capped(path, cap):
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            return fh.read(cap).decode("utf-8", "replace"), size
    except OSError:
        return "", 0


def _serve_one(req):
    shutil.rmtree(RUN, ignore_errors=True)
    os.makedirs(RUN, mode=0o700)
    rfd, wfd = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        try:
            _child(req, wfd)
        finally:
            os._exit(70)
    os.close(wfd)
    pidfd = os.pidfd_open(pid)
    deadline = start + req["limits"]["timeout_s"]
    report, status, usage, timed_out, open_fds = bytearray(), None, None, False, [rfd, pidfd]
    while open_fds:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = status is None
            break
        ready, _, _ = select.select(open_fds, [], [], left)
        for fd in ready:
            if fd == pidfd:
                _, status, usage = os.wait4(pid, 0)
                open_fds.remove(pidfd)
                deadline = min(deadline, time.monotonic() + 0.5)
            else:
                chunk = os.read(rfd, 65536)
                if chunk and len(report) < (8 << 20):
                    report += chunk
                elif not chunk:
                    open_fds.remove(rfd)
    if status is None:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status, usage = os.wait4(pid, 0)
    _kill_everything()
    os.close(rfd)
    os.close(pidfd)
    cap = req["limits"]["output_bytes"]
    out, out_size = _read_capped(os.path.join(RUN, ".stdout"), cap)
    err, err_size = _read_capped(os.path.join(RUN, ".stderr"), cap)
    _wipe()
    return {"exit": os.waitstatus_to_exitcode(status), "timed_out": timed_out, "report": report.decode("utf-8", "replace"),
            "stdout": out, "stderr": err, "stdout_size": out_size, "stderr_size": err_size,
            "cpu_s": usage.ru_utime + usage.ru_stime if usage else 0.0, "wall_s": time.monotonic() - start}


def _kill_everything():
    """SIGKILL every other process of the namespace and reap each one (this server is their
    subreaper), so none is still exiting when the answer goes out."""
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    deadline = time.monotonic() + 2.0
    while _others_alive() and time.monotonic() < deadline:
        time.sleep(0.005)


def _others_alive():
    me = os.getpid()
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in (1, me):
            try:
                with open("/proc/%s/stat" % name, "rb") as fh:
                    if fh.read().rsplit(b")", 1)[1].split()[0] != b"Z":
                        return True
            except (OSError, IndexError):
                continue
    return False


def _wipe():
    for folder in ("/tmp", "/dev/shm"):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass


def main():
    """Entry point of the pre-forked interpreter: serve script requests until told to stop."""
    _libc()
    out = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = _serve_one(json.loads(line))
        except Exception as exc:  # noqa: BLE001 - reported to the caller as a sandbox error
            answer = {"error": "%s: %s" % (type(exc).__name__, exc)}
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
