"""SQL feedback-table connectors: rated and corrected LLM answers → SFT examples, preference pairs, tasks.

Kept together because every reader here goes the same way — stream rows, map columns to
feedback fields, dedup (latest per message and user), parse ratings and timestamps, redact,
build records — and only the row stream differs:

- ``source`` — :class:`SqlFeedbackSource` (``type: sql_feedback``): a company's own table or query;
- ``collector`` — :class:`CollectorFeedbackSource` (``type: collector_feedback``): tuneloop's own
  feedback store, read through the store's typed queries (:mod:`feedback.store`);
- ``incremental`` — resumable ingestion with a persisted watermark (``state_dir``);
- ``rows`` — what the source and the incremental reader share: the parsed-row stream
  protocol and the record bucketing (so neither imports the other's module back);
- ``mapping`` (pure: columns, JSON paths, rating scales, timestamps), ``records`` (rows →
  records), ``database`` (engines, clear errors, streaming selects).

Import the classes from their modules; this package imports nothing.
"""
