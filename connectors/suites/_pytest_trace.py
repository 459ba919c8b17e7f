"""A small pytest plugin that records, per test, which package functions it called.

Loaded into a *separate* pytest process by :mod:`connectors.suites.pytest_collect` (``-p
_tuneloop_trace`` with this file copied into a temporary folder on ``PYTHONPATH``); it
imports nothing from tuneloop, so the company's code never runs in our process.

Environment:
    TUNELOOP_TRACE_ROOT: absolute package folder; only code objects under it are recorded. A
        single module file (``six.py``) records that file's code only, with relpath ``""``.
    TUNELOOP_TRACE_OUT: JSON file written at session end.
    TUNELOOP_TRACE_CALLS: "1" to trace calls (the first run), "0" to record outcomes only.
    TUNELOOP_TRACE_PATH: folders appended to ``sys.path`` when the plugin loads (the test
        dependencies: after site-packages, so the running pytest is never replaced).
    TUNELOOP_TEST_TIMEOUT: seconds one test may run (setup + call + teardown) before it is
        failed with ``TestHang`` (SIGALRM, main thread), so one hanging test costs that test,
        not the whole suite. Default 60; 0 disables.

Output shape: ``{"items": [{"nodeid", "path", "cls", "name", "kind", "outcome", "duration",
"calls": [[relpath, qualname, direct], ...], "detail"?}], "errors": [str], "exitstatus": int}``;
duration is the item's setup + call + teardown seconds (traced, so slower than untraced); ``detail``
(failed or skipped items only) is the crash message or skip reason on one line.
``direct`` is 1 when the caller's frame is outside the package (the test itself called it) the
first time that code object ran in the test (later calls take a fast path; the flag only ranks
tests, it never decides coverage).

Tracing uses a global ``sys.settrace`` function (and ``threading.settrace``) that returns None,
so it sees only function entries (no line, return or C-call events), with a per-code-object cache,
after coverage.py's per-test "dynamic contexts" idea but recording function identities
(``co_qualname``) instead of lines. Nested functions are attributed to their enclosing
top-level function or method (the ``.<locals>`` suffix is cut).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading

import pytest

_MODULE = os.path.realpath(os.environ.get("TUNELOOP_TRACE_ROOT", "/nonexistent"))
_ROOT = _MODULE + os.sep
_MODULE = _MODULE if os.path.isfile(_MODULE) else ""
_OUT = os.environ.get("TUNELOOP_TRACE_OUT", "")
_TRACE = os.environ.get("TUNELOOP_TRACE_CALLS", "1") == "1"
_TEST_TIMEOUT = float(os.environ.get("TUNELOOP_TEST_TIMEOUT", "60") or 0)
sys.path.extend(p for p in os.environ.get("TUNELOOP_TRACE_PATH", "").split(os.pathsep) if p and p not in sys.path)


class TestHang(Exception):
    """A test ran past ``TUNELOOP_TEST_TIMEOUT``."""

    __test__ = False


def _hang(signum, frame):
    raise TestHang(f"test ran longer than {_TEST_TIMEOUT:g} s (TUNELOOP_TEST_TIMEOUT)")

_cache: dict = {}
_skip: set = set()
_fast: set = set()
_current: dict | None = None
_items: dict[str, dict] = {}
_errors: list[str] = []


def _key(code):
    key = _cache.get(code, 0)
    if key == 0:
        fn = code.co_filename
        key = None
        if fn and not fn.startswith("<"):
            real = os.path.realpath(fn) if not fn.startswith(_ROOT) else fn
            if _MODULE and real == _MODULE:
                real = _ROOT  # the single module itself: relpath ""
            if real.startswith(_ROOT):
                qual = getattr(code, "co_qualname", code.co_name).split(".<locals>")[0]
                if not qual.startswith("<"):
                    key = (real[len(_ROOT):].replace(os.sep, "/"), qual)
        _cache[code] = key
    return key


def _trace(frame, event, arg):
    # A global trace function sees only "call" events (generator resumes included);
    # returning None skips line tracing. Code outside the package, and package code already
    # recorded in this test, take the one-set-lookup fast path.
    code = frame.f_code
    if code in _fast or _current is None:
        return None
    key = _key(code)
    if key is None:
        _skip.add(code)
        _fast.add(code)
        return None
    back = frame.f_back
    direct = 1 if back is None or _key(back.f_code) is None else 0
    if direct > _current.get(key, -1):
        _current[key] = direct
    _fast.add(code)
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Record the item and trace package calls while it runs (setup, call, teardown)."""
    global _current, _fast
    cls = getattr(item, "cls", None)
    _items[item.nodeid] = {
        "nodeid": item.nodeid,
        "path": str(getattr(item, "path", "")),
        "cls": cls.__name__ if cls is not None else None,
        "name": getattr(item, "originalname", None) or item.name,
        "kind": "Function" if isinstance(item, pytest.Function) else type(item).__name__,
        "outcome": "passed",
        "duration": 0.0,
        "calls": [],
    }
    if _TRACE:
        _current = {}
        _fast = set(_skip)
        sys.settrace(_trace)
        threading.settrace(_trace)
    if _TEST_TIMEOUT > 0 and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGALRM, _hang)
        signal.setitimer(signal.ITIMER_REAL, _TEST_TIMEOUT)
    try:
        yield
    finally:
        if _TEST_TIMEOUT > 0 and threading.current_thread() is threading.main_thread():
            signal.setitimer(signal.ITIMER_REAL, 0)
        if _TRACE:
            sys.settrace(None)
            threading.settrace(None)
            _items[item.nodeid]["calls"] = sorted([p, q, d] for (p, q), d in _current.items())
            _current = None


def pytest_runtest_logreport(report):
    """Fold the setup/call/teardown reports into one outcome per item."""
    rec = _items.get(report.nodeid)
    if rec is None:
        return
    rec["duration"] += float(getattr(report, "duration", 0.0) or 0.0)
    if report.failed:
        rec["outcome"] = "failed" if report.when == "call" else "error"
        rec["detail"] = _detail(report)
    elif report.skipped and rec["outcome"] == "passed":
        rec["outcome"] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
        rec["detail"] = _detail(report)
    elif report.when == "call" and hasattr(report, "wasxfail"):
        rec["outcome"] = "xpassed"


def _detail(report) -> str:
    """Why an item failed or skipped, on one short line (the crash message or the skip reason)."""
    rep = report.longrepr
    crash = getattr(rep, "reprcrash", None)
    text = crash.message if crash is not None else rep[2] if isinstance(rep, tuple) and len(rep) == 3 else str(rep)
    return " ".join(str(text).split())[:300]


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """A test module that raises ``SystemExit`` at import (``sys.exit("run me under X")``) is a
    collection error of that file: pytest itself stops the whole session on it (INTERNALERROR,
    "no tests ran"), which cost every other file's tests."""
    if isinstance(collector, pytest.Module):
        _progress("collecting " + collector.nodeid)
        collect = collector.collect

        def guarded():
            try:
                return collect()
            except SystemExit as exc:
                raise collector.CollectError(f"SystemExit({exc.code!r}) raised while importing the test module") from None

        collector.collect = guarded
    yield


def _progress(what: str) -> None:
    """What the run is doing now, in ``<out>.progress``: a run killed at its deadline says where it hung."""
    if _OUT:
        with open(_OUT + ".progress", "w", encoding="utf-8") as fh:
            fh.write(what)


def pytest_runtest_logstart(nodeid, location):
    """Progress: this test starts (see :func:`_progress`)."""
    _progress("running " + nodeid)


def pytest_collectreport(report):
    """Keep collection errors: they explain an empty or partial suite."""
    if report.failed:
        _errors.append(f"{report.nodeid or '<session>'}: {str(report.longrepr)[-400:]}")


def pytest_sessionfinish(session, exitstatus):
    """Write the report file read back by :mod:`connectors.suites.pytest_collect`."""
    if not _OUT:
        return
    with open(_OUT, "w", encoding="utf-8") as fh:
        json.dump({"items": list(_items.values()), "errors": _errors, "exitstatus": int(exitstatus)}, fh)
