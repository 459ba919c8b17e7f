"""Retrieval in rollouts: any langchain-core ``BaseRetriever`` as a search tool, or as context at task-build time.

Two uses, one interface (``retriever.invoke(query) -> list[Document]``), so the retrievers a
company's LangChain applications already use plug in unchanged; the built-in SQL full-text and
BM25 retrievers live in ``connectors.retrievers`` (``sdk`` never imports connectors):

* :func:`retriever_tool`: a ``search(query)`` tool for multi-turn rollouts. It returns the
  documents' text to the model and the documents themselves to the rollout log, so every step
  records what was retrieved (``Episode.trace()["calls"][i]["documents"]``);
* :func:`augment_tasks`: retrieval-augmented prompts built once, when tasks are built. The
  context goes into the last user message, and the same augmented prompt is used for training
  and evaluation (DESIGN: train and eval prompts must match). The retrieved ids are kept in
  ``task.metadata["retrieved"]``.

Scores (field case T5): a document's score is ``metadata["score"]`` (else ``relevance_score``). A
score that is present must be a finite number (NaN, infinities, booleans and strings are refused
with a :class:`~sdk.rollout.errors.ToolError`, which a rollout answers as the tool's error); with
``min_score`` set, every document needs one and those below it are dropped before the top ``k``
are taken. Each record keeps its score, so the rollout log shows it per step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from sdk.rollout.errors import ToolError
from sdk.rollout.tools import Tool
from sdk.tasks.records import Message, Task


def doc_record(doc: Any, rank: int) -> dict[str, Any]:
    """``{"id", "source", "text", "rank", "score"}`` of a langchain ``Document`` (id from ``doc.id`` or
    ``metadata["id"]``; score from :func:`doc_score`).

    Raises:
        ToolError: the document's score is not a finite number.
    """
    meta = dict(getattr(doc, "metadata", {}) or {})
    doc_id = str(getattr(doc, "id", None) or meta.get("id", f"rank{rank}"))
    return {"id": doc_id, "source": str(meta.get("source", "")), "text": doc.page_content, "rank": rank,
            "score": doc_score(meta, doc_id)}


def doc_score(meta: dict[str, Any], doc_id: str = "?") -> float | None:
    """The score in ``metadata["score"]`` (else ``relevance_score``) as a float; None when absent.

    Raises:
        ToolError: the score is NaN, infinite, a boolean or not a number.
    """
    value = meta.get("score", meta.get("relevance_score"))
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ToolError(f"the retriever scored document {doc_id!r} {value!r}: a score must be a finite number",
                        "fix the retriever's scores (metadata['score']) or leave them out")
    return float(value)


def retrieve(retriever: Any, query: str, k: int, min_score: float | None = None) -> list[dict[str, Any]]:
    """The top ``k`` documents for ``query`` as :func:`doc_record` dicts, those scored below
    ``min_score`` dropped first (field case T5).

    Raises:
        ToolError: ``retriever`` has no ``invoke`` (not a langchain-core runnable/retriever), a score is
            not a finite number, or ``min_score`` is set and a document has no score.
    """
    if not hasattr(retriever, "invoke"):
        raise ToolError(f"{type(retriever).__name__} is not a retriever", "pass a langchain-core BaseRetriever")
    docs = [doc_record(d, i) for i, d in enumerate(retriever.invoke(query))]
    if min_score is not None:
        unscored = [d["id"] for d in docs if d["score"] is None]
        if unscored:
            raise ToolError(f"min_score {min_score} is set but the retriever gave no score for {unscored[:3]}",
                            "use a retriever that puts metadata['score'] on its documents, or unset min_score")
        docs = [d for d in docs if d["score"] >= min_score]
    return docs[:k]


def format_documents(docs: Sequence[dict[str, Any]], max_chars: int = 600) -> str:
    """``[id] text`` blocks, one per document, each cut to ``max_chars``; a clear line when none was found."""
    if not docs:
        return "no documents found"
    return "\n".join(f"[{d['id']}] {d['text'][:max_chars]}" for d in docs)


def retriever_tool(retriever: Any, k: int = 3, name: str = "search",
                   description: str = "Search the company's documents; returns the most relevant passages.",
                   min_score: float | None = None) -> Tool:
    """A :class:`~sdk.rollout.tools.Tool` ``name(query: str)`` over ``retriever`` that logs its documents
    (with their scores; ``min_score``: see :func:`retrieve`)."""

    def search(query: str):
        docs = retrieve(retriever, query, k, min_score)
        return format_documents(docs), docs

    params = {"type": "object", "properties": {"query": {"type": "string", "description": "what to look for"}},
              "required": ["query"]}
    return Tool(name=name, description=description, parameters=params, func=search, returns_documents=True)


def augment_tasks(tasks: Sequence[Task], retriever: Any, k: int = 3,
                  query: Callable[[Task], str] | None = None, header: str = "Context:",
                  min_score: float | None = None) -> list[Task]:
    """Tasks whose last user message starts with the top ``k`` documents for it (new content ids).

    Args:
        query: the search text per task; default the last user message.
        min_score: documents scored below it are left out (see :func:`retrieve`).
    Raises:
        ToolError: a task has no user message.
    """
    out = []
    for task in tasks:
        users = [i for i, m in enumerate(task.prompt) if m.role == "user"]
        if not users:
            raise ToolError(f"task {task.id} has no user message to augment", "give every task a user message")
        last = users[-1]
        question = task.prompt[last].content
        docs = retrieve(retriever, query(task) if query else question, k, min_score)
        content = f"{header}\n{format_documents(docs)}\n\n{question}"
        prompt = (*task.prompt[:last], Message(role="user", content=content), *task.prompt[last + 1:])
        meta = {**task.metadata, "retrieved": [d["id"] for d in docs]}
        out.append(task.with_(prompt=prompt, metadata=meta))
    return out
