"""The parsed-row stream that full and incremental feedback reads share.

A feedback reader turns raw rows into ``(dedup key, Row or Quarantined)`` pairs and
deduplicated records. :class:`RowReader` is that contract as the incremental ingestion sees it,
and :func:`collect` files a record stream into a :class:`SourceResult`. Both live here, below
:mod:`connectors.feedback_tables.source` and :mod:`connectors.feedback_tables.incremental`, so the
source can use the incremental reader and the incremental reader can drive any source without
either module importing the other back (they used to form an import cycle).
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Protocol, Union

from connectors.feedback_tables.records import Record, Row
from sdk.sources import PreferencePair, SftExample, SourceResult
from sdk.tasks.records import Quarantined, Task

ParsedRow = tuple[tuple, Union[Row, Quarantined]]
"""``(dedup key, parsed row or quarantine entry)``: one raw row after mapping and redaction."""


class RowReader(Protocol):
    """A feedback reader seen from :class:`~connectors.feedback_tables.incremental.IncrementalIngest`.

    Attributes:
        counts: the reader's counters (``rows_read``, ``duplicates_dropped``, ...) of its last read.
        origin: names the table or query, e.g. ``url#table``; state of another origin is refused.
        batch_size: rows per committed batch.
        row_column: the column holding the increasing ``row_id`` (valid once a read has started).
    """

    counts: dict[str, int]

    @property
    def origin(self) -> str:
        """Where the rows come from (a display string of the URL and table)."""
        ...

    @property
    def batch_size(self) -> int:
        """Rows fetched per round trip."""
        ...

    @property
    def row_column(self) -> str:
        """The column holding the increasing ``row_id``."""
        ...

    def iter_rows(self, after: Any = None) -> Iterator[ParsedRow]:
        """Parsed rows with ``row_id > after`` in ``row_id`` order, not deduplicated."""
        ...

    def records_from_rows(self, parsed: Iterable[ParsedRow], grouped: bool) -> Iterator[Record]:
        """Deduplicate parsed rows (latest per key wins) and build records."""
        ...

    def reset_counts(self) -> None:
        """Zero ``counts``."""
        ...


def collect(records: Iterable[Record]) -> SourceResult:
    """A :class:`SourceResult` holding ``records`` filed by type, in stream order (counts empty)."""
    result = SourceResult()
    buckets: dict[type, list] = {SftExample: result.sft_examples, PreferencePair: result.preference_pairs,
                                 Task: result.tasks, Quarantined: result.quarantined}
    for record in records:
        buckets[type(record)].append(record)
    return result
