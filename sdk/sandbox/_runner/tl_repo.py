"""The test process of a whole-repository candidate (change tasks, issue 17); stdlib and pytest only.

usage: started by :mod:`tl_repohost` (never by hand) as a fresh ``python -I -S -B`` whose stdin
carries one JSON header (nonce, report fd, tests folder, test modules, ``sys.path`` additions).

A change task's candidate is the whole working folder: the tests import it, so it runs in this
process, next to pytest. Two kinds of line leave on the report descriptor:

- pytest's view (``view {json}``: outcomes, collection errors, the end marker), written by the
  plugin here (with :func:`tl_witness.emitter`'s writer: a patched ``json`` changes no line).
  Repository code can reach the plugin and write such lines too, so the harness (the parent,
  :mod:`tl_repohost`) never takes a pass from them alone;
- the evidence (``<nonce> {json}``: ``ran`` and ``runner_tampering`` flags), written only by the
  audit hook of :mod:`tl_witness`, installed before any repository code runs and the only holder
  of the nonce: ``ran <node id>`` means the interpreter was seen returning normally from the
  node's genuine test function (see that module for how, and for what it does not cover).

Before any repository code runs (``-I -S``: no ``sitecustomize``, ``usercustomize`` or ``.pth``
file is ever read; the working folder joins ``sys.path`` only after pytest loaded its entry-point
plugins, so a ``*.dist-info`` of the repository declares none) the nonce is read from stdin and
handed to the hook, and every function of every test module is fingerprinted as pytest will
compile it. During each test's call phase the runner's trace function is set; ``end`` is written
by ``pytest_sessionfinish``, then the process leaves through ``os._exit`` (no ``atexit`` hook, no
finaliser of the repository runs after the verdicts). The process is made non-dumpable before the
hook is armed (``/proc/self/mem`` and the like become root's), and a watched event is flagged unless
:mod:`tl_proof` proves it comes from the runner, pytest, pluggy or a pristine test.

Not covered: the tests run in the candidate's process, so their objects are within its reach.
Reading a running test's frame (``sys._getframe``, ``inspect``, a traceback's ``tb_frame``, a
generator's ``gi_frame``, ``logging.currentframe``) or a test function's code (``__code__``,
``f_code``, ``dis``) from repository code is flagged (:func:`tl_proof.watcher`, H4); pytest's session
and config (``sys.meta_path``'s rewriter, ``_pytest.assertion.util``) are withheld during each test's
call and a signal handler gets a stand-in for its frame (:mod:`tl_rguard`, layers with their own
gaps), and the test modules are guarded for the call (:mod:`tl_rmods`): reading what encodes the
tests (a constant, a test's ``pytestmark`` parametrize table, a test function or class) through the
module object, however it was reached, is flagged, while a module or a class that encodes no test is
handed to honest code (a pickle, type hints) with its functions' ``__globals__`` a guarded view for
the call; :mod:`tl_rmods` says what stays open (values kept since collection; tests/rewards/test_redteam_round4.py,
tests/sandbox/test_rmods_honest.py).
"""

import json
import os
import sys
import types

MSG = 2000


def _read_all(fd):
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def plugin(say, folder, cwd, tracer):
    """The pytest plugin (a fresh class whose state lives in this closure): each outcome
    (``test``), collection errors and ``end`` as pytest's view; ``tracer`` (:func:`tl_witness.tracer`)
    is the trace function during each test's call phase."""
    import shutil

    import pytest
    from tl_rguard import hide
    results, collected, root = {}, [0], cwd.rstrip(os.sep)

    class Plugin:
        @pytest.hookimpl(tryfirst=True)
        def pytest_load_initial_conftests(self, early_config):
            """The working folder joins sys.path only now (no entry-point plugin from it)."""
            sys.path.insert(0, root)   # after pytest loaded its entry-point plugins: none from here

        def pytest_collectreport(self, report):
            """Say a collection error with its message."""
            if report.failed:
                say(event="collect_error", nodeid=report.nodeid, message=str(report.longreprtext)[-MSG:])

        def pytest_collection_modifyitems(self, session, config, items):
            """Count the tests; the test files leave the disk."""
            collected[0] = len(items)   # the test files leave the disk, as in the harness's pytest mode
            shutil.rmtree(folder, ignore_errors=True)

        @pytest.hookimpl(wrapper=True, tryfirst=True)
        def pytest_runtest_call(self, item):
            """Trace the call phase: the witness sees the genuine test function return."""
            old, undo = sys.gettrace(), hide()   # pytest's session, config and item out of reach (tl_rguard)
            sys.settrace(tracer)
            try:
                return (yield)
            finally:
                sys.settrace(old)
                undo()

        def pytest_runtest_logreport(self, report):
            """Emit each test's outcome once, at teardown."""
            outcome, msg = results.get(report.nodeid, (None, ""))
            if report.failed:
                outcome = "failed" if report.when == "call" else (outcome if outcome in ("failed", "error") else "error")
                msg = (msg + "\n" + str(report.longreprtext))[-MSG:]
            elif report.skipped and outcome is None:
                outcome = "skipped"
            elif report.passed and report.when == "call":
                outcome = "passed"
            results[report.nodeid] = (outcome, msg)
            if report.when == "teardown":
                say(event="test", name=report.nodeid, outcome=outcome or "error", message=msg.strip())

        def pytest_sessionfinish(self, session, exitstatus):
            """Emit the end marker (no marker: the harness reads a crash)."""
            say(event="end", exitstatus=int(exitstatus), collected=collected[0])
    return Plugin()


def main():
    """Read the header, arm the witness, run pytest with :func:`plugin`, leave via ``_exit``."""
    here, _exit = os.path.dirname(os.path.abspath(__file__)), os._exit
    head = json.loads(_read_all(0).decode("utf-8"))
    fd, cwd, folder = int(head.pop("fd")), os.path.realpath(head["cwd"]) + os.sep, head["folder"]
    sys.path[:0] = [here]   # the working folder joins once pytest's plugins are loaded (the plugin)
    sys.path += head.get("path", [])
    sys.dont_write_bytecode = True
    import tl_guard
    tl_guard.protect()
    tl_guard._PRCTL(4, 0, None, 0, 0)   # PR_SET_DUMPABLE 0: /proc/self/mem and the like leave this uid's reach
    import pytest
    import tl_witness
    # the task's conftests and helpers beside the tests are pristine too: their code is trusted, read as the tests'
    modules = head["tests"] + [p for p in head.get("support", []) if p not in head["tests"]]
    import tl_proof
    import tl_shadow   # comparisons of the test files shadowed before pytest's rewrite (and the fingerprints)
    helpers = tl_shadow.install(folder, tl_proof.libraries(cwd, folder, sys.path), here + os.sep,
                                head.get("shadow_exempt", ()))
    codes = tl_witness.test_codes(folder, modules)
    import tl_rguard
    tl_rguard.signals()   # before any repository code: handlers run with frame=None
    tl_witness.arm(fd, head.pop("nonce"), codes, cwd, tl_rguard.marks(folder, modules, tl_rguard.names()), helpers)
    say = tl_witness.emitter(fd, "view")   # pytest's view: the same writer, tagged view, no secret
    plug = plugin(say, folder, cwd, tl_witness.tracer(folder, {name.rsplit(".", 1)[-1] for _, name in codes}))
    sys.modules["__main__"] = types.ModuleType("__main__")   # this module is not reachable by name
    main_ = pytest.main
    say(event="started")
    try:
        main_(head["args"], plugins=[plug])
    except BaseException as exc:  # noqa: BLE001 - reported; the parent decides
        say(event="runtime_error", message=("%s: %s" % (type(exc).__name__, exc))[-MSG:])
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            _exit(0)


if __name__ == "__main__":
    main()
