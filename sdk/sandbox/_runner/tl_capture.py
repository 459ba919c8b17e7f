"""One operation of the candidate process, captured (stdlib only; split out of :mod:`tl_candidate`).

:func:`capture` runs one operation of the solution (a call, an attribute, an operator) with its
``print`` output teed (passed on to the real stream, the first :attr:`Tee.KEEP` characters kept
for the harness) and its warnings recorded, and returns the answer frame: the value (encoded by
the candidate) or the exception as data, plus ``out``/``errout`` and ``warn``.

Issue 14 (throughput): a call used to build two :class:`Tee` objects and two ``StringIO`` each
time; the pairs now come from :data:`POOL` and keep their text as a list of strings, so a call
allocates none of them. A nested operation (the harness calls back into the solution while a
call is running, :meth:`tl_cvalues.Values.call_back`) takes another pair, so no call sees
another's output. The warm server leaves a pair in the pool after its warm-up, so candidates
forked from it start with one.
"""

import builtins
import io
import sys
import traceback
import warnings

import tl_pickle
import tl_wire

MSG = 2000


class Tee(io.TextIOBase):
    """The solution's ``print`` during one operation: written through to the real stream (the
    flood guard sees it) and the first :data:`KEEP` characters kept for the harness (so a
    pytest ``capsys`` test sees what the solution printed). Reused across operations
    (:data:`POOL`); :meth:`take` empties it."""

    KEEP = 1 << 16

    def __init__(self):
        self.real, self.parts, self.size = None, [], 0

    def write(self, s):
        """Pass ``s`` on to the real stream, keeping its first characters (what the solution printed)."""
        if type(s) is not str:
            raise TypeError("write() argument must be str")
        if self.size < self.KEEP:
            part = s[:self.KEEP - self.size]
            self.parts.append(part)
            self.size += len(part)
        return self.real.write(s)

    def flush(self):
        """Flush the real stream."""
        self.real.flush()

    def take(self):
        """The text kept so far (``""`` if none); the tee is empty afterwards."""
        parts = self.parts
        if not parts:
            return ""
        self.parts, self.size = [], 0
        return parts[0] if len(parts) == 1 else "".join(parts)


POOL = []   # free (stdout, stderr) Tee pairs of this process


def capture(cand, fn):
    """Run ``fn()`` as one operation of ``cand`` (a :class:`tl_candidate.Candidate`); its answer frame."""
    pair = POOL.pop() if POOL else (Tee(), Tee())
    out, err = pair
    saved = out.real, err.real = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = pair
    seen = []
    try:
        with warnings.catch_warnings(record=True) as seen:   # re-raised in the harness, inside the call
            warnings.simplefilter("always")
            value = fn()
        answer = {"v": cand.encode(value)}
    except BaseException as exc:  # noqa: BLE001 - every failure goes back as data
        answer = {"err": error(cand, exc)}
    finally:
        sys.stdout, sys.stderr = saved
        for f in saved:
            try:
                f.flush()
            except BaseException:  # noqa: BLE001
                pass
    answer["out"], answer["errout"] = out.take(), err.take()
    POOL.append(pair)
    if seen:
        answer["warn"] = [warning(w) for w in seen[:100]]
    return answer


def error(cand, exc):
    """The solution's exception ``exc`` as data: type, message, traceback, its class and plain
    ``args`` (so the harness can raise it as the mirror of the solution's own exception class),
    and a pickle of it when its class may cross by value."""
    t = type(exc)
    err = {"type": t.__name__[:100], "builtin": getattr(builtins, t.__name__, None) is t,
           "msg": safe_str(exc)[-MSG:], "tb": safe_tb()[-MSG:]}
    try:
        err["mod"], err["qual"] = str(t.__module__)[:200], str(t.__qualname__)[:200]
        err["args"] = tl_wire.encode(list(exc.args))
    except BaseException:  # noqa: BLE001 - not plain: the message alone crosses
        err.pop("args", None)
    if cand.trust.allowed_class(t):
        try:
            exc.__traceback__ = None
            err["p"] = tl_pickle.dumps(exc, cand.persistent_id)
        except BaseException:  # noqa: BLE001 - the name and message still go back
            pass
    return err


def warning(w):
    """One warning the call raised, as plain data for the harness (:meth:`tl_remote.Remote.rewarn`):
    its category's module and qualname, the nearest builtin warning class, message, place."""
    try:
        cat = w.category
        base = next((k.__name__ for k in cat.__mro__ if k.__module__ == "builtins" and issubclass(k, Warning)),
                    "UserWarning")
        mod, qual = str(cat.__module__)[:200], str(cat.__qualname__)[:200]
    except BaseException:  # noqa: BLE001 - a category that cannot be read is a UserWarning
        base, mod, qual = "UserWarning", "builtins", "UserWarning"
    try:
        place = [str(w.filename)[:500], w.lineno if type(w.lineno) is int else 0]
    except BaseException:  # noqa: BLE001
        place = ["<solution>", 0]
    return {"mod": mod, "qual": qual, "base": base, "msg": safe_str(w.message)[-MSG:], "file": place[0],
            "line": place[1]}


def safe_str(exc):
    """``Type: message``, or the type's name when ``str(exc)`` fails."""
    try:
        return "%s: %s" % (type(exc).__name__, exc)
    except BaseException:  # noqa: BLE001
        return type(exc).__name__


def safe_tb():
    """The current traceback as text, or ``""``."""
    try:
        return traceback.format_exc()
    except BaseException:  # noqa: BLE001
        return ""
