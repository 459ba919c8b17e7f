"""The harness's view of the candidate process: a client and the proxies tests see.

:class:`Remote` forks the candidate (:mod:`tl_candidate`) and talks to it one frame at a time
with a deadline. Tests never hold a candidate object: they hold a :class:`RemoteObject`, whose
operations run in the candidate and come back by value (plain data, or the repository's own
classes through a restricted unpickler, :mod:`tl_values`). Type-strict rules: a plain value
compares as itself; a remote (non-plain) object is never equal to plain data, and when such an
object overrides ``__eq__`` the comparison is also reported (``always_equal``). Likewise it is
never ordered against or computed with plain data (``<``, ``-``, ``*``...: TypeError, reported
when its class defines that operator), since its method would see the expected value and pick
the outcome (``abs(f(x) - 0.5) < 1e-6`` with ``__sub__`` returning 0). Two handles still do;
``[]``, unary ``-``/``abs``, ``len``, ``bool`` are forwarded. A builtin subclass of the solution's
is no handle: it arrives as its base value (:mod:`tl_cvalues`).
"""

import builtins
import os
import signal
import time

import tl_values
import tl_wire
from tl_rproxy import CURRENT, RemoteObject, _meta, _unpickle  # noqa: F401  (re-exported)

NEVER_RAISED = ("SystemExit", "KeyboardInterrupt", "GeneratorExit", "StopIteration", "StopAsyncIteration")


class CandidateError(Exception):
    """An exception raised in the candidate whose type is not a builtin exception."""


class CandidateGone(Exception):
    """The candidate process ended or broke the protocol; every later call fails."""


class CandidateTimeout(CandidateGone):
    """A call did not return before the run's deadline (the candidate was killed)."""


class Remote:
    """One candidate process (forked now, before the request is read). ``attached``: one forked
    elsewhere, ``(pid, write fd, read fd, audit fd, status fd)``: the warm server's, which is its
    parent and writes its wait status and CPU seconds on the status pipe once it has reaped it
    (``"<status> <cpu_s>\\n"``; :mod:`tl_zygote`), since only a parent can wait for a process."""

    def __init__(self, attached=None):
        self.sfd = None
        if attached is not None:
            self.pid, a_w, b_r, c_r, self.sfd = attached
        else:
            a_r, a_w = os.pipe()      # harness -> candidate
            b_r, b_w = os.pipe()      # candidate -> harness
            c_r, c_w = os.pipe()      # candidate audit hook -> harness
            self.pid = os.fork()
            if self.pid == 0:
                import tl_candidate
                tl_candidate.start(a_r, b_w, c_w)
            for fd in (a_r, b_w, c_w):
                os.close(fd)
        self.wfd, self.reader, self.afd = a_w, tl_wire.Reader(b_r, c_r, self.drain_audit), c_r
        os.set_blocking(c_r, False)
        self.deadline, self.flags, self.events = None, {}, []
        self.gone, self.timed_out, self.status, self.rusage, self.stopped = None, False, None, None, False
        self.loaded, self.got = False, None
        CURRENT[:] = [self]
        self.mirrors = (None, {})   # (solution module, {name: mirrored exception class}): tl_rmodule
        self.codec = tl_values.Codec(self, RemoteObject, CandidateGone)

    # -- plumbing -------------------------------------------------------------------------
    def flag(self, name, detail):
        """Record a tampering signal (reported once per name, first detail kept)."""
        self.flags.setdefault(name, detail[:300])

    def drain_audit(self):
        """Read what the candidate's audit hook reported so far. Called by the reader whenever the
        audit pipe is readable while an answer is awaited (the hook writes before the answer, so
        the ``select`` that sees the answer sees its lines too), and once more by :meth:`finish`."""
        data = b""
        try:
            while True:
                chunk = os.read(self.afd, 65536)
                if not chunk:   # closed (the candidate ended, or closed it): watched no more
                    self.reader.side = None
                    break
                data += chunk
        except BlockingIOError:
            pass
        except OSError:
            self.reader.side = None
            return
        for line in data.decode("utf-8", "replace").splitlines()[:1000]:
            name, _, detail = line.partition(" ")
            if name in ("runner_tampering", "reads_tests", "always_equal"):
                self.flag(name, "the solution used " + detail)

    def ask(self, req):
        """Send one request, return its answer (stdout/stderr of the call are echoed)."""
        self.got = None   # the candidate may change from here on: the load's ``get`` answer is stale
        if self.gone:
            raise CandidateGone(self.gone)
        if not self.loaded:
            raise RuntimeError("the solution did not load, so the tests cannot use it")
        clock = tl_wire.faked_clock()
        if clock is not None:   # the test froze time (freezegun): the call sees the same clock
            req = dict(req, clock=clock)
        try:
            tl_wire.send(self.wfd, req)
            answer = self.reader.recv(self.deadline)
            while type(answer) is dict and "cb" in answer:   # the candidate calls a test's callable
                tl_wire.send(self.wfd, self.codec.callback(answer))
                answer = self.reader.recv(self.deadline)
        except TimeoutError:
            self.kill()
            self.timed_out = True
            self.gone = "the call did not return before the time limit (the solution was stopped)"
            raise CandidateTimeout(self.gone)
        except (EOFError, OSError, tl_wire.WireError) as exc:
            self.gone = self._death(exc)
            raise CandidateGone(self.gone)
        if type(answer) is not dict:
            self.kill()
            self.gone = "the solution's process broke the protocol"
            raise CandidateGone(self.gone)
        for key, stream in (("out", "stdout"), ("errout", "stderr")):
            text = answer.get(key)
            if text and type(text) is str and self.echo:
                getattr(builtins.__import__("sys"), stream).write(text)
        return answer

    echo = False

    def _death(self, exc):
        """Why the candidate stopped answering: its own exit or signal if it ends within
        ~0.2 s of closing the pipe, else it is killed."""
        if self.sfd is not None:
            self._relayed(0.2)
        for _ in range(40 if self.sfd is None else 0):
            try:
                pid, st, ru = os.wait4(self.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                self.status, self.rusage = os.waitstatus_to_exitcode(st), ru
                break
            time.sleep(0.005)
        self.kill()
        code = self.status
        if code == 0:
            self.flag("exit_trick", "the solution's process exited with status 0 during a call")
            return "the solution's process exited (status 0) instead of answering"
        if code == -signal.SIGSYS:   # tl_guard: it aimed a signal or prlimit at the harness
            self.flag("runner_tampering", "the solution tried to signal or limit a process of the test harness")
        if code is not None and code < 0:
            return "the solution's process was killed by signal %s" % _signame(-code)
        return "the solution's process ended (%s, status %s)" % (exc, code)

    def kill(self):
        """SIGKILL the candidate (idempotent) and reap it."""
        self.stopped = self.stopped or self.status is None
        try:
            os.kill(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.reap()

    def reap(self):
        """Wait for the candidate process once; keep its exit code in ``status`` and its ``rusage``."""
        if self.status is None and self.sfd is not None:
            self._relayed(5.0)
        if self.status is None:
            try:
                _, st, self.rusage = os.wait4(self.pid, 0)
                self.status = os.waitstatus_to_exitcode(st)
            except ChildProcessError:
                self.status = -1
        for fd in (self.wfd, self.reader.fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.wfd = self.reader.fd = -1

    def _relayed(self, wait_s):
        """Read the attached candidate's wait status and CPU seconds from the status pipe, when
        they come within ``wait_s`` (see the class)."""
        import select
        if self.status is not None or not select.select([self.sfd], [], [], wait_s)[0]:
            return
        try:
            status, cpu = os.read(self.sfd, 64).split()
            self.status, self.rusage = os.waitstatus_to_exitcode(int(status)), _Usage(float(cpu))
        except (OSError, ValueError):
            self.status = -1

    def close(self):
        """Close what is left of the candidate's descriptors here (a long-lived harness)."""
        for fd in (self.wfd, self.reader.fd, self.afd, self.sfd):
            if fd is not None and fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.wfd = self.reader.fd = self.afd = -1
        self.sfd = self.reader.side = None

    def finish(self):
        """End the candidate; a summary for the report (flags, exit, CPU seconds)."""
        self.drain_audit()
        if self.status is None:
            self.kill()
        ru = self.rusage
        return {"flags": self.flags, "candidate_exit": None if self.stopped else self.status, "timed_out": self.timed_out,
                "cpu_s": round(ru.ru_utime + ru.ru_stime, 4) if ru else 0.0}

    # -- operations -----------------------------------------------------------------------
    def load(self, req):
        """Load the solution; returns None, or ``(kind, message)`` when it did not load."""
        try:
            tl_wire.send(self.wfd, req)
            answer = self.reader.recv(self.deadline)
        except TimeoutError:
            self.kill()
            self.timed_out = True
            self.gone = "loading the solution did not finish before the time limit"
            return "timeout", self.gone
        except (EOFError, OSError, tl_wire.WireError) as exc:
            self.gone = self._death(exc)
            return "runtime_error", "loading the solution failed: " + self.gone
        if "err" not in answer and "message" not in answer:
            self.loaded = True
            self.got = (req.get("get"), answer.get("got"))
            return None
        err = answer.get("err") or {}
        if err.get("type") == "SystemExit":
            self.flag("exit_trick", "the solution raised SystemExit while loading")
        self.gone = "the solution did not load"
        return answer.get("kind", "runtime_error"), str(answer.get("message") or err.get("tb") or err.get("msg"))

    def result(self, answer):
        """Decode an answer: a value, a :class:`RemoteObject`, or the candidate's exception (the
        warnings the call raised are raised here first: :meth:`rewarn`)."""
        if answer.get("warn"):
            self.rewarn(answer["warn"])
        if "err" in answer:
            err = answer["err"] if type(answer["err"]) is dict else {}
            name, msg = str(err.get("type", "Exception")), str(err.get("msg", ""))
            if name == "SystemExit":
                self.flag("exit_trick", "the solution raised SystemExit during a call")
            exc = self.codec.error(err)
            if exc is not None:
                raise exc
            exc = self._mirrored(err, msg.split(": ", 1)[1] if msg.startswith(name + ": ") else msg)
            if exc is not None:
                raise exc
            cls = getattr(builtins, name, None) if err.get("builtin") and name not in NEVER_RAISED else None
            text = msg.split(": ", 1)[1] if msg.startswith(name + ": ") else msg
            if isinstance(cls, type) and issubclass(cls, BaseException):
                try:
                    exc = cls(text)
                except Exception:  # noqa: BLE001 - an exception type with other arguments
                    exc = CandidateError(msg)
            else:
                exc = CandidateError(msg)
            raise exc
        return self.codec.decode(answer.get("v"))

    def rewarn(self, items):
        """Raise here, with ``warnings.warn_explicit``, each warning the candidate reported
        (``[{"mod", "qual", "base", "msg", "file", "line"}]``), so ``pytest.warns`` and
        ``warnings.catch_warnings`` around the call see it and this process's filters decide
        (``"error"`` raises it here). Its category: the solution's mirrored class, a repository
        or builtin warning class (trusted only), else the nearest builtin one; the message is text."""
        import warnings
        for item in items[:100] if type(items) is list else ():
            if type(item) is not dict:
                continue
            cat = self._warning_class(item)
            text = str(item.get("msg", ""))
            try:
                inst = cat(text)
            except Exception:  # noqa: BLE001 - a repository class that takes other arguments
                inst = UserWarning(text)
            line = item.get("line") if type(item.get("line")) is int else 0
            warnings.warn_explicit(inst, type(inst), str(item.get("file") or "<solution>"), line,
                                   registry=self.__dict__.setdefault("warned", {}))

    def _warning_class(self, item):
        """The warning class ``item`` names (see :meth:`rewarn`); never code of the solution."""
        module, found = self.mirrors
        cls = found.get(item.get("qual")) if module is not None and item.get("mod") == module else None
        if cls is None and type(item.get("mod")) is str and type(item.get("qual")) is str:
            try:
                cls = self.codec.trust.find(item["mod"], item["qual"])
            except Exception:  # noqa: BLE001 - refused: not a trusted class
                cls = None
        if not (isinstance(cls, type) and issubclass(cls, Warning)):
            cls = getattr(builtins, str(item.get("base")), None)
        return cls if isinstance(cls, type) and issubclass(cls, Warning) else UserWarning

    def _mirrored(self, err, text):
        """The candidate's exception as its mirrored class (:mod:`tl_rmodule`), or None."""
        module, found = self.mirrors
        cls = found.get(err.get("qual")) if module is not None and err.get("mod") == module else None
        if cls is None:
            return None
        try:
            args = self.codec.decode(err["args"]) if "args" in err else [text]
            return cls(*args) if type(args) is list else cls(text)
        except Exception:  # noqa: BLE001 - arguments that do not cross: the message still does
            return cls(text)

    def get(self, name):
        """The ``get`` answer for the solution module's ``name``: the one the load brought (script
        mode's entry point, :meth:`tl_candidate.Candidate.serve`) when nothing was asked since, so
        it is what a ``get`` now would answer; else a round trip."""
        got, self.got = self.got, None
        if got is not None and got[0] == name and type(got[1]) is dict and not self.gone:
            return got[1]
        return self.ask({"op": "get", "name": name})

    def handle_of(self, name):
        """The persistent id of the solution module's object ``name`` (a handle), or None."""
        got = self.result(self.ask({"op": "get", "name": name}))
        if isinstance(got, RemoteObject) and got._tl_target()[0] == "h":
            return ("h", got._tl_target()[1])
        return None

    def op(self, name, *args):
        """Ask the candidate to apply operation ``name`` to ``args`` (wire-encoded); its decoded answer."""
        return self.result(self.ask({"op": name, "args": self.codec.to_wire(list(args))}))


class _Usage:
    """The relayed CPU seconds, shaped as the ``rusage`` fields :meth:`Remote.finish` reads."""

    def __init__(self, cpu_s):
        self.ru_utime, self.ru_stime = cpu_s, 0.0


def _signame(num):
    try:
        return signal.Signals(num).name
    except ValueError:
        return str(num)
