"""The prompt context of a ``git_history`` change task (``context: oracle | retrieved | none``).

* ``oracle``: the source files the commit touches, as they are at the parent (the default; it
  shows what a retriever could at best find).
* ``retrieved``: the repository's source files **at the parent**, cut at blank lines into chunks of
  about ``chunk_chars`` characters (0: whole files), ranked against the commit message with Okapi
  BM25 (:class:`~connectors.retrievers.Bm25Retriever`), or a company's own langchain-core
  ``BaseRetriever`` (option ``retriever: package.module:factory``, called as ``factory(files=...)``
  with the parent's source files only). A document names its file by ``metadata["path"]`` (else its
  id); its text is a whole file or a chunk of one. Time-honest: a document whose path is not a
  parent file, or whose text is not in that file at the parent, is dropped, so no context comes
  from the commit or later.
* ``none``: no context.

The best documents fill ``context_chars`` in rank order (the last one cut). On toolz's first-parent
line (117 candidate commits with a touched file at the parent) BM25 over 800-character chunks shows
0.736 of the touched files within 4,000 characters and 0.875 within 12,000; over whole files 0.310
and 0.549; oracle 0.903 and 0.950 (the budget cuts it too). **Context recall** is
the share of the commit's touched source files that exist at the parent which the context shows
(even in part); None when the commit only adds files (nothing could be shown).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.retrievers import BaseRetriever

from sdk.errors import ConfigError
from sdk.sources import import_dotted

HEADERS = {"oracle": "Files this change touches, as they are now:",
           "retrieved": "Files of the repository that may be relevant to this change (found by search), as they are now:"}


@dataclass
class Context:
    """One task's context block and what it shows."""

    text: str = ""
    paths: list[str] = field(default_factory=list)
    recall: float | None = None

    def metadata(self, mode: str) -> dict[str, Any]:
        """``task.metadata`` entries: ``context``, ``context_paths``, ``context_recall``, ``context_chars``."""
        return {"context": mode, "context_paths": self.paths, "context_recall": self.recall,
                "context_chars": len(self.text)}


def chunk_text(text: str, size: int) -> list[str]:
    """``text`` cut at blank lines into consecutive slices of about ``size`` characters (a block
    longer than ``size`` stays whole; ``size`` 0: the whole text); they join back to ``text``."""
    if size <= 0 or len(text) <= size:
        return [text]
    out, start, pos = [], 0, 0
    while True:
        nxt = text.find("\n\n", pos)
        end = len(text) if nxt < 0 else nxt + 2
        if end - start > size and pos > start:
            out.append(text[start:pos])
            start = pos
        if nxt < 0:
            break
        pos = end
    return [*out, text[start:]] if start < len(text) else out


def make_retriever(dotted: str | None, files: dict[str, str], chunk_chars: int = 0) -> BaseRetriever:
    """The retriever over ``files`` (the parent's source files): built-in BM25 over their chunks
    (:func:`chunk_text`; ids ``path#n``, ``metadata["path"]``), or ``dotted``'s ``factory(files=...)``.

    Raises:
        ConfigError: ``dotted`` cannot be imported, called that way, or gives no ``BaseRetriever``.
    """
    if not dotted:
        from langchain_core.documents import Document

        from connectors.retrievers import Bm25Retriever

        docs = [Document(page_content=part, id=f"{p}#{n}", metadata={"id": f"{p}#{n}", "path": p})
                for p, t in files.items() for n, part in enumerate(chunk_text(t, chunk_chars))]
        return Bm25Retriever(documents=docs, k=max(1, len(docs)))
    try:
        made = import_dotted(dotted)(files=files)
    except TypeError as exc:
        raise ConfigError(f"git_history retriever {dotted!r} cannot be called as factory(files=...): {exc}",
                          "point it at a factory that returns a langchain_core BaseRetriever") from exc
    if not isinstance(made, BaseRetriever):
        raise ConfigError(f"git_history retriever {dotted!r} gave a {type(made).__name__}",
                          "point it at a factory that returns a langchain_core BaseRetriever")
    return made


def ranked_parts(retriever: BaseRetriever, query: str, files: dict[str, str]) -> list[tuple[str, str]]:
    """``(path, text)`` of the retriever's documents for ``query``, in its order, keeping only those
    that are a parent file or a chunk of one (time-honest); a repeated document once."""
    out: dict[tuple[str, str], None] = {}
    for doc in retriever.invoke(query):
        meta = dict(doc.metadata or {})
        path = str(meta.get("path") or doc.id or meta.get("id") or "")
        text = doc.page_content
        if path in files and text and text in files[path]:
            out.setdefault((path, text), None)
    return list(out)


def render(parts: list[tuple[str, str]], budget: int, header: str, full: dict[str, str], ext: str) -> Context:
    """The context block of ``parts`` (``(path, text)``: a whole file, or an excerpt of ``full[path]``)
    within ``budget`` characters, in order, the last one cut; recall is left to :func:`recall`."""
    if budget <= 0:
        return Context()
    blocks, paths, left = [], [], budget
    fence, cut_mark = ("go", "\n// ... (cut)") if ext == ".go" else ("python", "\n# ... (cut)")
    for path, text in parts:
        if left <= 0:
            break
        shown = text[:left]
        left -= len(shown)
        cut = "" if len(shown) == len(text) else cut_mark
        part = "" if len(text) == len(full.get(path, text)) else " (excerpt)"
        blocks.append(f"`{path}`{part}:\n```{fence}\n{shown.rstrip()}{cut}\n```\n")
        paths.append(path)
    return Context(text=(header + "\n\n" + "\n".join(blocks) + "\n") if blocks else "", paths=list(dict.fromkeys(paths)))


def recall(shown: list[str], touched: list[str], parent_files: dict[str, str]) -> float | None:
    """Share of ``touched`` files that exist at the parent which ``shown`` holds (None: none exists)."""
    could = [p for p in touched if p in parent_files]
    return round(len(set(could) & set(shown)) / len(could), 4) if could else None


def build_context(mode: str, files: dict[str, str], touched: list[str], query: str, budget: int, ext: str,
                  retriever: str | None = None, chunk_chars: int = 0) -> Context:
    """The context of one task (see the module docstring); ``files`` are the parent's source files."""
    if mode == "none" or budget <= 0:
        ctx = Context()
    elif mode == "oracle":
        ctx = render([(p, files[p]) for p in touched if p in files], budget, HEADERS["oracle"], files, ext)
    else:
        corpus = {p: t for p, t in files.items() if p.endswith(ext)}
        parts = ranked_parts(make_retriever(retriever, corpus, chunk_chars), query, corpus) if corpus else []
        ctx = render(parts, budget, HEADERS["retrieved"], corpus, ext)
    ctx.recall = recall(ctx.paths, touched, files)
    return ctx


def mean_recall_pct(values: list[float | None]) -> int | None:
    """The mean context recall of the tasks that have one, as a whole percentage (None: no task has one)."""
    got = [v for v in values if v is not None]
    return round(100 * sum(got) / len(got)) if got else None
