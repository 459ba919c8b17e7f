"""Retrieval: the built-in SQL full-text and BM25 retrievers, the search tool's logged documents, augmented prompts."""

from __future__ import annotations

import sqlite3

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from connectors.retrievers import Bm25Retriever, SqlFtsRetriever, create_sqlite_fts
from sdk.errors import SourceError
from sdk.rollout.retrieval import augment_tasks, retriever_tool
from sdk.rollout.tools import ToolBox, parse_tool_calls
from sdk.tasks.records import AnswerVerifier, Message, Source, Task

DOCS = {"returns": "Items can be returned within 30 days with the receipt.",
        "shipping": "Standard shipping takes 5 business days; express takes 2.",
        "warranty": "Power tools carry a two year warranty against defects."}


@pytest.fixture()
def sqlite_url(tmp_path):
    db = tmp_path / "docs.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE docs (id TEXT PRIMARY KEY, body TEXT, src TEXT)")
    con.executemany("INSERT INTO docs VALUES (?, ?, 'handbook')", list(DOCS.items()))
    con.commit()
    con.close()
    return f"sqlite:///{db}"


def test_sqlite_fts5_ranks_and_survives_hostile_queries(sqlite_url):
    assert create_sqlite_fts(sqlite_url, "docs", "docs_fts") == 3
    r = SqlFtsRetriever(url=sqlite_url, table="docs_fts", k=2)
    got = r.invoke("how long does express shipping take?")
    assert [d.id for d in got][0] == "shipping"
    assert got[0].metadata == {"id": "shipping"}
    # FTS5 syntax and SQL in a model-written query are plain words, never syntax
    assert [d.id for d in r.invoke('warranty" OR 1=1; DROP TABLE docs; -- NEAR(')] == ["warranty"]
    assert r.invoke("!!! ???") == [] and r.invoke("zebra") == []
    assert sqlite3.connect(sqlite_url.removeprefix("sqlite:///")).execute("select count(*) from docs").fetchone()[0] == 3


def test_sql_retriever_rejects_identifiers_and_reports_missing_table(sqlite_url):
    with pytest.raises(ValueError, match="plain SQL identifier"):
        SqlFtsRetriever(url=sqlite_url, table="docs; drop table docs")
    with pytest.raises(SourceError, match="full-text query on nope failed"):
        SqlFtsRetriever(url=sqlite_url, table="nope").invoke("shipping")


@pytest.mark.postgres
def test_postgres_full_text():
    from sqlalchemy import create_engine, text

    url = "postgresql+psycopg2://postgres@127.0.0.1:5432/test"
    with create_engine(url).begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS tl_docs"))
        conn.execute(text("CREATE TABLE tl_docs (id text primary key, body text)"))
        for key, body in DOCS.items():
            conn.execute(text("INSERT INTO tl_docs VALUES (:i, :b)"), {"i": key, "b": body})
    r = SqlFtsRetriever(url=url, table="tl_docs", k=2)
    assert r.invoke("returned items")[0].id == "returns"
    assert r.invoke("warranty' OR 1=1 --")[0].id == "warranty"


def test_bm25_ranks_and_skips_unrelated():
    r = Bm25Retriever.from_texts(DOCS, k=3, source="handbook")
    got = r.invoke("warranty for power tools")
    assert [d.id for d in got] == ["warranty"]
    assert r.invoke("") == [] and r.invoke("zebra") == []
    assert isinstance(r, BaseRetriever)


def test_search_tool_logs_documents_per_call():
    box = ToolBox([retriever_tool(Bm25Retriever.from_texts(DOCS), k=2)])
    out = box.answer(parse_tool_calls('<tool_call>{"name": "search", "arguments": {"query": "receipt returns"}}</tool_call>')[0])
    assert out.ok and out.content.startswith("[returns] Items can be returned")
    assert [d["id"] for d in out.documents] == ["returns"]


class _Fixed(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager):
        return [Document(page_content=f"doc about {query}", metadata={"id": "d1", "source": "wiki"})]


def test_augment_tasks_with_any_langchain_retriever():
    task = Task(domain="qa/handbook", prompt=(Message(role="system", content="Be brief."),
                                             Message(role="user", content="returns?")),
                verifier=AnswerVerifier(expected="30 days", mode="normalized"), source=Source(connector="test"))
    [aug] = augment_tasks([task], _Fixed(), k=1)
    assert aug.prompt[0] == task.prompt[0]
    assert aug.prompt[1].content == "Context:\n[d1] doc about returns?\n\nreturns?"
    assert aug.metadata["retrieved"] == ["d1"] and aug.id != task.id and aug.id == aug.content_hash()
