"""Retrievers (langchain-core ``BaseRetriever``) that rollouts expose as search tools.

Kept apart from the sources because they do not produce records: a model queries them during
an episode. :class:`SqlFtsRetriever` searches a documents table where it lives (SQLite FTS5,
PostgreSQL full-text), :func:`create_sqlite_fts` builds an FTS5 table from a plain one, and
:class:`Bm25Retriever` ranks in-memory documents. The code is in :mod:`connectors.retrievers.builtin`.
"""

from connectors.retrievers.builtin import Bm25Retriever, SqlFtsRetriever, create_sqlite_fts, query_terms

__all__ = ["Bm25Retriever", "SqlFtsRetriever", "create_sqlite_fts", "query_terms"]
