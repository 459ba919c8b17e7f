"""The warm slot's long-lived supervisor: the trusted harness serving one request after another.

Forked once by the warm server (:mod:`tl_zygote`), it never forks: for each request the server
forks a fresh candidate (the solution's process) from its own clean image and passes its pipe
ends here over a Unix socket (``SCM_RIGHTS``), with the request's output files and a status
pipe on which the server, the candidate's parent, relays its wait status and CPU time. This
process then reads the request from stdin, runs :func:`tl_harness.run` against that candidate,
writes its answer (``R <json>``) to the host channel and tells the server (``d`` on the control
pipe), which kills whatever else is left of the request, empties ``/tmp`` and answers ``D``.

The candidate never shares memory with this process, so it cannot read an earlier request's tests
or nonces from it (non-dumpable, ptrace denied; the kill-guard protects this process as the
candidate's sibling). What the *tests* change here is checked after every request
(:class:`tl_state.State`): on any change this process exits after its answer and the server
forks a fresh one for the next request. Not forking a supervisor per request saves its fork,
its exit and the pages it copied (issue 14).
"""

import _socket
import json
import os
import select
import signal
import sys
import time

import tl_guard
import tl_harness
import tl_remote
import tl_rmodule
import tl_state
import tl_wire

RUN = "/tmp/run"
SHUTDOWN = 3
FDS = 6   # per request: write, read, audit, status, stdout file, stderr file


def _write(fd, data):
    while data:
        data = data[os.write(fd, data):]


def read_capped(path, cap):
    """(the first ``cap`` bytes of the file as text, its size); ("", 0) when it cannot be read.
    Plain descriptor calls: ``open(path, "rb").read(cap)`` built the io objects and a
    ``cap``-byte buffer in every supervisor (the two reads in a bare fork: 87 -> 54 pages
    copied, 0.25 -> 0.15 ms; issue 14)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return "", 0
    try:
        size, chunks, left = os.fstat(fd).st_size, [], cap
        want = min(left, size) or min(left, 1 << 16)   # the whole file in one read, usually
        while left > 0:
            chunk = os.read(fd, want)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
            want = min(left, 1 << 16)
        return b"".join(chunks).decode("utf-8", "replace"), size
    except OSError:
        return "", 0
    finally:
        os.close(fd)


class Supervisor:
    """(The server.) The slot's long-lived supervisor as the warm server sees it: forked now, with
    a control pipe (``r``: it holds its candidate; the request's time limit; ``d``: done) and the
    socket on which :func:`send` passes each candidate; ``private``: the server's descriptors that
    the supervisor closes at once."""

    def __init__(self, chan, null, private=()):
        self.sock, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        ctl_r, ctl_w = os.pipe()
        self.pid = fork()
        if self.pid == 0:
            os.close(ctl_r)
            self.sock.close()
            for fd in private:   # the server's own (its pipes to the slot-reset helper): none is the tests'
                os.close(fd)
            serve(chan, ctl_w, theirs, null)
        os.close(ctl_w)
        theirs.close()
        self.ctl, self.pidfd, self.buf = ctl_r, os.pidfd_open(self.pid), b""
        tl_guard.SIBLING[0] = self.pid   # the candidates' kill-guard protects it
        tl_guard.arm(self.pid)   # written into the filter here, once, not in every candidate

    def line(self, wait_s=None):
        """The next line on the control pipe (without its newline), or None: none in time, or closed."""
        while b"\n" not in self.buf:
            if not select.select([self.ctl], [], [], wait_s)[0]:
                return None
            chunk = os.read(self.ctl, 64)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def close(self):
        """Forget a supervisor that has exited (the caller reaped it)."""
        for fd in (self.ctl, self.pidfd):
            os.close(fd)
        self.sock.close()
        tl_guard.SIBLING[0] = 0


def fork():
    """``os.fork()``, retried while a process limit still counts the last request's dying processes."""
    for _ in range(400):
        try:
            return os.fork()
        except BlockingIOError:
            time.sleep(0.005)
    raise SystemExit("cannot fork")


def send(sock, pid, fds):
    """(The server.) Pass the candidate ``pid`` and its ``fds`` (:data:`FDS` of them) to the supervisor."""
    sock.sendmsg([b"%d\n" % pid], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds))])


def _receive(sock):
    """The next candidate: (pid, [fds]), or None when the server closed the socket."""
    msg, anc, _, _ = sock.recvmsg(32, _socket.CMSG_SPACE(4 * FDS))
    fds = []
    for level, kind, data in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += [int.from_bytes(data[i:i + 4], sys.byteorder) for i in range(0, len(data) - len(data) % 4, 4)]
    if not msg or len(fds) != FDS:
        for fd in fds:
            os.close(fd)
        return None
    return int(msg), fds


def _request(chan, ctl, reader, remote):
    """One request against ``remote``'s candidate: the answer frame, or None when stdin closed."""
    try:
        payload = reader.recv()
    except EOFError:
        return None
    started = time.monotonic()
    lim = payload["limits"]
    _write(ctl, b"%f\n" % float(lim["timeout_s"]))
    chan_buf = tl_harness.Channel(chan, payload["nonce"], buffer=True)
    payload.update(cwd=RUN, warm=True)
    try:
        tl_harness.run(chan_buf, payload, remote, started)
    except BaseException as exc:  # noqa: BLE001 - reported as a harness failure
        chan_buf.emit(event="harness_error", message="%s: %s" % (type(exc).__name__, exc))
    sys.stdout.flush()
    sys.stderr.flush()
    cap = lim["output_bytes"]
    out, out_size = read_capped(os.path.join(RUN, ".stdout"), cap)
    err, err_size = read_capped(os.path.join(RUN, ".stderr"), cap)
    return {"nonce": payload["nonce"], "report": "".join(chan_buf.lines), "stdout": out, "stderr": err,
            "stdout_size": out_size, "stderr_size": err_size, "wall_s": time.monotonic() - started}


def _reset(remote, path, null):
    """Put back what the harness itself changes in this process during a request."""
    remote.close()
    tl_remote.CURRENT[:] = []
    sys.path[:] = path
    for name in [n for n, m in sys.modules.items() if isinstance(m, tl_rmodule.RemoteModule)]:
        del sys.modules[name]   # a test's ``import <solution module>``: that request's proxies
    cache = getattr(sys.modules.get("linecache"), "cache", None)
    if type(cache) is dict:
        cache.clear()
    os.dup2(null, 1)
    os.dup2(null, 2)


def serve(chan, ctl, sock, null):
    """The supervisor's life (never returns): one request per candidate the server passes, until
    stdin or the socket closes (exit 3), or until a request changed this process (exit 0)."""
    code = 70
    try:
        # tests import these often (HumanEval: 8 of 164), and a test's first import of a module
        # ends this supervisor (tl_state); loaded here, never in the server: random's at-fork
        # hook would re-seed it in every forked candidate
        import copy  # noqa: F401
        import random  # noqa: F401
        import string  # noqa: F401
        reader, path = tl_wire.Reader(0), list(sys.path)
        state = tl_state.State()
        sys.addaudithook(state.hook)
        state.dirty.clear()
        while True:
            got = _receive(sock)
            if got is None:
                code = SHUTDOWN
                break
            pid, fds = got
            for fd, target in ((fds[4], 1), (fds[5], 2)):
                os.dup2(fd, target)
                os.close(fd)
            remote = tl_remote.Remote((pid, fds[0], fds[1], fds[2], fds[3]))
            _write(ctl, b"r\n")
            frame = _request(chan, ctl, reader, remote)
            if frame is None:
                os.kill(pid, signal.SIGKILL)
                code = SHUTDOWN
                break
            _reset(remote, path, null)
            frame["changed"] = state.changed()   # why this supervisor ends here (None: it serves on)
            _write(chan, b"R " + json.dumps(frame).encode("utf-8", "replace") + b"\n")
            if frame["changed"]:
                code = 0
                break
            _write(ctl, b"d\n")
    finally:
        os._exit(code)
