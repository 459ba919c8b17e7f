"""Read-ahead for fast ingest (issue 19): the ADBC read and the cutting of chunks at group
boundaries run in a thread, a few chunks ahead of the columnar lane.

Arrow's C stream reader (the ADBC PostgreSQL driver's ``COPY`` decoding) and Arrow's compute
kernels release the GIL, so the read of the next chunks overlaps the processing of this one: on
the 1,000,000-row bench table the read (about 1 s of CPU) left the reading process's main thread.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any

_END = object()


def prefetch(items: Iterable[Any], depth: int = 4) -> Iterator[Any]:
    """``items`` as they are, produced up to ``depth`` ahead by a background thread (the ADBC read
    and Arrow's kernels release the GIL, so the read of the next chunks overlaps the processing of
    this one). An exception of ``items`` is raised here, in order; closing this generator stops the
    thread and closes ``items`` (in that thread)."""
    ready: queue.Queue = queue.Queue(depth)
    stop = threading.Event()

    def put(entry: tuple[Any, BaseException | None]) -> bool:
        while not stop.is_set():
            with contextlib.suppress(queue.Full):
                ready.put(entry, timeout=0.05)
                return True
        return False

    def fill() -> None:
        it = iter(items)
        try:
            for item in it:
                if not put((item, None)):
                    return
            put((_END, None))
        except BaseException as exc:  # noqa: BLE001 - raised again in the consumer
            put((_END, exc))
        finally:
            if hasattr(it, "close"):
                it.close()

    thread = threading.Thread(target=fill, name="tuneloop-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item, exc = ready.get()
            if exc is not None:
                raise exc
            if item is _END:
                return
            yield item
    finally:
        stop.set()
        thread.join()
