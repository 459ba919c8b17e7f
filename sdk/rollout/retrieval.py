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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sdk.rollout.errors import ToolError
from sdk.rollout.tools import Tool
from sdk.tasks.records import Message, Task


def doc_record(doc: Any, rank: int) -> dict[str, Any]:
    """``{"id", "source", "text", "rank"}`` of a langchain ``Document`` (id from ``doc.id`` or ``metadata["id"]``)."""
    meta = dict(getattr(doc, "metadata", {}) or {})
    return {"id": str(getattr(doc, "id", None) or meta.get("id", f"rank{rank}")), "source": str(meta.get("source", "")),
            "text": doc.page_content, "rank": rank}


def retrieve(retriever: Any, query: str, k: int) -> list[dict[str, Any]]:
    """The top ``k`` documents for ``query`` as :func:`doc_record` dicts.

    Raises:
        ToolError: ``retriever`` has no ``invoke`` (not a langchain-core runnable/retriever).
    """
    if not hasattr(retriever, "invoke"):
        raise ToolError(f"{type(retriever).__name__} is not a retriever", "pass a langchain-core BaseRetriever")
    return [doc_record(d, i) for i, d in enumerate(list(retriever.invoke(query))[:k])]


def format_documents(docs: Sequence[dict[str, Any]], max_chars: int = 600) -> str:
    """``[id] text`` blocks, one per document, each cut to ``max_chars``; a clear line when none was found."""
    if not docs:
        return "no documents found"
    return "\n".join(f"[{d['id']}] {d['text'][:max_chars]}" for d in docs)


def retriever_tool(retriever: Any, k: int = 3, name: str = "search",
                   description: str = "Search the company's documents; returns the most relevant passages.") -> Tool:
    """A :class:`~sdk.rollout.tools.Tool` ``name(query: str)`` over ``retriever`` that logs its documents."""

    def search(query: str):
        docs = retrieve(retriever, query, k)
        return format_documents(docs), docs

    params = {"type": "object", "properties": {"query": {"type": "string", "description": "what to look for"}},
              "required": ["query"]}
    return Tool(name=name, description=description, parameters=params, func=search, returns_documents=True)


def augment_tasks(tasks: Sequence[Task], retriever: Any, k: int = 3,
                  query: Callable[[Task], str] | None = None, header: str = "Context:") -> list[Task]:
    """Tasks whose last user message starts with the top ``k`` documents for it (new content ids).

    Args:
        query: the search text per task; default the last user message.
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
        docs = retrieve(retriever, query(task) if query else question, k)
        content = f"{header}\n{format_documents(docs)}\n\n{question}"
        prompt = (*task.prompt[:last], Message(role="user", content=content), *task.prompt[last + 1:])
        meta = {**task.metadata, "retrieved": [d["id"] for d in docs]}
        out.append(task.with_(prompt=prompt, metadata=meta))
    return out
