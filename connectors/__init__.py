"""Connectors: read test suites, benchmarks and SQL feedback tables into tuneloop records.

They plug into ``sdk`` through the ``tuneloop.sources`` entry points (or a dotted
``package.module:Class`` in a config); ``sdk`` never imports them. One sub-package per concern:

- :mod:`connectors.suites` — test suites and benchmarks → RL tasks: pytest suites
  (``pytest_suite``, with ``pytest_collect`` / ``_pytest_trace`` / ``pysource``), JUnit XML
  reports (``junit``, ``junit_repair``), task files (``file_tasks``), HumanEval/MBPP JSONL
  (``jsonl_bench``).
- :mod:`connectors.feedback_tables` — SQL feedback tables → SFT examples, preference pairs and
  tasks: the source (``source``), its mapping, database access, row stream, record building,
  incremental ingestion, and the reader of tuneloop's own store (``collector``).
- :mod:`connectors.retrievers` — langchain-core retrievers (SQL full-text search, BM25) used as
  tools by rollouts.
"""
