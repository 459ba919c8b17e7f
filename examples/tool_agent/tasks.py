"""Tasks for the tool agent, verified by their answers (numeric), each naming the tools it needs.

:class:`ToolAgentSource` is the example's task source, referenced from ``agent.yaml`` by its dotted
path (``type: examples.tool_agent.tasks:ToolAgentSource``): stock and price questions per item of
:data:`examples.tool_agent.inventory.ITEMS` and handbook questions answered through ``search``.
The questions are built from the same constants as the database, so they need no database to build.
"""

from __future__ import annotations

from examples.tool_agent.inventory import DOCS, ITEMS
from sdk.sources import SourceResult, TaskSource
from sdk.tasks.records import AnswerVerifier, Message, Source, Task

SYSTEM = ("You answer questions about the store's inventory and policies. Use the tools to look facts up, "
          "then reply with one line: Answer: <number>.")
DOC_QUESTIONS = [("returns", "Within how many days can a customer return an item?", "30"),
                 ("shipping", "How many business days does express shipping take?", "2"),
                 ("warranty", "How many years of warranty do power tools have?", "2"),
                 ("restock", "How many days does delivery of a reordered item take?", "7"),
                 ("discount", "What percent discount do orders above 500 dollars get?", "10")]


def _task(question: str, expected: str, tools: list[str], locator: str, domain: str) -> Task:
    return Task(domain=domain, prompt=(Message(role="system", content=SYSTEM), Message(role="user", content=question)),
                verifier=AnswerVerifier(expected=expected, mode="numeric", tolerance=1e-6),
                source=Source(connector="tool_agent", uri="examples/tool_agent", locator=locator),
                metadata={"expected_tools": tools})


def build_tasks(domain: str = "tools/inventory") -> list[Task]:
    """The 29 tasks: per item, stock by code, price by code and stock by name; five handbook questions."""
    assert {d for d, _ in DOCS} >= {d for d, _, _ in DOC_QUESTIONS}
    tasks = []
    for sku, name, stock, price, _ in ITEMS:
        tasks.append(_task(f"How many units of {sku} are in stock?", str(stock), ["stock_level"], f"stock/{sku}",
                           domain))
        tasks.append(_task(f"What is the price of {sku} in dollars?", str(price), ["item_price"], f"price/{sku}",
                           domain))
        tasks.append(_task(f"How many units of the {name} are in stock?", str(stock), ["find_sku", "stock_level"],
                           f"stock-by-name/{sku}", domain))
    for doc, question, answer in DOC_QUESTIONS:
        tasks.append(_task(question, answer, ["search"], f"doc/{doc}", domain))
    return tasks


class ToolAgentSource(TaskSource):
    """The example's tasks as a task source (no options; tasks get the source's ``domain``)."""

    name = "tool_agent"

    def _load(self) -> SourceResult:
        return SourceResult(tasks=build_tasks(self.domain))
