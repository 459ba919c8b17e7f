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

NEVER_RAISED = ("SystemExit", "KeyboardInterrupt", "GeneratorExit", "StopIteration", "StopAsyncIteration")


class CandidateError(Exception):
    """An exception raised in the candidate whose type is not a builtin exception."""


class CandidateGone(Exception):
    """The candidate process ended or broke the protocol; every later call fails."""


class CandidateTimeout(CandidateGone):
    """A call did not return before the run's deadline (the candidate was killed)."""


class Remote:
    """One candidate process (forked now, before the request is read)."""

    def __init__(self):
        a_r, a_w = os.pipe()      # harness -> candidate
        b_r, b_w = os.pipe()      # candidate -> harness
        c_r, c_w = os.pipe()      # candidate audit hook -> harness
        self.pid = os.fork()
        if self.pid == 0:
            import tl_candidate
            tl_candidate.start(a_r, b_w, c_w)
        for fd in (a_r, b_w, c_w):
            os.close(fd)
        self.wfd, self.reader, self.afd = a_w, tl_wire.Reader(b_r), c_r
        os.set_blocking(c_r, False)
        self.deadline, self.flags, self.events = None, {}, []
        self.gone, self.timed_out, self.status, self.rusage, self.stopped = None, False, None, None, False
        self.loaded = False
        self.codec = tl_values.Codec(self, RemoteObject, CandidateGone)

    # -- plumbing -------------------------------------------------------------------------
    def flag(self, name, detail):
        """Record a tampering signal (reported once per name, first detail kept)."""
        self.flags.setdefault(name, detail[:300])

    def drain_audit(self):
        """Read what the candidate's audit hook reported so far."""
        data = b""
        try:
            while True:
                chunk = os.read(self.afd, 65536)
                if not chunk:
                    break
                data += chunk
        except BlockingIOError:
            pass
        except OSError:
            return
        for line in data.decode("utf-8", "replace").splitlines()[:1000]:
            name, _, detail = line.partition(" ")
            if name in ("runner_tampering", "reads_tests", "always_equal"):
                self.flag(name, "the solution used " + detail)

    def ask(self, req):
        """Send one request, return its answer (stdout/stderr of the call are echoed)."""
        if self.gone:
            raise CandidateGone(self.gone)
        if not self.loaded:
            raise RuntimeError("the solution was used while the tests were being collected (it is loaded after)")
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
        finally:
            self.drain_audit()
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
        for _ in range(40):
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
        finally:
            self.drain_audit()
        if "err" not in answer and "message" not in answer:
            self.loaded = True
            return None
        err = answer.get("err") or {}
        if err.get("type") == "SystemExit":
            self.flag("exit_trick", "the solution raised SystemExit while loading")
        self.gone = "the solution did not load"
        return answer.get("kind", "runtime_error"), str(answer.get("message") or err.get("tb") or err.get("msg"))

    def result(self, answer):
        """Decode an answer: a value, a :class:`RemoteObject`, or the candidate's exception."""
        if "err" in answer:
            err = answer["err"] if type(answer["err"]) is dict else {}
            name, msg = str(err.get("type", "Exception")), str(err.get("msg", ""))
            if name == "SystemExit":
                self.flag("exit_trick", "the solution raised SystemExit during a call")
            exc = self.codec.error(err)
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

    def op(self, name, *args):
        """Ask the candidate to apply operation ``name`` to ``args`` (wire-encoded); its decoded answer."""
        return self.result(self.ask({"op": name, "args": self.codec.to_wire(list(args))}))


COMPARISONS = ("lt", "le", "gt", "ge")


def _binop(name, reflected=False, decides=True):
    """An operator of :class:`RemoteObject`; with ``decides``, a handle meeting anything but a
    handle is refused (its method would see the expected value and choose the outcome)."""
    def method(self, other):
        kind, x = self._tl_target()
        if kind == "v":
            import operator
            fn = getattr(operator, name)
            return fn(other, x) if reflected else fn(x, other)
        if decides and not _is_handle(other):
            self._tl_refuse(name, other)
        args = (other, self) if reflected else (self, other)
        return self._tl_remote.op(name, *args)
    return method


def _is_handle(value):   # a proxy of an object that lives in the candidate
    return isinstance(value, RemoteObject) and value._tl_target()[0] == "h"


def _strict(name, want):
    def method(self, *args):
        kind, x = self._tl_target()
        if kind == "v":
            return getattr(x, "__%s__" % name)(*args)
        got = self._tl_remote.op(name, self, *args)
        if type(got) is not want:
            raise TypeError("%s() of a %s returned %s" % (name, self._tl_type, type(got).__name__))
        return got
    return method


class RemoteIterator:
    """Iteration over an object of the candidate, one element per call (``step``), as lazy as
    in one process: ``take(3, count())`` ends, ``groupby``'s groups see their elements."""

    def __init__(self, handle):
        self.handle = handle

    def __iter__(self):
        return self

    def __next__(self):
        got = self.handle._tl_remote.op("step", self.handle)
        if type(got) is not list or not got:
            raise StopIteration
        return got[0]


class RemoteObject:
    """A value living in the candidate process (see the module docstring)."""

    def __init__(self, remote, target, type_name="object"):
        object.__setattr__(self, "_tl_remote", remote)
        object.__setattr__(self, "_tl_ref", target)
        object.__setattr__(self, "_tl_type", type_name)

    def _tl_target(self):
        return self._tl_ref

    def __call__(self, *args, **kwargs):
        kind, x = self._tl_target()
        if kind == "v":
            return x(*args, **kwargs)
        remote = self._tl_remote
        if remote.codec.decoding:
            raise tl_values.tl_pickle.Refused(self._tl_type, "__call__ (a value rebuilt by calling the solution)", True)
        req = {"op": "call", "h": x, "args": remote.codec.to_wire(list(args)),
               "kwargs": remote.codec.to_wire(list(kwargs.items()))}
        answer = remote.ask(req)
        remote.codec.apply_mutations(answer, args, kwargs)
        return remote.result(answer)

    def __getattr__(self, name):
        if (name.startswith("__") and name.endswith("__")) or not self._tl_remote.loaded:
            raise AttributeError(name)
        kind, x = self._tl_target()
        if kind == "v":
            return getattr(x, name)
        return self._tl_remote.result(self._tl_remote.ask({"op": "attr", "h": x, "name": name}))

    def __setattr__(self, name, value):
        kind, x = self._tl_target()
        if kind == "v":
            raise AttributeError("cannot set %r on a plain value" % name)
        self._tl_remote.result(self._tl_remote.ask({"op": "setattr", "h": x, "name": name, "value": self._tl_remote.codec.to_wire(value)}))

    def __eq__(self, other):
        kind, x = self._tl_target()
        if kind == "v":
            return x == other
        if _is_handle(other):
            got = self._tl_remote.op("eq", self, other)
            return got if type(got) is bool else False
        if self._tl_remote.op("suspect", self) is True:
            self._tl_remote.flag("always_equal", "a %s (not plain data, own __eq__) was compared with %s"
                                 % (self._tl_type, type(other).__name__))
        return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def _tl_refuse(self, name, other):
        """Raise TypeError for ``name`` on this handle and ``other`` (no handle); report
        ``always_equal`` when the solution's class defines the operator itself."""
        family = COMPARISONS if name in COMPARISONS else (name, "r" + name)
        if self._tl_remote.op("defines", self, ["__%s__" % n for n in family]) is True:
            self._tl_remote.flag("always_equal", "a %s (not plain data, own __%s__) met %s"
                                 % (self._tl_type, name, type(other).__name__))
        raise TypeError("'%s' between the solution's %s and a %s is refused: only plain data is compared "
                        "or computed with in the tests" % (name, self._tl_type, type(other).__name__))

    def __hash__(self):
        kind, x = self._tl_target()
        return hash(x) if kind == "v" else hash(("tl-remote", x))

    def __iter__(self):
        kind, x = self._tl_target()
        return iter(x) if kind == "v" else RemoteIterator(self._tl_remote.op("iterh", self))

    def __next__(self):
        kind, x = self._tl_target()
        return next(x) if kind == "v" else RemoteIterator(self).__next__()

    def __repr__(self):
        kind, x = self._tl_target()
        if kind == "v":
            return repr(x)
        got = self._tl_remote.op("repr", self)
        return got if type(got) is str else "<%s>" % self._tl_type

    def __str__(self):
        kind, x = self._tl_target()
        if kind == "v":
            return str(x)
        got = self._tl_remote.op("str", self)
        return got if type(got) is str else "<%s>" % self._tl_type

    __bool__ = _strict("bool", bool)
    __len__ = _strict("len", int)
    __int__ = _strict("int", int)
    __float__ = _strict("float", float)
    __contains__ = _strict("contains", bool)
    __lt__, __le__, __gt__, __ge__ = (_binop(n) for n in ("lt", "le", "gt", "ge"))
    __add__, __sub__, __mul__, __truediv__, __floordiv__, __mod__, __pow__ = (
        _binop(n) for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"))
    __radd__, __rsub__, __rmul__ = (_binop(n, True) for n in ("add", "sub", "mul"))
    __getitem__ = _binop("getitem", decides=False)

    def __neg__(self):
        kind, x = self._tl_target()
        return -x if kind == "v" else self._tl_remote.op("neg", self)

    def __abs__(self):
        kind, x = self._tl_target()
        return abs(x) if kind == "v" else self._tl_remote.op("abs", self)


def _signame(num):
    try:
        return signal.Signals(num).name
    except ValueError:
        return str(num)
