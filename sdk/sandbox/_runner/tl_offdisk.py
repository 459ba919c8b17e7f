"""Tests kept off the disk while the program under test runs (stdlib only; used by ``tl_build.py``).

Issue 14, round 6: a Go solution read the hidden test's source under a guessed name (``go test``
built and ran in one step, so the sources lay beside the program), and a Java solution read its
answers from the hidden test's class file (``sipush`` operands). Two pieces:

- :class:`Decoys`: once the test sources are deleted, an empty decoy takes each one's name and an
  inotify watch held by the driver (never by the program) records every open of it. A program that
  opens a test file by name (listed or guessed) is reported (``tests_read``, flag ``reads_tests``);
  nothing it reads there holds an answer. Nothing honest opens a test's source at run time.
- :func:`take_classes`: the class files javac made from the test sources (found by their
  ``SourceFile`` attribute) are read into memory and deleted before the JVM starts; the driver hands
  them to ``TlJUnit`` on its key pipe (:func:`pack_classes`), which defines them from memory.
- :func:`run_each`: node (CommonJS and ES module tests) runs one test file per ``node --test``, the file's source on
  a pipe (``TL_TEST_FD``) that ``tl_node_guard.cjs`` drains in the test's process before any test or
  solution code and compiles in place of the decoy; the JUnit reports are merged. A fresh key leads
  the pipe: the guard signs each test's own outcome with it on ``TL_REC_FD`` (:func:`signed_records`),
  so that a result frame rewritten between node's child and its runner is caught on the host
  (``sdk.sandbox.languages.nodesign``).
"""

import ctypes
import os
import struct

IN_OPEN = 0x20
DECOY = "// removed before the program ran (tuneloop)\n"


class Decoys:
    """Empty files at ``paths`` (relative to the current folder) whose opens are watched.

    ``opened()`` lists the paths opened since the watch began (read once, after the run). Without
    inotify (an old kernel, a filter) nothing is watched and nothing is reported."""

    def __init__(self, paths):
        self.fd, self.watch = -1, {}
        for path in paths:
            with open(path, "w") as fh:
                fh.write(DECOY)
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
            for path in paths:
                wd = libc.inotify_add_watch(self.fd, path.encode(), IN_OPEN) if self.fd >= 0 else -1
                if wd >= 0:
                    self.watch[wd] = path
        except (OSError, AttributeError):
            self.fd = -1

    def opened(self):
        """The decoys opened so far (sorted); closes the watch."""
        if self.fd < 0:
            return []
        seen, data = set(), b""
        try:
            while True:
                data += os.read(self.fd, 1 << 16)
        except OSError:   # EAGAIN: drained
            pass
        finally:
            os.close(self.fd)
            self.fd = -1
        at = 0
        while at + 16 <= len(data):
            wd, mask, _, size = struct.unpack_from("iIII", data, at)
            if mask & IN_OPEN and wd in self.watch:
                seen.add(self.watch[wd])
            at += 16 + size
        return sorted(seen)


def _source_file(data):
    """The ``SourceFile`` attribute of a class file's bytes, or None (no attribute, bad file)."""
    count, at, pool = struct.unpack_from(">H", data, 8)[0], 10, {}
    i = 1
    while i < count:
        tag = data[at]
        if tag == 1:
            size, = struct.unpack_from(">H", data, at + 1)
            pool[i] = data[at + 3:at + 3 + size].decode("utf-8", "replace")
            at += 3 + size
        else:
            at += 1 + {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 16: 2, 19: 2, 20: 2, 15: 3}.get(tag, 4)
        i += 2 if tag in (5, 6) else 1
    at += 6
    ifaces, = struct.unpack_from(">H", data, at)
    at += 2 + 2 * ifaces
    for _ in range(2):   # fields, then methods: each with its attributes
        n, = struct.unpack_from(">H", data, at)
        at += 2
        for _ in range(n):
            attrs, = struct.unpack_from(">H", data, at + 6)
            at += 8
            for _ in range(attrs):
                at += 6 + struct.unpack_from(">I", data, at + 2)[0]
    attrs, = struct.unpack_from(">H", data, at)
    at += 2
    for _ in range(attrs):
        name, size = struct.unpack_from(">HI", data, at)
        if pool.get(name) == "SourceFile":
            return pool.get(struct.unpack_from(">H", data, at + 6)[0])
        at += 6 + size
    return None


def take_classes(folder, sources):
    """``[(binary name, bytes)]`` of the class files under ``folder`` compiled from a file named as
    one of ``sources`` (paths; their base names are compared), each deleted from the disk."""
    names = {os.path.basename(s) for s in sources}
    out = []
    for root, _, files in os.walk(folder):
        for f in sorted(files):
            path = os.path.join(root, f)
            if not f.endswith(".class"):
                continue
            with open(path, "rb") as fh:
                data = fh.read()
            try:
                src = _source_file(data)
            except (struct.error, IndexError):
                src = None
            if src in names:
                out.append((os.path.relpath(path, folder)[:-6].replace(os.sep, "."), data))
                os.unlink(path)
    return out


def pack_classes(classes):
    """Bytes for ``TlJUnit``'s key pipe after the key: per class a big-endian u16 name length, the
    name (UTF-8), a u32 length and the class file's bytes."""
    out = []
    for name, data in classes:
        raw = name.encode()
        out += [struct.pack(">H", len(raw)), raw, struct.pack(">I", len(data)), data]
    return b"".join(out)


def run_each(spec, env, sources, feed):
    """Run ``spec["run"] + [path]`` once per test file of ``sources`` (``{path: source}``; node: the
    guard of the test's process reads a fresh 32-byte key and then its source from the descriptor named
    by ``TL_TEST_FD``, written by ``feed(fd, data)`` on a thread (``tl_build._feed``), and the file on
    disk stays a decoy; it signs each test's own outcome on ``TL_REC_FD``: :func:`signed_records`).
    Returns (the runs' JUnit reports merged into one document, the first non-zero exit code or 0, the
    signed ``[outcome, name]`` records of all runs, the count of lines that failed the check), or None
    when ``spec["run_timeout"]`` ran out."""
    import secrets
    import subprocess
    import threading
    import time
    deadline, reports, code, records, forged = time.monotonic() + spec["run_timeout"], [], 0, [], 0
    for path in sorted(sources):
        key, got = secrets.token_bytes(32), []
        r, w = os.pipe()
        fd = os.dup2(r, 200, inheritable=True)   # high: node's own descriptors take the low numbers
        os.close(r)
        rr, rw = os.pipe()
        rec = os.dup2(rw, 201, inheritable=True)
        os.close(rw)
        threading.Thread(target=feed, args=(w, key + sources[path].encode()), daemon=True).start()
        drain = threading.Thread(target=_drain, args=(rr, got), daemon=True)
        drain.start()
        try:
            p = subprocess.run(spec["run"] + [path], stdout=subprocess.PIPE, pass_fds=(fd, rec), check=False,
                               env=dict(env, TL_TEST_FD=str(fd), TL_REC_FD=str(rec)),
                               timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return None
        finally:
            os.close(fd)
            os.close(rec)
        drain.join(0.5)   # a grandchild holding the record pipe must not hold us
        lines, bad = signed_records(b"".join(got), key)
        records += lines
        forged += bad
        reports.append(p.stdout)
        code = code or p.returncode
    return _merge_junit(reports), code, records, forged


def _drain(fd, into, cap=4 << 20):
    """Read the pipe ``fd`` into the list ``into`` until EOF (or ``cap`` bytes), then close it."""
    try:
        while sum(map(len, into)) < cap:
            b = os.read(fd, 65536)
            if not b:
                break
            into.append(b)
    finally:
        os.close(fd)


def signed_records(data, key):
    """``([[outcome, name], ...], forged)`` from the guard's record pipe (``tl_node_guard.cjs``,
    ``signVerdicts``): each line is ``<mac> <seq> <passed|failed> <name as UTF-8 hex>``, mac the first
    16 bytes (hex) of HMAC-SHA256(key, ``<seq> <outcome> <hex>``), seq counting from 0. A line with a
    wrong mac, out of sequence or malformed is counted as forged and dropped."""
    import hashlib
    import hmac
    out, forged = [], 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        mac, _, body = raw.partition(b" ")
        parts = body.split(b" ")
        ok = hmac.compare_digest(mac, hmac.new(key, body, hashlib.sha256).hexdigest()[:32].encode())
        try:
            good = ok and len(parts) == 3 and parts[0] == str(len(out)).encode() and parts[1] in (b"passed", b"failed")
            name = bytes.fromhex(parts[2].decode()).decode("utf-8", "replace") if good else ""
        except ValueError:
            good = False
        if good:
            out.append([parts[1].decode(), name])
        else:
            forged += 1
    return out, forged


def _merge_junit(reports):
    """One ``<testsuites>`` document holding what each report's root held (one report: unchanged)."""
    import re
    if len(reports) == 1:
        return reports[0]
    inner = [re.sub(rb"^\s*(<\?xml[^>]*\?>)?\s*<testsuites[^>]*>|</testsuites>\s*$", b"", r) for r in reports]
    return b'<?xml version="1.0" encoding="utf-8"?>\n<testsuites>\n' + b"".join(inner) + b"</testsuites>\n"
