"""Runs inside the sandbox for compiled and non-Python languages (stdlib only).

usage: tl_build.py --fd N --spec SPEC.json

Reads the nonce from stdin, copies the read-only work folder to $TMPDIR/build (compilers and
``go``/``node`` want to write next to the sources), adds the test sources of a compiled language
from stdin (they are never in the work folder) and deletes them after compiling, runs the optional compile command with its
own timeout, then the test command, and emits nonce-tagged events: ``start``,
``compile_error``/``compile_timeout``, ``compiled``, ``run`` (exit code, stdout tail),
``run_timeout``, ``artifact`` (report files), ``end``.

With ``"channel": true`` in the spec (C/C++ ``tl_test.h``, issue 14) the test program gets a
result pipe on fd 3 and a fresh nonce on fd 4 (written, then closed here); only the lines on fd 3
that carry that nonce come back, as ``channel`` events. With ``"mac": true`` as well (Java's
``TlJUnit``, whose JVM also runs the solution, so a nonce in it could be found by scanning its
memory) fd 4 carries 32 random key bytes instead and every line must be signed with them, in
sequence (:func:`_signed_lines`); an unsigned or out-of-order line is ``channel_forged``. Everything the program prints stays
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
import time

CAP = 4 << 20


def main():
    """Compile the task's sources inside the sandbox and report the outcome on the result pipe."""
    argv = sys.argv[1:]
    fd, spec_path = int(argv[argv.index("--fd") + 1]), argv[argv.index("--spec") + 1]
    nonce, secret = _read_stdin()

    def emit(**event):
        os.write(fd, (nonce + " " + json.dumps(event) + "\n").encode("utf-8", "replace"))

    tmp = os.environ.get("TMPDIR", "/tmp")
    with open(spec_path) as fh:
        spec = json.loads(fh.read().replace("{tmp}", tmp).replace("{src}", os.getcwd()))  # {src}: read-only
    emit(event="start")
    build = os.path.join(tmp, "build")
    shutil.copytree(os.getcwd(), build, dirs_exist_ok=True)
    os.chdir(build)
    _write(secret)   # the tests: never in the work folder, gone again before the program runs
    for name, target in spec.get("links", {}).items():   # node_modules -> the read-only test dependencies
        if not os.path.lexists(name):
            os.symlink(target, name)
    env = dict(os.environ, **spec.get("env", {}))
    if spec.get("elf"):   # tl_test.h guards these too: every ancestor of this driver and its group
        env["TL_GUARD_IDS"] = _guard_ids()
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
    decoys = _off_disk(spec, secret)
    refusal = _elf_refusal(spec["elf"]) if spec.get("elf") else None
    if refusal:   # solution code could run in the C/C++ runner before it starts: never run it
        emit(event="binary_refused", message=refusal)
        emit(event="run", exit=1, stdout="")
        emit(event="end")
        return
    ran = _run(spec, env, emit)
    opened = decoys.opened() if decoys else []
    if opened:   # the program opened a test source by name (listed or guessed)
        emit(event="tests_read", paths=opened)
    if ran is None:
        return
    out, code = ran
    sys.stdout.buffer.write(out[-65536:])
    sys.stdout.flush()
    emit(event="run", exit=code, stdout=out.decode("utf-8", "replace")[-CAP:])
    for pattern in spec.get("artifacts", []):
        for path in sorted(glob.glob(pattern)):
            with open(path, "rb") as fh:
                emit(event="artifact", path=path, content=fh.read(CAP).decode("utf-8", "replace"))
    emit(event="end")


def _run(spec, env, emit):
    """Run the test command; (stdout, exit code), or None after a timeout (already emitted).
    A channel run emits its verified lines as ``channel`` events (and ``channel_forged``)."""
    if spec.get("gorepo") is not None or spec.get("channel"):
        ran = _run_gorepo(spec, env, emit) if spec.get("gorepo") is not None else _run_channel(spec, env)
        if ran == "built_none":
            return None
        if ran is None or ran == "stopped":
            emit(event="run_timeout", stopped=ran == "stopped")   # stopped: someone sent it SIGSTOP
            return None
        out, code, lines, forged = ran
        emit(event="channel_used")
        if forged:   # lines on the result pipe that its program did not sign: the code under test wrote them
            emit(event="channel_forged", count=forged)
        for line in lines:
            emit(event="channel", line=line)
        return out, code
    if spec.get("each"):
        ran = _sibling("tl_offdisk").run_each(spec, env, spec["each_sources"], _feed)
        if ran is None:
            return emit(event="run_timeout")
        emit(event="node_signed", records=ran[2])   # each test's own outcome, signed in its process
        if ran[3]:
            emit(event="channel_forged", count=ran[3])
        return ran[:2]
    try:   # "filter" (Go: test2json): the program's output (stderr merged) is converted after it exits
        guard = _sibling("tl_nofork").installer(os.uname().machine) if spec.get("nofork") else None   # Rust
        p = subprocess.run(spec["run"], stdout=subprocess.PIPE, env=env, timeout=spec["run_timeout"], check=False,
                           stderr=subprocess.STDOUT if spec.get("filter") else None, preexec_fn=guard)
        out = subprocess.run(spec["filter"], input=p.stdout, stdout=subprocess.PIPE, env=env,
                             timeout=spec["run_timeout"], check=False).stdout if spec.get("filter") else p.stdout
        return out, p.returncode
    except subprocess.TimeoutExpired:
        emit(event="run_timeout")
        return None


IRELATIVE = {62: 37, 183: 1032}   # e_machine (x86_64, aarch64) -> R_*_IRELATIVE


def _elf_refusal(path):
    """Why the ``tl_test.h`` program at ``path`` may not run, or None. Its runner starts from
    ``.preinit_array``, before any constructor; code of the solution could still run in that
    process before it through an IFUNC resolver (run while relocating), a second
    ``.preinit_array`` entry, a function the program exports (interposing on what the loader
    and libc call, e.g. ``malloc``), or fake ``__start_tl_cases``/``__stop_tl_cases`` bounds
    (another list of tests). Each is refused (64-bit little-endian ELF on x86_64/aarch64 only)."""
    import struct
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            return "not a 64-bit little-endian ELF program"
        irel = IRELATIVE.get(struct.unpack_from("<H", data, 18)[0])
        if irel is None:
            return "no runner checks for this machine"
        shoff, = struct.unpack_from("<Q", data, 40)
        size, count, names = struct.unpack_from("<HHH", data, 58)
        secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * size) for i in range(count)]
        name = lambda s: data[secs[names][4] + s[0]:data.index(b"\0", secs[names][4] + s[0])].decode()
        by = {name(s): s for s in secs}
        if ".preinit_array" not in by or by[".preinit_array"][5] != 8:
            return "a .preinit_array entry besides the runner's"
        for s in secs:
            if s[1] == 4 and any(struct.unpack_from("<Q", data, o + 8)[0] & 0xFFFFFFFF == irel
                                 for o in range(s[4], s[4] + s[5], 24)):
                return "an IFUNC resolver (it runs before the runner)"
        syms = {}
        for tab in (".dynsym", ".symtab"):
            s = by.get(tab)
            strs = secs[s[6]][4] if s else 0
            for o in range(s[4], s[4] + s[5], 24) if s else ():
                st_name, info, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", data, o)
                sym = data[strs + st_name:data.index(b"\0", strs + st_name)].decode("utf-8", "replace")
                if tab == ".dynsym" and shndx != 0 and info & 0xF in (2, 10):
                    return f"the program exports function {sym!r} (it could interpose on the loader or libc)"
                if sym in ("__start_tl_cases", "__stop_tl_cases"):
                    syms[sym] = value
        cases = by.get("tl_cases")
        if cases and (syms.get("__start_tl_cases") != cases[3] or syms.get("__stop_tl_cases") != cases[3] + cases[5]):
            return "the list of tests is not the one the tests registered"
    except (OSError, struct.error, ValueError, IndexError) as exc:
        return f"the program could not be checked ({exc})"
    return None


def _guard_ids():
    """``pid,-pgid,...`` of this driver, its ancestors (``tl_guard.ancestors``: under the process
    backend the host's own processes) and their groups, for ``tl_test.h``'s guard."""
    tl_guard = _sibling("tl_guard")
    chain = [(os.getpid(), os.getpgid(0))] + tl_guard.ancestors()
    return ",".join(dict.fromkeys(str(v) for pid, pgid in chain for v in (pid, -pgid) if abs(v) > 1))


def _off_disk(spec, secret):
    """Delete the test sources ``secret`` (paths) before the program runs; Java's test classes go to
    memory (``spec["classes"]``, for TlJUnit's pipe); a watched decoy takes each source's name
    (``tl_offdisk.Decoys``, or None without tests)."""
    for path in secret:
        os.unlink(path)
    offdisk = _sibling("tl_offdisk")
    if spec.get("memclasses"):
        spec["classes"] = offdisk.pack_classes(offdisk.take_classes(spec["memclasses"], secret))
    if spec.get("each"):   # node: one run per test file, its source on a pipe (tl_node_guard.cjs)
        spec["each_sources"] = secret
    return offdisk.Decoys(sorted(secret)) if secret else None


def _sibling(name):
    """The runner module ``name`` beside this script (run with -I: its folder is not on the path)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    return __import__(name)


def _read_stdin():
    """The run's nonce (first line of stdin), then the test sources of a compiled language as JSON
    (``{path: source}``, issue 14: never on disk while the program runs; empty for others); stdin is
    then replaced by /dev/null."""
    chunks = []
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    nonce, _, rest = b"".join(chunks).partition(b"\n")
    return nonce.decode().strip(), json.loads(rest) if rest.strip() else {}


def _write(files):
    """Write ``{path: text}`` under the current folder."""
    for path, text in files.items():
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)


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


def _run_gorepo(spec, env, emit):
    """Go ``go_repo`` (``sdk.sandbox.languages.goguard``): build each test package's binary with
    ``go test -c``, then run each in its folder as a signed channel run with a key of its own.
    Build errors go to stderr (``FAIL <folder> [build failed]``); when no package builds,
    ``compile_error`` is emitted and "built_none" returned. Else as :func:`_run_channel`, merged."""
    gospec, tmp = spec["gorepo"], os.environ.get("TMPDIR", "/tmp")
    os.makedirs(os.path.join(tmp, "tlbin"), exist_ok=True)
    built, errors, outs, lines, forged, code = [], [], [], [], 0, 0
    compile_end = time.monotonic() + spec["compile_timeout"]
    for i, folder in enumerate(gospec["packages"]):
        binary = os.path.join(tmp, "tlbin", f"p{i}.test")
        try:
            p = subprocess.run([gospec["go"], "test", "-c", "-vet=off", "-o", binary, "./" + folder if folder else "."],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, pass_fds=(), check=False,
                               timeout=max(1.0, compile_end - time.monotonic()))
        except subprocess.TimeoutExpired:
            emit(event="compile_timeout")
            return "built_none"
        if p.returncode != 0 or not os.path.exists(binary):
            errors.append(p.stdout.decode("utf-8", "replace")[-3000:] + f"FAIL\t{folder or '.'} [build failed]\n")
        else:
            built.append((folder, binary))
    sys.stderr.write("".join(errors))
    sys.stderr.flush()
    if not built:
        emit(event="compile_error", message="".join(errors)[-4000:])
        return "built_none"
    run_end = time.monotonic() + spec["run_timeout"]
    # every binary copied to memory before any runs: a test binary (candidate code) could replace a later one on disk
    built = [(folder, binary, _in_memory(binary)) for folder, binary in built]
    for folder, binary, exe in built:
        left = max(1.0, run_end - time.monotonic())
        one = {"run": [binary, "-test.count=1", "-test.paniconexit0", "-test.v", f"-test.timeout={int(left + 1)}s"],
               "run_timeout": left, "mac": True, "exe_fd": exe}   # os.Args[0]: the file (a test may run itself)
        ran = _run_channel(one, env, cwd=folder or ".")
        os.close(exe)
        if ran is None or ran == "stopped":
            return ran
        outs.append(ran[0])
        code = code or ran[1]
        lines += ran[2]
        forged += ran[3]
    return b"".join(outs), code or (1 if errors else 0), lines, forged


def _in_memory(binary):
    """A read-only descriptor of an in-memory copy of the file ``binary`` (run as ``/proc/self/fd/5``:
    what a test binary writes to the file afterwards is never run; ``os.Args[0]`` is still the
    file, ``os.Executable()`` is not)."""
    wfd = os.memfd_create("tl-test", os.MFD_CLOEXEC)
    with open(binary, "rb") as f, os.fdopen(os.dup(wfd), "wb") as out:
        shutil.copyfileobj(f, out)
    fd = os.open(f"/proc/self/fd/{wfd}", os.O_RDONLY | os.O_CLOEXEC)
    os.close(wfd)
    return fd


def _run_channel(spec, env, cwd=None):
    """Run the test program with a result pipe on fd 3 and a nonce on fd 4 (in folder ``cwd``).
    (stdout, exit code, the nonce's lines without it), None on timeout, "stopped" when the
    program was found stopped at the timeout."""
    nonce = secrets.token_hex(24)
    key = secrets.token_bytes(32)   # "mac" (Java): the program signs each line; no nonce to find in it
    res_r, res_w = os.pipe()
    non_r, non_w = os.pipe()
    hi_res = fcntl.fcntl(res_w, fcntl.F_DUPFD_CLOEXEC, 64)
    hi_non = fcntl.fcntl(non_r, fcntl.F_DUPFD_CLOEXEC, 64)
    os.close(res_w)
    os.close(non_r)

    def setup():  # fds 3 and 4 only (and 5: the program's own in-memory copy): our own report fd is not inherited
        os.dup2(hi_res, 3)
        os.dup2(hi_non, 4)
        if spec.get("exe_fd") is not None:
            os.dup2(spec["exe_fd"], 5)
        os.closerange(6 if spec.get("exe_fd") is not None else 5, 1 << 16)

    # the key, then (Java) the tests' class files: written by a thread, as they may fill the pipe
    threading.Thread(target=_feed, args=(non_w, key + spec.get("classes", b"") if spec.get("mac")
                                         else (nonce + "\n").encode()), daemon=True).start()
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
        p = subprocess.Popen(spec["run"], stdout=subprocess.PIPE, env=env, preexec_fn=setup, close_fds=False, cwd=cwd,
                             executable="/proc/self/fd/5" if spec.get("exe_fd") is not None else None)
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
    if spec.get("mac"):
        return (out, p.returncode) + _signed_lines(b"".join(chunks), key)
    prefix = nonce + " "
    text = b"".join(chunks).decode("utf-8", "replace")
    return out, p.returncode, [ln[len(prefix):] for ln in text.splitlines() if ln.startswith(prefix)], 0


def _feed(fd, data):
    """Write ``data`` to the pipe ``fd`` and close it (a reader that dies early ends it)."""
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
    except OSError:
        pass


def _signed_lines(data, key):
    """(lines, forged) from a signed channel: each line is ``<mac> <seq> <text>`` where mac is
    the first 16 bytes (hex) of SHA-256(key + ``<seq> <text>``) and seq counts from 0. A line
    with a wrong mac or out of sequence is counted as forged and dropped."""
    import hashlib
    lines, forged = [], 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        mac, _, body = raw.partition(b" ")
        seq, _, text = body.partition(b" ")
        ok = secrets.compare_digest(mac, hashlib.sha256(key + body).hexdigest()[:32].encode())
        if ok and seq == str(len(lines)).encode():
            lines.append(text.decode("utf-8", "replace"))
        else:
            forged += 1
    return lines, forged


if __name__ == "__main__":
    _no_dump()
    main()
