"""Plain data across the harness/candidate process boundary (stdlib only, Python >= 3.8).

Values travel *by value*, as JSON with tags, and only when every part is of an exact builtin
type: ``None, bool, int, float, str, bytes, complex, list, tuple, dict, set, frozenset``
(``type(x) is int``, never a subclass). Anything else (an ``int`` subclass with its own
``__eq__``, a class instance, a function) is never serialised: the candidate side sends a
*handle* (``{"h": id}``) that the harness can only use through remote calls, and the harness
side refuses to decode anything it does not know. Values of the repository's own classes travel
as restricted pickles (``{"p": ...}``, see :mod:`tl_pickle`). Decoding builds fresh builtin objects, so no
code chosen by the candidate runs in the harness.

Frames on a pipe: ``<length>\\n<json bytes>``; a frame above :data:`MAX_FRAME` is refused.
"""

import json
import os
import select
import time

MAX_FRAME = 64 << 20
# a pipe holds 64 KiB, so one read never returns more; asking for 1 MiB made every read allocate
# (mmap) and shrink (mremap) a 1 MiB buffer, in both processes of every call
PIPE_READ = 1 << 16
MAX_DEPTH = 200
PLAIN_SCALARS = (type(None), bool, int, float, str)
# an int this large travels as hex (``{"i": ...}``): JSON writes ints in decimal, and Python refuses to
# print one of more than 4,300 digits (an honest answer of 7 ** 100000 once failed its test, flagged
# exit_trick; issue 14, round 8); int(text, 16) has no such limit
BIG_INT = 1 << 14000


class WireError(Exception):
    """A frame or value that breaks the protocol (treated as the candidate's failure)."""


class NotPlain(Exception):
    """Raised by :func:`encode` when ``handles`` is None and a value is not plain data."""


def encode(value, handles=None, depth=0):
    """Value -> JSON-able tree. ``handles(obj) -> id`` turns non-plain parts into handles;
    without it a non-plain part raises :class:`NotPlain`."""
    if depth > MAX_DEPTH:
        raise NotPlain("nested too deeply")
    t = type(value)
    if t in PLAIN_SCALARS:
        return {"i": format(value, "x")} if t is int and not -BIG_INT < value < BIG_INT else value
    if t is list:
        return [encode(v, handles, depth + 1) for v in value]
    if t is tuple:
        return {"t": [encode(v, handles, depth + 1) for v in value]}
    if t is dict:
        return {"d": [[encode(k, handles, depth + 1), encode(v, handles, depth + 1)] for k, v in value.items()]}
    if t is set or t is frozenset:
        return {"s" if t is set else "fs": [encode(v, handles, depth + 1) for v in value]}
    if t is bytes:
        return {"b": value.hex()}
    if t is complex:
        return {"c": [value.real, value.imag]}
    if handles is None:
        raise NotPlain("%s is not plain data" % t.__name__)
    node = handles(value)   # an id, or a node of its own (``{"g": ...}``: a global by name)
    return node if type(node) is dict else {"h": node, "type": t.__name__[:80]}


def decode(tree, handle=None, depth=0, loads=None, ref=None):
    """JSON tree -> fresh builtin values; ``handle(id, type_name)`` builds what a handle
    stands for (without it a handle raises :class:`WireError`); ``loads(text)`` decodes a
    pickled value (``{"p": base64}``, :mod:`tl_pickle`; without it one raises WireError);
    ``ref(module, qualname, id)`` what a global named by the candidate stands for
    (``{"g": [module, qualname, handle id]}``; without it one raises WireError)."""
    if depth > MAX_DEPTH:
        raise WireError("nested too deeply")
    t = type(tree)
    if t in PLAIN_SCALARS:
        return tree
    if t is list:
        return [decode(v, handle, depth + 1, loads, ref) for v in tree]
    if t is not dict or len(tree) not in (1, 2):
        raise WireError("unknown value %r" % (t,))
    (tag, body), = [(k, v) for k, v in tree.items() if k != "type"] or [("?", None)]
    if tag == "t":
        return tuple(decode(v, handle, depth + 1, loads, ref) for v in body)
    if tag == "d":
        return {decode(k, handle, depth + 1, loads, ref): decode(v, handle, depth + 1, loads, ref) for k, v in body}
    if tag in ("s", "fs"):
        items = [decode(v, handle, depth + 1, loads, ref) for v in body]
        return set(items) if tag == "s" else frozenset(items)
    if tag == "b":
        return bytes.fromhex(body)
    if tag == "c":
        return complex(float(body[0]), float(body[1]))
    if tag == "i" and type(body) is str:
        try:
            return int(body, 16)
        except ValueError:
            raise WireError("not a hex int") from None
    if tag == "p" and loads is not None:
        return loads(body)
    if tag == "g" and ref is not None and type(body) is list and len(body) == 3 \
            and type(body[0]) is str and type(body[1]) is str and type(body[2]) is int:
        return ref(body[0], body[1], body[2])
    if tag == "h" and handle is not None and type(body) is int:
        return handle(body, str(tree.get("type", "object")))
    raise WireError("unknown tag %r" % (tag,))


def send(fd, obj):
    """Write one frame (blocking)."""
    data = json.dumps(obj, separators=(",", ":")).encode("utf-8", "surrogatepass")
    buf = b"%d\n" % len(data) + data
    while buf:
        buf = buf[os.write(fd, buf):]


# The real clock, out of reach of a test that fakes time: freezegun replaces ``time.monotonic``
# and every module attribute that refers to it (a tuple element is not one), and a faked clock
# would make every call of the test miss its deadline.
CLOCK = (time.monotonic,)
WALL = (time.time,)   # the real wall clock, for :func:`faked_clock`


def faked_clock():
    """``[epoch seconds, local offset seconds]`` of this process's clock when a test faked it
    (``freezegun.freeze_time``: ``time.time()`` more than a second from the real clock), else None."""
    try:
        now = time.time()
        if abs(now - WALL[0]()) < 1.0:
            return None
        import datetime   # only here: importing it costs each warm request ~1 ms of CPU (issue 14)
        local = datetime.datetime.now() - datetime.datetime.utcnow()
        return [float(now), float(local.total_seconds())]
    except Exception:  # noqa: BLE001 - a clock that cannot be read is not forwarded
        return None


class Reader:
    """Reads frames from one fd, with an optional deadline (``time.monotonic()``, read through
    :data:`CLOCK`). ``side``: a second fd watched in the same ``select`` while waiting for a frame;
    ``on_side()`` is called whenever it is readable (the harness's audit pipe: drained as lines
    arrive, one ``select`` per wait instead of a read that finds nothing after every call, and a
    full audit pipe never blocks the candidate; issue 14)."""

    def __init__(self, fd, side=None, on_side=None):
        self.fd, self.buf, self.side, self.on_side = fd, b"", side, on_side

    def _fill(self, deadline):
        if deadline is not None or self.side is not None:
            while True:
                left = None if deadline is None else deadline - CLOCK[0]()
                watch = [self.fd] if self.side is None or self.side < 0 else [self.fd, self.side]
                ready = select.select(watch, [], [], left)[0] if left is None or left > 0 else []
                if not ready:
                    raise TimeoutError("no answer in time")
                if self.side in ready:
                    self.on_side()
                if self.fd in ready:
                    break
        chunk = os.read(self.fd, PIPE_READ)
        if not chunk:
            raise EOFError("the other side closed the pipe")
        self.buf += chunk

    def recv(self, deadline=None):
        """One decoded JSON frame. Raises TimeoutError, EOFError or WireError."""
        while b"\n" not in self.buf:
            if len(self.buf) > 32:
                raise WireError("bad frame header")
            self._fill(deadline)
        head, rest = self.buf.split(b"\n", 1)
        if not head.isdigit() or int(head) > MAX_FRAME:
            raise WireError("bad frame length")
        size = int(head)
        self.buf = rest
        while len(self.buf) < size:
            self._fill(deadline)
        data, self.buf = self.buf[:size], self.buf[size:]
        try:
            return json.loads(data.decode("utf-8", "surrogatepass"))
        except ValueError as exc:
            raise WireError("bad frame: %s" % exc)
