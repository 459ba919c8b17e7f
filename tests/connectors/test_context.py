"""Repository context in pytest-source prompts (issue 13, item 4): what is shown, the budget, coverage."""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from connectors.suites.context import RepoContext, RepoContextOptions, RepoContextRetriever, RepoIndex, names_used
from sdk.errors import ConfigError
from sdk.tasks.records import Message, Source, Task, UnitTestVerifier

MODELS = '''"""Models."""
from dataclasses import dataclass
from enum import Enum

RATE = 0.2
_CACHE = {}


class Kind(Enum):
    FOOD = "food"
    TECH = "tech"


@dataclass(frozen=True)
class Item:
    """A priced item."""
    name: str
    cents: int
    kind: Kind = Kind.FOOD

    def discounted(self, pct: int) -> int:
        """Price after ``pct`` percent off, rounded down."""
        return self.cents * (100 - pct) // 100
'''
HELPERS = '''def round_cents(x: float) -> int:
    """Round half up to whole cents."""
    return int(x + 0.5)


def unused():
    return 1
'''
REFERENCE = ('def tax(item, pct=0):\n    base = item.discounted(pct)\n    if item.kind is Kind.TECH:\n'
             '        return round_cents(base * RATE)\n    return 0\n')
FILES = {"shop/__init__.py": "", "shop/models.py": MODELS, "shop/helpers.py": HELPERS,
         "shop/tax.py": "from shop.models import RATE, Kind\nfrom shop.helpers import round_cents\n\n\n" + REFERENCE}
TESTS = {"tests/test_tax.py": "from shop.tax import tax\n\ndef test_tax():\n    assert tax(x) == 0\n    y = 1\n"}


def task(reference=REFERENCE, prompt="Write the function `tax` of `shop/tax.py`.\n\n```python\ndef tax(item, pct=0):\n```"):
    return Task(domain="py/tax", prompt=(Message(role="user", content=prompt),),
                verifier=UnitTestVerifier(tests=TESTS, files=FILES, target_path="shop/tax.py", entry_point="tax"),
                reference=reference, source=Source(connector="pytest", locator="shop/tax.py::tax"))


def traced_items():
    return [SimpleNamespace(calls=(("tax.py", "tax", 1), ("models.py", "Item.discounted", 0)))]


def test_names_used_skip_parameters_locals_and_builtins():
    names, attrs = names_used(REFERENCE)
    assert names == ["Kind", "round_cents", "RATE"] and attrs == ["discounted", "kind", "TECH"]


def test_prompt_shows_helpers_types_enum_members_constants_and_traced_methods():
    counts = defaultdict(int)
    ctx = RepoContext(RepoContextOptions(), FILES, "shop")
    out = ctx.add(task(), traced_items(), counts)
    text = out.prompt[-1].content
    assert text.startswith(task().prompt[-1].content) and out.id != task().id
    assert 'def round_cents(x: float) -> int:\n    """Round half up to whole cents."""' in text
    assert "class Kind(Enum):\n    FOOD = \"food\"\n    TECH = \"tech\"" in text
    assert "RATE = 0.2" in text and "def discounted(self, pct: int) -> int:" in text
    assert "def unused" not in text and "_CACHE" not in text and "return int(x + 0.5)" not in text
    info = out.metadata["context"]
    assert info["coverage"] == 1.0 and info["used"] == 4 and info["missing"] == []
    assert (counts["context_names_used"], counts["context_names_shown"], counts["context_tasks_fully_covered"]) == (4, 4, 1)
    # no docstring on the target: the visible tests' assertions are shown as examples
    assert "Examples from the tests:" in text and "assert tax(x) == 0" in text and "y = 1" not in text


def test_untraced_method_is_missed_and_the_budget_cuts_lower_ranks():
    out = RepoContext(RepoContextOptions(), FILES, "shop").add(task())
    assert out.metadata["context"]["used"] == 3  # item.discounted cannot be resolved without the trace
    small = RepoContext(RepoContextOptions(token_budget=20, examples=False), FILES, "shop").add(task(), traced_items())
    info = small.metadata["context"]
    assert info["tokens"] <= 20 and 0 < info["coverage"] < 1 and "Item.discounted" in info["missing"]
    assert "Examples from the tests" not in small.prompt[-1].content


def test_definitions_already_in_the_prompt_count_as_shown():
    whole = "```python\nclass Kind(Enum):\n...\nRATE = 0.2\ndef round_cents(x: float) -> int:\n```"
    out = RepoContext(RepoContextOptions(token_budget=0), FILES, "shop").add(task(prompt=whole), traced_items())
    assert out.metadata["context"]["missing"] == ["Item.discounted"]


def test_retriever_is_a_langchain_retriever():
    docs = RepoContextRetriever(index=RepoIndex(FILES, "shop")).invoke(REFERENCE, path="shop/tax.py", qualname="tax")
    assert [d.metadata["name"] for d in docs] == ["round_cents", "Kind", "RATE"]


class Search(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager):
        return [Document(page_content="def round_cents(x): ...", metadata={"name": "round_cents"})]


def company_search(files, package_dir):
    return Search()


def test_a_company_retriever_plugs_in_by_dotted_path():
    opts = RepoContextOptions(retriever=f"{__name__}:company_search", examples=False)
    info = RepoContext(opts, FILES, "shop").add(task()).metadata["context"]
    assert info["shown"] == 1 and set(info["missing"]) == {"Kind", "RATE"}
    with pytest.raises(ConfigError, match="BaseRetriever"):
        RepoContext(RepoContextOptions(retriever=f"{__name__}:traced_items"), FILES, "shop")
