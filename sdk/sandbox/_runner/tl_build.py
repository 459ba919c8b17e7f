"""Runs inside the sandbox for compiled and non-Python languages (stdlib only).

usage: tl_build.py --fd N --spec SPEC.json

Reads the nonce from stdin, copies the read-only work folder to $TMPDIR/build (compilers and
``go``/``node`` want to write next to the sources), runs the optional compile command with its
own timeout, then the test command, and emits nonce-tagged events: ``start``,
``compile_error``/``compile_timeout``, ``compiled``, ``run`` (exit code, stdout tail),
``run_timeout``, ``artifact`` (report files), ``end``.
"""

import glob
import json
import os
import shutil
import subprocess
import sys

CAP = 4 << 20


def main():
    """Compile the task's sources inside the sandbox and report the outcome on the result pipe."""
    argv = sys.argv[1:]
    fd, spec_path = int(argv[argv.index("--fd") + 1]), argv[argv.index("--spec") + 1]
    data = b""
    while not data.endswith(b"\n") and len(data) < 256:
        chunk = os.read(0, 256)
        if not chunk:
            break
        data += chunk
    nonce = data.decode().strip()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)

    def emit(**event):
        os.write(fd, (nonce + " " + json.dumps(event) + "\n").encode("utf-8", "replace"))

    tmp = os.environ.get("TMPDIR", "/tmp")
    with open(spec_path) as fh:
        spec = json.loads(fh.read().replace("{tmp}", tmp))
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


if __name__ == "__main__":
    main()
