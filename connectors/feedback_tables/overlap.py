"""Fast ingest's columnar lane in the reading process, with the exact redactor on the other cores
(issue 19).

Handing whole chunks to a pool of processes (:func:`connectors.feedback_tables.fast.run_chunks`)
moves every chunk and its JSON lines through pipes: measured here on the 1,000,000-row bench table,
about 1.7 s of CPU for the hand-over alone against about 6 s for the whole read inline, and on the
2-core machine the pool was slower than one process at every load tried. Here the lane runs in
the reading process, and only what stays per-text Python, the exact redactor (libphonenumber,
Luhn, mod-97) on the few texts the RE2 pre-filter flags (2 % of the bench's prompts), goes to
``workers - 1`` processes: a chunk's candidate texts are sent when its values are parsed
(:meth:`ChunkLane.begin`), and the chunk is finished (:meth:`ChunkLane.finish`) once the next
chunks have been started, so the redactor and the lane run at the same time. Records, order and
counts are the inline lane's (the lane's own code runs, with the same redaction results).

Only where processes fork (Linux): the workers inherit the source's redactor (a detector may be a
closure that does not pickle).
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import pyarrow as pa

from connectors.feedback_tables import lane

_REDACTOR: Any = None  # the source's redactor, in each worker process
AHEAD = 1
"""Chunks begun per worker before the oldest is finished. With
:data:`~connectors.feedback_tables.fast.LANE_ROWS`-row chunks one is enough: the redactor's share
of a chunk takes about a third of the lane's (bench table), so the texts sent with the chunks
begun ahead keep it busy, and memory holds ``AHEAD * workers + 1`` chunks' state."""


def fits(source: Any, chunk: Any, workers: int) -> bool:
    """Whether this runner applies: Arrow chunks for the columnar lane, a redactor to offload,
    more than one worker, and ``fork``."""
    return (isinstance(chunk, pa.Table) and source._redactor is not None and workers > 1
            and "fork" in multiprocessing.get_all_start_methods())


def _init(redactor: Any) -> None:
    global _REDACTOR
    _REDACTOR = redactor


def _redact(work: list[tuple[list, list, list]]) -> list[list]:
    return lane.redact_texts(_REDACTOR, work)


def run_lanes(source: Any, chunks: Iterable[Any], key_fields: list[str], as_json: bool, workers: int,
              start: int, joined: bool, process_chunk: Any) -> Iterator[tuple[list, dict]]:
    """``(records, counts)`` of each chunk in order, as :func:`fast.process_chunk` gives them
    (``process_chunk`` itself for a chunk the lane does not take), with ``workers - 1`` redaction
    processes and up to ``AHEAD * workers`` chunks begun ahead of the one being finished."""
    pending: deque[tuple[Any, ...]] = deque()
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max(workers - 1, 1), mp_context=ctx, initializer=_init,
                             initargs=(source._redactor,)) as pool:
        pool.submit(int)  # forks the workers now (fork context), before a prefetch thread of ``chunks`` starts
        for chunk in chunks:
            pending.append(_begin(source, pool, chunk, start, key_fields, as_json, joined, process_chunk))
            start += len(chunk)
            while len(pending) > AHEAD * workers:
                yield _finish(source, pending.popleft(), as_json, joined)
        while pending:
            yield _finish(source, pending.popleft(), as_json, joined)


def _begin(source: Any, pool: ProcessPoolExecutor, chunk: pa.Table, start: int, key_fields: list[str],
           as_json: bool, joined: bool, process_chunk: Any) -> tuple[Any, ...]:
    """Parse ``chunk`` and send its redaction candidates; a chunk the lane does not take is done
    here, through ``process_chunk``'s row path."""
    try:
        chunk_lane = lane.ChunkLane(source, chunk, start, key_fields)
        jobs = chunk_lane.begin()
    except lane.Unsupported:
        return ("done", process_chunk(source, chunk, start, key_fields, as_json, False, joined))
    work = [job[2:] for job in jobs]
    return ("lane", chunk_lane, jobs, pool.submit(_redact, work) if work else None)


def _finish(source: Any, begun: tuple[Any, ...], as_json: bool, joined: bool) -> tuple[list, dict]:
    if begun[0] == "done":
        return begun[1]
    _, chunk_lane, jobs, future = begun
    results: list[list] = future.result() if isinstance(future, Future) else []
    saved = source.counts
    source.reset_counts()
    try:
        return chunk_lane.finish(jobs, results, as_json, joined), source.counts
    finally:
        source.counts = saved
