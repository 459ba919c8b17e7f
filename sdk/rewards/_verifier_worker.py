"""The worker process of :mod:`sdk.rewards.verifier_pool`: ``python -m sdk.rewards._verifier_worker``.

Frames on stdin/stdout are an 8-byte big-endian length and a pickle. The first frame in is
``(sys_path, preload_modules)``, answered ``("ready", pid)``; each later frame is ``(fn, args)``,
answered ``("ok", fn(*args))`` or ``("error", "Type: message")``. It runs trusted verifier code
(answer checks, judges) on model text as data; it is a process of its own only so that the
parent can kill it at a deadline (field cases W1, W2). ``print`` inside a verifier goes to
stderr, never into the channel.
"""

from __future__ import annotations

import importlib
import pickle
import struct
import sys
from typing import BinaryIO

_HEAD = struct.Struct(">Q")


def read_frame(fh: BinaryIO) -> bytes | None:
    """One frame's payload from ``fh`` (raw or buffered); ``None`` at end of file."""
    head = _read_exact(fh, _HEAD.size)
    return None if head is None else _read_exact(fh, _HEAD.unpack(head)[0])


def _read_exact(fh: BinaryIO, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = fh.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def write_frame(fh: BinaryIO, payload: bytes) -> None:
    """Write ``payload`` as one frame and flush."""
    fh.write(_HEAD.pack(len(payload)) + payload)
    fh.flush()


def _reply(value: tuple) -> bytes:
    try:
        return pickle.dumps(value)
    except Exception as exc:  # noqa: BLE001 - an unpicklable result is the verifier's error
        return pickle.dumps(("error", f"the verifier's result cannot be pickled: {type(exc).__name__}: {exc}"))


def main() -> None:
    """Serve calls until stdin closes."""
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr
    first = read_frame(inp)
    if first is None:
        return
    paths, preload = pickle.loads(first)
    sys.path[:0] = [p for p in paths if p not in sys.path]
    for name in preload:
        importlib.import_module(name)
    write_frame(out, pickle.dumps(("ready", None)))
    while (frame := read_frame(inp)) is not None:
        try:
            fn, args = pickle.loads(frame)
            reply = ("ok", fn(*args))
        except BaseException as exc:  # noqa: BLE001 - every failure is reported, the worker lives on
            reply = ("error", f"{type(exc).__name__}: {exc}")
        write_frame(out, _reply(reply))


if __name__ == "__main__":
    main()
