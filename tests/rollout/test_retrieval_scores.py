"""Field case T5: retriever scores are validated (NaN and non-numbers refused), a ``min_score``
threshold is applied, an empty result is a "no documents" observation, and each document's score
is logged with it per step."""

from __future__ import annotations

import json
import math

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from sdk.rollout.errors import ToolError
from sdk.rollout.retrieval import augment_tasks, retrieve, retriever_tool
from sdk.rollout.tools import ToolBox, parse_tool_calls
from sdk.tasks.records import AnswerVerifier, Message, Source, Task


class Scored(BaseRetriever):
    """Answers each query from a fixed table of ``(id, score)`` lists."""

    table: dict

    def _get_relevant_documents(self, query, *, run_manager):
        return [Document(page_content=f"text of {i}", id=i, metadata={"score": s}) for i, s in self.table.get(query, [])]


T5 = Scored(table={"nothing": [], "refunds": [("low", -0.12), ("high", 0.95)],
                   "nan": [("a", math.nan)], "text": [("a", "0.9")], "bool": [("a", True)], "inf": [("a", math.inf)],
                   "unscored": [("a", None)]})


def _search(box: ToolBox, query: str):
    call = json.dumps({"name": "search", "arguments": {"query": query}})
    return box.answer(parse_tool_calls(f"<tool_call>{call}</tool_call>")[0])


def test_empty_result_threshold_and_scores_logged_per_step():
    box = ToolBox([retriever_tool(T5, k=3, min_score=0.5)])
    empty = _search(box, "nothing")
    assert empty.ok and empty.content == "no documents found" and empty.documents == ()
    hit = _search(box, "refunds")
    assert hit.ok and [(d["id"], d["score"]) for d in hit.documents] == [("high", 0.95)]
    assert "low" not in hit.content and "[high] text of high" in hit.content
    assert [d["score"] for d in retrieve(T5, "refunds", 3)] == [-0.12, 0.95]   # no threshold: both, scored


@pytest.mark.parametrize("query", ["nan", "text", "bool", "inf"])
def test_non_finite_or_non_numeric_scores_are_refused(query):
    with pytest.raises(ToolError, match="a score must be a finite number"):
        retrieve(T5, query, 3)
    out = _search(ToolBox([retriever_tool(T5, min_score=0.5)]), query)   # in a rollout: an error answer
    assert not out.ok and "finite number" in out.content


def test_threshold_needs_scores_and_applies_to_augmented_prompts():
    with pytest.raises(ToolError, match="gave no score"):
        retrieve(T5, "unscored", 3, min_score=0.1)
    assert retrieve(T5, "unscored", 3)[0]["score"] is None   # no threshold: a missing score is fine
    task = Task(domain="d", prompt=(Message(role="user", content="refunds"),), verifier=AnswerVerifier(expected="x"),
                source=Source(connector="t", uri="t", locator="1"))
    [out] = augment_tasks([task], T5, k=3, min_score=0.5)
    assert out.metadata["retrieved"] == ["high"] and "text of low" not in out.prompt[-1].content


def test_the_builtin_bm25_retriever_scores_its_documents():
    from connectors.retrievers import Bm25Retriever

    bm25 = Bm25Retriever.from_texts({"a": "refund policy refund", "b": "refund", "c": "shipping", "d": "warranty"}, k=3)
    docs = retrieve(bm25, "refund policy", 3)
    assert [d["id"] for d in docs] == ["a", "b"] and docs[0]["score"] > docs[1]["score"]
    assert [d["id"] for d in retrieve(bm25, "refund policy", 3, min_score=docs[0]["score"])] == ["a"]
