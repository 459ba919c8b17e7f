"""Built-in retrievers (langchain-core ``BaseRetriever``): SQL full-text search and BM25.

* :class:`SqlFtsRetriever` searches a documents table where it lives: SQLite through an FTS5
  virtual table ranked by ``bm25()`` (:func:`create_sqlite_fts` builds one from a plain table),
  PostgreSQL through ``to_tsvector``/``to_tsquery`` ranked by ``ts_rank``. Queries come from a
  model, so they are never spliced into SQL syntax: they are reduced to word tokens, each
  quoted (FTS5) or sanitised (PostgreSQL), joined with OR, and bound as parameters. Table and
  column names are checked to be plain identifiers when the retriever is built.
* :class:`Bm25Retriever` ranks an in-memory list of documents with ``rank_bm25.BM25Okapi``
  (Robertson & Zaragoza's Okapi BM25); documents with no query term score 0 and are not returned;
  each returned document carries its BM25 score in ``metadata["score"]`` (for ``min_score``).

Both override the one hook ``_get_relevant_documents`` (langchain's shape); tracing, callbacks
and ``invoke`` come from the base class. Errors reading the database raise ``SourceError``.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import PrivateAttr, field_validator

from sdk.errors import SourceError

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_WORD = re.compile(r"\w+", re.UNICODE)


def query_terms(text: str, max_terms: int = 32) -> list[str]:
    """Lower-cased word tokens of ``text`` (at most ``max_terms``, first occurrences kept in order)."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(text.lower()):
        seen.setdefault(w, None)
    return list(seen)[:max_terms]


def _ident(value: str) -> str:
    if not _IDENT.match(value or ""):
        raise ValueError(f"{value!r} is not a plain SQL identifier (letters, digits, underscore)")
    return value


class SqlFtsRetriever(BaseRetriever):
    """Full-text search over a documents table (SQLite FTS5 or PostgreSQL).

    Attributes:
        url: SQLAlchemy URL, e.g. ``sqlite:///docs.db`` or ``postgresql+psycopg2://u@host/db``.
        table: SQLite: the FTS5 virtual table; PostgreSQL: the documents table.
        id_column, text_column: document id and text columns.
        source_column: optional column copied to ``metadata["source"]``.
        k: documents returned per query.
        language: PostgreSQL text-search configuration (``english``, ``simple``...).
    """

    url: str
    table: str
    id_column: str = "id"
    text_column: str = "body"
    source_column: str | None = None
    k: int = 3
    language: str = "english"
    _engine: Any = PrivateAttr(default=None)

    @field_validator("table", "id_column", "text_column", "source_column", "language")
    @classmethod
    def _plain(cls, v: str | None) -> str | None:
        return v if v is None else _ident(v)

    @property
    def engine(self):
        """The SQLAlchemy engine, created on first use."""
        if self._engine is None:
            from sqlalchemy import create_engine

            self._engine = create_engine(self.url)
        return self._engine

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        from sqlalchemy import text
        from sqlalchemy.exc import SQLAlchemyError

        terms = query_terms(query)
        if not terms:
            return []
        src = f", {self.source_column}" if self.source_column else ""
        dialect = self.engine.dialect.name
        if dialect == "sqlite":
            sql = (f"SELECT {self.id_column}, {self.text_column}{src} FROM {self.table} WHERE {self.table} MATCH :q "
                   f"ORDER BY bm25({self.table}) LIMIT :k")
            params = {"q": " OR ".join('"' + t.replace('"', '') + '"' for t in terms), "k": self.k}
        elif dialect == "postgresql":
            doc = f"to_tsvector('{self.language}', {self.text_column})"
            tsq = f"to_tsquery('{self.language}', :q)"
            sql = (f"SELECT {self.id_column}, {self.text_column}{src} FROM {self.table} WHERE {doc} @@ {tsq} "
                   f"ORDER BY ts_rank({doc}, {tsq}) DESC, {self.id_column} LIMIT :k")
            params = {"q": " | ".join(terms), "k": self.k}
        else:
            raise SourceError(f"SqlFtsRetriever does not support the {dialect} dialect",
                              "use SQLite (FTS5) or PostgreSQL, or wrap your own search as a BaseRetriever")
        try:
            with self.engine.connect() as conn:
                rows = conn.execute(text(sql), params).all()
        except SQLAlchemyError as exc:
            raise SourceError(f"full-text query on {self.table} failed: {str(exc).splitlines()[0]}",
                              "check the table and columns (SQLite needs an FTS5 table: see create_sqlite_fts)") from exc
        return [Document(page_content=str(r[1]), id=str(r[0]),
                         metadata={"id": str(r[0]), **({"source": str(r[2])} if self.source_column else {})})
                for r in rows]


def create_sqlite_fts(url: str, source_table: str, fts_table: str, id_column: str = "id",
                      text_column: str = "body") -> int:
    """(Re)build an FTS5 table ``fts_table(id_column UNINDEXED, text_column)`` from ``source_table``.

    Returns the number of documents indexed.
    Raises:
        SourceError: the source table cannot be read or FTS5 is missing from this SQLite.
    """
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import SQLAlchemyError

    s, f, i, t = map(_ident, (source_table, fts_table, id_column, text_column))
    try:
        with create_engine(url).begin() as conn:
            conn.execute(text(f"DROP TABLE IF EXISTS {f}"))
            conn.execute(text(f"CREATE VIRTUAL TABLE {f} USING fts5({i} UNINDEXED, {t})"))
            conn.execute(text(f"INSERT INTO {f} ({i}, {t}) SELECT {i}, {t} FROM {s}"))
            return int(conn.execute(text(f"SELECT count(*) FROM {f}")).scalar_one())
    except SQLAlchemyError as exc:
        raise SourceError(f"cannot build FTS5 table {f} from {s}: {str(exc).splitlines()[0]}",
                          "check the source table and columns exist; SQLite must be built with FTS5") from exc


class Bm25Retriever(BaseRetriever):
    """Okapi BM25 over in-memory documents.

    Attributes:
        documents: the corpus (``Document.id`` or ``metadata["id"]`` names each one).
        k: documents returned per query.
    """

    documents: list[Document]
    k: int = 3
    _bm25: Any = PrivateAttr(default=None)
    _vocab: list[set[str]] = PrivateAttr(default_factory=list)

    @classmethod
    def from_texts(cls, texts: dict[str, str], k: int = 3, source: str = "") -> Bm25Retriever:
        """A retriever over ``{id: text}``."""
        return cls(documents=[Document(page_content=v, id=key, metadata={"id": key, "source": source})
                              for key, v in texts.items()], k=k)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        from rank_bm25 import BM25Okapi

        if not self.documents:
            return []
        if self._bm25 is None:
            tokens = [query_terms(d.page_content, 10_000) or [""] for d in self.documents]
            self._bm25, self._vocab = BM25Okapi(tokens), [set(t) for t in tokens]
        terms = query_terms(query)
        if not terms:
            return []
        scores = self._bm25.get_scores(terms)
        ranked = sorted((i for i in range(len(self.documents)) if self._vocab[i] & set(terms)),
                        key=lambda i: (-scores[i], i))
        return [self.documents[i].model_copy(update={"metadata": {**self.documents[i].metadata,
                                                                  "score": float(scores[i])}})
                for i in ranked[: self.k]]
