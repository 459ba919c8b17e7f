"""Runs inside the sandbox for compiled and non-Python languages (stdlib only).

usage: tl_build.py --fd N --spec SPEC.json

Reads the nonce from stdin, copies the read-only work folder to $TMPDIR/build (compilers and
``go``/``node`` want to write next to the sources), runs the optional compile command with its
own timeout, then the test command, and emits nonce-tagged events: ``start``,
``compile_error``/``compile_timeout``, ``compiled``, ``run`` (exit code, stdout tail),
``run_timeout``, ``artifact`` (report files), ``end``.

With ``"channel": true`` in the spec (C/C++ ``tl_test.h``, issue 14) the test program gets a
result pipe on fd 3 and a fresh nonce on fd 4 (written, then closed here); only the lines on fd 3
that carry that nonce come back, as ``channel`` events. Everything the program prints stays
untrusted output. This driver makes itself non-dumpable, so the tests cannot open its pipes or
memory through ``/proc``.
"""

import fcntl
import glob
import json
import os
import secrets
import shutil
import subprocess
import sys
import threading

CAP = 4 << 20


def main():
    """Compile the task's sources inside the sandbox and report the outcome on the result pipe."""
    argv = sys.argv[1:]
    fd, spec_path = int(argv[argv.index("--fd") + 1]), argv[argv.index("--spec") + 1]
    nonce = _read_nonce()

    def emit(**event):
        os.write(fd, (nonce + " " + json.dumps(event) + "\n").encode("utf-8", "replace"))

    tmp = os.environ.get("TMPDIR", "/tmp")
    with open(spec_path) as fh:
        spec = json.loads(fh.read().replace("{tmp}", tmp).replace("{src}", os.getcwd()))  # {src}: read-only
    emit(event="start")
    build = os.path.join(tmp, "build")
    shutil.copytree(os.getcwd(), build, dirs_exist_ok=True)
    os.chdir(build)
    env = dict(os.environ, **spec.get("env", {}))
    for d in spec.get("mkdirs", []):
        os.makedirs(d, exist_ok=True)
    if spec.get("compile"):
        try:
            p = subprocess.run(spec["compile"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                               timeout=spec["compile_timeout"], pass_fds=())
        except subprocess.TimeoutExpired:
            emit(event="compile_timeout")
            return
        if p.returncode != 0:
            emit(event="compile_error", message=p.stdout.decode("utf-8", "replace")[-4000:])
            return
        emit(event="compiled")
    if spec.get("channel"):
        ran = _run_channel(spec, env)
        if ran is None or ran == "stopped":
            emit(event="run_timeout", stopped=ran == "stopped")   # stopped: someone sent it SIGSTOP
            return
        out, code, lines = ran
        emit(event="channel_used")
        for line in lines:
            emit(event="channel", line=line)
    else:
        try:
            p = subprocess.run(spec["run"], stdout=subprocess.PIPE, env=env, timeout=spec["run_timeout"])
            out, code = p.stdout, p.returncode
        except subprocess.TimeoutExpired:
            emit(event="run_timeout")
            return
    sys.stdout.buffer.write(out[-65536:])
    sys.stdout.flush()
    emit(event="run", exit=code, stdout=out.decode("utf-8", "replace")[-CAP:])
    for pattern in spec.get("artifacts", []):
        for path in sorted(glob.glob(pattern)):
            with open(path, "rb") as fh:
                emit(event="artifact", path=path, content=fh.read(CAP).decode("utf-8", "replace"))
    emit(event="end")


def _read_nonce() -> str:
    """The run's nonce, one line on stdin; stdin is then replaced by /dev/null."""
    data = b""
    while not data.endswith(b"\n") and len(data) < 256:
        chunk = os.read(0, 256)
        if not chunk:
            break
        data += chunk
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    return data.decode().strip()


def _no_dump():
    """PR_SET_DUMPABLE 0: our fds and memory are closed to same-uid processes via /proc."""
    try:
        import ctypes  # noqa: PLC0415
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort; the nonce still guards the channel
        pass


def _stopped(pid):
    """True when process ``pid`` is stopped (state T: a SIGSTOP from the code under test)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] in (b"T", b"t")
    except (OSError, IndexError):
        return False


def _run_channel(spec, env):
    """Run the test program with a result pipe on fd 3 and a nonce on fd 4.
    (stdout, exit code, the nonce's lines without it), None on timeout, "stopped" when the
    program was found stopped at the timeout."""
    nonce = secrets.token_hex(24)
    res_r, res_w = os.pipe()
    non_r, non_w = os.pipe()
    hi_res = fcntl.fcntl(res_w, fcntl.F_DUPFD_CLOEXEC, 64)
    hi_non = fcntl.fcntl(non_r, fcntl.F_DUPFD_CLOEXEC, 64)
    os.close(res_w)
    os.close(non_r)

    def setup():  # fds 3 and 4 only: our own report fd is not inherited
        os.dup2(hi_res, 3)
        os.dup2(hi_non, 4)
        os.closerange(5, 1 << 16)

    os.write(non_w, (nonce + "\n").encode())
    os.close(non_w)
    chunks = []

    def drain():
        while True:
            b = os.read(res_r, 65536)
            if not b or sum(map(len, chunks)) > CAP:
                return
            chunks.append(b)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        p = subprocess.Popen(spec["run"], stdout=subprocess.PIPE, env=env, preexec_fn=setup, close_fds=False)
    finally:
        os.close(hi_res)
        os.close(hi_non)
    try:
        out, _ = p.communicate(timeout=spec["run_timeout"])
    except subprocess.TimeoutExpired:
        stopped = _stopped(p.pid)
        p.kill()
        p.wait()
        return "stopped" if stopped else None
    reader.join(0.5)  # a grandchild holding fd 3 must not hold us
    prefix = nonce + " "
    text = b"".join(chunks).decode("utf-8", "replace")
    return out, p.returncode, [ln[len(prefix):] for ln in text.splitlines() if ln.startswith(prefix)]


if __name__ == "__main__":
    _no_dump()
    main()
