"""``git_history`` prompt context (``context: oracle | retrieved | none``) on the generated repository
(``history_repo``): retrieved files come from the parent only, the budget holds, recall is exact."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from connectors.history.context import (
    HEADERS,
    build_context,
    chunk_text,
    mean_recall_pct,
    recall,
)
from connectors.history.gitrepo import GitRepo
from connectors.history.source import GitHistorySource
from sdk.errors import ConfigError
from tests.connectors import history_repo


class FutureRetriever(BaseRetriever):
    """Returns the commit's own (future) files first, then a chunk of the parent's ``calc/ops.py``."""

    def _get_relevant_documents(self, query, *, run_manager):
        return [Document(page_content=history_repo.OPS_MUL, metadata={"path": "calc/ops.py"}),
                Document(page_content="def now_ms():\n    return 1\n", metadata={"path": "calc/clock.py"}),
                Document(page_content="def add(a, b):", metadata={"path": "calc/ops.py"}),
                Document(page_content="from calc.ops import add", id="calc/__init__.py")]


def future_retriever(files):
    """Factory given by dotted path (``tests.connectors.test_git_history_context:future_retriever``)."""
    assert set(files) == {"calc/__init__.py", "calc/ops.py"}
    return FutureRetriever()


def not_a_retriever(files):
    return object()


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("ctx")
    shas = history_repo.build(root / "calc")
    return root, shas, GitRepo(root / "calc")


def _parent(repo, name):
    _, shas, git = repo
    parent = next(c.parent for c in git.commits() if c.sha == shas[name])
    return {p: t for p, t in git.snapshot(parent, 1 << 20)[0].items() if not p.startswith("tests/")}  # as p_source


def test_bm25_ranks_the_parents_files_and_recall_is_exact(repo):
    files = _parent(repo, "good")
    touched = ["calc/__init__.py", "calc/ops.py"]
    ctx = build_context("retrieved", files, touched, "Add mul\n\nmul(a, b) multiplies", 10_000, ".py")
    assert ctx.text.startswith(HEADERS["retrieved"]) and sorted(ctx.paths) == touched and ctx.recall == 1.0
    assert history_repo.OPS.strip() in ctx.text and "def mul" not in ctx.text   # the parent's content
    assert "README.md" not in ctx.paths and "tests/test_ops.py" not in ctx.paths   # source files only
    assert ctx.metadata("retrieved") == {"context": "retrieved", "context_paths": ctx.paths, "context_recall": 1.0,
                                         "context_chars": len(ctx.text)}


def test_the_budget_holds_and_cuts_the_last_file(repo):
    files = _parent(repo, "good")
    ctx = build_context("retrieved", files, ["calc/__init__.py", "calc/ops.py"], "mul(a, b) add", 12, ".py")
    first = ctx.paths[0]
    assert len(ctx.paths) == 1 and ctx.recall == 0.5
    assert f"```python\n{files[first][:12].rstrip()}\n# ... (cut)\n```" in ctx.text
    assert files[first][:13] not in ctx.text
    assert build_context("retrieved", files, ["calc/ops.py"], "mul", 0, ".py").text == ""


def test_no_match_none_and_oracle(repo):
    files = _parent(repo, "newer")
    none = build_context("retrieved", files, ["calc/ops.py"], "div raises ValueError on zero", 500, ".py")
    assert (none.text, none.paths, none.recall) == ("", [], 0.0)   # no parent file has a query word
    off = build_context("none", files, ["calc/ops.py"], "add", 500, ".py")
    assert (off.text, off.recall) == ("", 0.0)
    oracle = build_context("oracle", files, ["calc/ops.py", "calc/new.py"], "x", 10_000, ".py")
    assert oracle.paths == ["calc/ops.py"] and oracle.recall == 1.0 and "def mul" in oracle.text
    assert recall([], ["calc/new.py"], files) is None and mean_recall_pct([None, 1.0, 0.5]) == 75
    assert mean_recall_pct([None]) is None


def test_chunks_cut_at_blank_lines_and_the_matching_part_is_shown():
    text = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(20))
    parts = chunk_text(text, 100)
    assert "".join(parts) == text and len(parts) > 1 and all(len(p) <= 100 for p in parts)
    assert chunk_text("a\n\nb", 0) == ["a\n\nb"] and chunk_text("x" * 500, 100) == ["x" * 500]
    files = {"pkg/a.py": text, "pkg/b.py": "def other():\n    pass\n"}
    ctx = build_context("retrieved", files, ["pkg/a.py", "pkg/b.py"], "fix f13", 10_000, ".py", chunk_chars=100)
    assert ctx.paths == ["pkg/a.py"] and ctx.recall == 0.5
    assert "`pkg/a.py` (excerpt):" in ctx.text and "def f13(" in ctx.text and "def f0(" not in ctx.text


def test_a_users_retriever_by_dotted_path_is_kept_to_the_parent(repo):
    files = _parent(repo, "good")
    dotted = "tests.connectors.test_git_history_context:future_retriever"
    ctx = build_context("retrieved", files, ["calc/__init__.py", "calc/ops.py"], "Add mul", 10_000, ".py", dotted)
    assert ctx.paths == ["calc/ops.py", "calc/__init__.py"]   # the future ops.py and clock.py are dropped
    assert "def mul" not in ctx.text and "now_ms" not in ctx.text and "`calc/ops.py` (excerpt):\n```python\ndef add(a, b):\n```" in ctx.text
    with pytest.raises(ConfigError, match="gave a object"):
        build_context("retrieved", files, [], "add", 100, ".py", "tests.connectors.test_git_history_context:not_a_retriever")
    with pytest.raises(ConfigError, match="dotted path"):
        build_context("retrieved", files, [], "add", 100, ".py", "no_colon")


def test_the_source_records_retrieved_paths_and_mean_recall(repo):
    root, shas, _ = repo
    sandbox = next(history_repo.module_sandbox())
    try:
        src = GitHistorySource({"path": "calc", "rev": shas["flaky"], "max_commits": 2, "reruns": 0,
                                "heldout_fraction": 0.0, "validate_references": False, "context": "retrieved"},
                               root, "python/calc", sandbox=sandbox)
        result = src.read()
    finally:
        sandbox.close()
    tasks = {t.source.commit: t for t in result.tasks}
    good, clock = tasks[shas["good"]], tasks[shas["flaky"]]
    assert sorted(good.metadata["context_paths"]) == ["calc/__init__.py", "calc/ops.py"]
    assert good.metadata["context_recall"] == 1.0 and good.metadata["context"] == "retrieved"
    assert "def mul" not in good.prompt[0].content and good.metadata["context_chars"] > 0
    assert "calc/clock.py" not in clock.metadata["context_paths"] and "now_ms" not in clock.prompt[0].content
    assert clock.metadata["context_recall"] is None   # the commit only adds its source file
    assert result.counts["context_recall_mean_pct"] == 100
