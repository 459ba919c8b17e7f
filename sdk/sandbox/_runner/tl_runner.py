"""Runs inside the sandbox, before any untrusted code, with the sandbox's Python (``-I -S -B``).

usage: tl_runner.py --fd N --mode pytest|script [--target PATH] [--entry NAME] [--path DIR] TEST...

``--path DIR``: a read-only test-dependency environment, appended to ``sys.path`` (after the
task's files); the pytest plugins it declares (``pytest11`` entry points) are loaded with ``-p``.

The first line of stdin is a random nonce; it is read before the solution is loaded, then
stdin is replaced by /dev/null. Every event goes to fd N as ``<nonce> <json>\\n``. The parent
ignores lines without the nonce, and treats a run without the final ``end`` event as failed,
so ``sys.exit(0)`` / ``os._exit(0)`` in the solution cannot produce a pass.

Stdlib only (this file must run on any Python >= 3.8); pytest is imported from this folder.
"""

import builtins
import json
import os
import sys
import traceback

MSG = 2000


def _args(argv):
    opts, tests, i = {"fd": None, "mode": None, "target": None, "entry": None, "path": None}, [], 0
    while i < len(argv):
        if argv[i].startswith("--") and argv[i][2:] in opts:
            opts[argv[i][2:]] = argv[i + 1]
            i += 2
        else:
            tests.append(argv[i])
            i += 1
    return opts, tests


class Channel:
    """The nonce-tagged report pipe."""

    def __init__(self, fd, nonce):
        self.fd, self.nonce = fd, nonce

    def emit(self, **event):
        """Write one nonce-tagged event line to the result pipe (never to stdout)."""
        line = self.nonce + " " + json.dumps(event) + "\n"
        os.write(self.fd, line.encode("utf-8", "replace"))


def _read_nonce():
    data = b""
    while not data.endswith(b"\n") and len(data) < 256:
        chunk = os.read(0, 256)
        if not chunk:
            break
        data += chunk
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return data.decode().strip()


class Reporter:
    """pytest plugin: one ``test`` event per test item, ``collect_error`` per broken module."""

    def __init__(self, chan):
        self.chan, self.results, self.collected = chan, {}, 0

    def pytest_collectreport(self, report):
        """pytest hook: report collection errors as failures."""
        if report.failed:
            self.chan.emit(event="collect_error", nodeid=report.nodeid,
                           message=str(report.longreprtext)[-MSG:])

    def pytest_collection_modifyitems(self, items):
        """pytest hook: record how many tests were collected."""
        self.collected = len(items)

    def pytest_runtest_logreport(self, report):
        """pytest hook: emit each test's outcome once."""
        outcome, msg = self.results.get(report.nodeid, (None, ""))
        if report.failed:
            outcome = "failed" if report.when == "call" else (outcome if outcome in ("failed", "error") else "error")
            msg = (msg + "\n" + str(report.longreprtext))[-MSG:]
        elif report.skipped and outcome is None:
            outcome = "skipped"
        elif report.passed and report.when == "call":
            outcome = "passed"
        self.results[report.nodeid] = (outcome, msg)
        if report.when == "teardown":
            self.chan.emit(event="test", name=report.nodeid, outcome=outcome or "error", message=msg.strip())

    def pytest_sessionfinish(self, session, exitstatus):
        """pytest hook: emit the end-of-session marker after all tests ran."""
        self.chan.emit(event="end", exitstatus=int(exitstatus), collected=self.collected)


def _plugins(path):
    """``-p MODULE`` for every ``pytest11`` entry point declared in the environment ``path``."""
    out = []
    for name in sorted(os.listdir(path)) if path and os.path.isdir(path) else []:
        ep = os.path.join(path, name, "entry_points.txt")
        if not name.endswith(".dist-info") or not os.path.isfile(ep):
            continue
        section = None
        with open(ep, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if line.startswith("["):
                    section = line.strip("[]").strip()
                elif section == "pytest11" and "=" in line:
                    out += ["-p", line.split("=", 1)[1].strip().split(":")[0]]
    return out


def run_pytest(chan, tests, deps=None):
    """Run pytest on the read-only tests with this plugin; outcomes go to the nonce-tagged pipe."""
    import pytest  # noqa: E402  (from the runtime folder put first on sys.path)

    args = ["-q", "-p", "no:cacheprovider", "-p", "no:pastebin", "-p", "no:legacypath",
            "--rootdir", os.getcwd(), "-o", "console_output_style=classic"] + _plugins(deps) + tests
    pytest.main(args, plugins=[Reporter(chan)])


def run_script(chan, target, test, entry):
    """HumanEval-style: run solution, then the test file, then ``check(<entry>)``."""
    with open(target, encoding="utf-8") as fh:
        src = fh.read()
    with open(test, encoding="utf-8") as fh:
        test_src = fh.read()
    run_script_source(chan, target, src, test, test_src, entry)


def run_script_source(chan, target, src, test, test_src, entry):
    """:func:`run_script` on sources already in memory (the test is read before the solution
    runs, so the solution cannot edit it)."""
    ns = {"__name__": "__tl_main__", "__builtins__": builtins}
    try:
        code = compile(src, target, "exec")
    except SyntaxError:
        chan.emit(event="compile_error", message=traceback.format_exc(limit=0)[-MSG:])
        return
    try:
        exec(code, ns)
    except BaseException:  # noqa: BLE001 - anything before the tests is a runtime error
        chan.emit(event="runtime_error", message=traceback.format_exc()[-MSG:])
        return
    try:
        exec(compile(test_src, test, "exec"), ns)
        if entry not in ns:
            raise NameError("the solution does not define %r" % entry)
        ns["check"](ns[entry])
    except BaseException:  # noqa: BLE001 - any exception fails the check
        chan.emit(event="test", name="check", outcome="failed", message=traceback.format_exc()[-MSG:])
    else:
        chan.emit(event="test", name="check", outcome="passed", message="")
    chan.emit(event="end", exitstatus=0, collected=1)


def main():
    """Entry point inside the sandbox: parse arguments, run the pytest or script mode."""
    opts, tests = _args(sys.argv[1:])
    chan = Channel(int(opts["fd"]), _read_nonce())
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [here, os.getcwd()]
    if opts["path"]:
        sys.path.append(opts["path"])
    sys.dont_write_bytecode = True
    chan.emit(event="start", python=sys.version.split()[0])
    try:
        if opts["mode"] == "pytest":
            run_pytest(chan, tests, opts["path"])
        else:
            run_script(chan, opts["target"], tests[0], opts["entry"])
    finally:
        _usage(chan)
    sys.stdout.flush()
    sys.stderr.flush()


def _usage(chan):
    """CPU seconds of this process and its reaped children (informational: bwrap's pid
    namespace hides them from the parent's wait4)."""
    try:
        import resource
        total = 0.0
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
            ru = resource.getrusage(who)
            total += ru.ru_utime + ru.ru_stime
        chan.emit(event="usage", cpu_s=round(total, 4))
    except Exception:  # noqa: BLE001 - best effort only
        pass


if __name__ == "__main__":
    main()
