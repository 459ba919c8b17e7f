"""The trusted side of a whole-repository candidate (``repo`` mode; change tasks, issue 17).

The harness (:mod:`tl_harness`) never imports the repository: it writes the tests to a private
folder and starts the repository's test process (:mod:`tl_repo`, a fresh ``python -I -S -B``
holding only a fresh pipe, the report channel of this process never inherited) with a nonce of
its own, then re-derives every outcome from that pipe:

- ``view`` lines are pytest's view (outcomes, collection errors, ``end``); repository code can
  write them too, so they never make a pass on their own;
- evidence (``ran``, flags) counts only on lines tagged with the nonce, which only the test
  process's audit hook holds (:mod:`tl_witness`); any other line counts for nothing;
- ``passed`` stands only when the witness's ``ran`` line for that node id came first (the genuine
  test function was seen returning normally); a pass pytest reported without it is failed and
  flagged;
- only the lines before ``end`` count; a process that ended without ``end`` (``os._exit``, a
  crash, a closed pipe) is a ``runtime_error`` with every test unreached;
- a process killed by the kill-guard's SIGSYS, or an audit-hook report, is ``runner_tampering``.
"""

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile

MSG = 2000
CAP = 64 << 20   # bytes of report: 2 kB per test event, so far beyond any honest suite
HERE = os.path.dirname(os.path.abspath(__file__))
ARGS = ["-p", "no:terminal", "-p", "no:cacheprovider", "-p", "no:pastebin", "-p", "no:legacypath"]


def read_lines(fd, nonce, cap=CAP):
    """``[(trusted, event)]``: the JSON events on ``fd`` until end of file, ``trusted`` for those
    tagged with ``nonce`` (the others tagged ``view``); None past ``cap`` bytes."""
    chunks, size = [], 0
    while True:
        try:
            chunk = os.read(fd, 1 << 20)
        except InterruptedError:
            continue
        if not chunk:
            break
        size += len(chunk)
        if size > cap:
            os.close(fd)
            return None
        chunks.append(chunk)
    os.close(fd)
    out = []
    for line in b"".join(chunks).decode("utf-8", "replace").splitlines():
        tag, _, body = line.partition(" ")
        if tag == nonce or tag == "view":
            try:
                event = json.loads(body)
            except (ValueError, RecursionError):  # a line nested past the parser's depth is the candidate's own
                continue
            if isinstance(event, dict):
                out.append((tag == nonce, event))
    return out


def start(payload, cwd, folder):
    """Start :mod:`tl_repo`; ``(process, read fd, nonce)``."""
    nonce = secrets.token_hex(16)
    rfd, wfd = os.pipe()
    tests = sorted(payload["tests"])
    support = sorted(p for p in payload.get("conftests", {}) if p.endswith(".py") and p not in payload["tests"])
    head = {"nonce": nonce, "fd": wfd, "folder": folder, "tests": tests, "support": support, "cwd": cwd,
            "path": list(payload.get("path", [])), "shadow_exempt": list(payload.get("shadow_exempt") or []),
            "args": ARGS + ["--rootdir", folder, "--confcutdir", folder, "-c", os.path.join(folder, "pytest.ini")]
            + [os.path.join(folder, p) for p in tests]}
    proc = subprocess.Popen([sys.executable, "-I", "-S", "-B", os.path.join(HERE, "tl_repo.py")], cwd=cwd,
                            stdin=subprocess.PIPE, pass_fds=(wfd,), close_fds=True)
    os.close(wfd)
    try:
        proc.stdin.write(json.dumps(head).encode("utf-8"))
        proc.stdin.close()
    except OSError:
        pass
    return proc, rfd, nonce


def write_tests(payload):
    """A private folder holding the request's tests, conftests and a ``pytest.ini``."""
    folder = tempfile.mkdtemp(prefix=".tl-tests-", dir=os.environ.get("TMPDIR") or "/tmp")
    files = dict(payload.get("conftests", {}), **payload["tests"])
    files.setdefault("pytest.ini", "[pytest]\n")
    for rel, text in files.items():
        path = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return folder


def main(chan, payload, remote):
    """``repo`` mode from :mod:`tl_runner`: the ``start``, test, ``end``, ``harness`` and ``usage``
    events on ``chan`` (the candidate process ``remote`` is not used and is ended)."""
    import tl_harness
    cwd = payload.get("cwd") or os.getcwd()
    os.chdir(cwd)
    chan.emit(event="start", python=sys.version.split()[0], warm=False)
    summary, flags = remote.finish(), {}   # the idle candidate process goes first: no process slot used
    try:
        flags = run(chan, payload, cwd, write_tests(payload))
    finally:
        summary["flags"] = dict(summary.get("flags") or {}, **flags)
        chan.emit(event="harness", **summary)
        tl_harness.usage(chan)


def run(chan, payload, cwd, folder):
    """Run the tests in :mod:`tl_repo` and emit the re-derived events on ``chan``; the flags."""
    try:
        proc, rfd, nonce = start(payload, cwd, folder)
        events = read_lines(rfd, nonce)
        if events is None:
            proc.kill()
            chan.emit(event="runtime_error", message="the repository's test process flooded its report pipe")
            events = []
        code = proc.wait()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return forward(chan, events, code)


def forward(chan, events, code):
    """Emit the accepted events (see the module docstring); returns ``{flag: detail}``."""
    ran, flags, end = set(), {}, None
    for trusted, e in events:
        kind = e.get("event")
        if trusted:
            if kind == "ran":
                ran.add(str(e.get("name")))
            elif kind == "flag":   # always_equal keeps up to 8 details: calibration reads every shadow site
                name, detail = str(e.get("flag")), str(e.get("detail", ""))[:200]
                if name == "always_equal" and name in flags and flags[name].count("; ") < 7:
                    flags[name] += "; " + detail
                flags.setdefault(name, detail)
        elif kind == "end":
            end = e
            break
        elif kind == "collect_error":
            chan.emit(event="collect_error", nodeid=str(e.get("nodeid", "")), message=str(e.get("message", ""))[-MSG:])
        elif kind == "runtime_error":
            chan.emit(event="runtime_error", message=str(e.get("message", ""))[-MSG:])
        elif kind == "test":
            name, outcome, msg = str(e.get("name")), e.get("outcome"), str(e.get("message", ""))
            if outcome not in ("passed", "failed", "error", "skipped"):
                outcome = "error"
            if outcome == "passed" and name not in ran:
                outcome, msg = "failed", "pytest reported a pass but the test's own function never returned"
                flags.setdefault("runner_tampering", "a pass without the runner's evidence: " + name[:150])
            chan.emit(event="test", name=name, outcome=outcome, message=msg[-MSG:])
    if code == -signal.SIGSYS:
        flags.setdefault("runner_tampering", "the repository's test process aimed a signal at the harness")
    if end is None:
        why = "killed by signal %d" % -code if code < 0 else "exit %d" % code
        chan.emit(event="runtime_error", message="the repository's test process ended before its tests finished "
                                                 "(%s)" % why)
        chan.emit(event="end", exitstatus=1, collected=0)
    else:
        chan.emit(event="end", exitstatus=int(end.get("exitstatus") or 0) if isinstance(end.get("exitstatus"), int)
                  else 1, collected=int(end.get("collected") or 0) if isinstance(end.get("collected"), int) else 0)
    return flags
