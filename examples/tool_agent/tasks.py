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
DOC_QUESTIONS = [("returns", "Within how many days can a customer return an item?", "30", "return"),
                 ("shipping", "How many business days does express shipping take?", "2", "express shipping"),
                 ("warranty", "How many years of warranty do power tools have?", "2", "warranty power tools"),
                 ("restock", "How many days does delivery of a reordered item take?", "7", "reordered delivery"),
                 ("discount", "What percent discount do orders above 500 dollars get?", "10", "discount")]


def _call(tool: str, **arguments: str) -> list[dict]:
    """One demonstration turn of a single call (``metadata["demonstration"]``, :mod:`sdk.train.tool_demos`)."""
    return [{"name": tool, "arguments": arguments}]


def _task(question: str, expected: str, demo: list[list[dict]], locator: str, domain: str) -> Task:
    """A task whose expected tools are its demonstration's calls, in order."""
    tools = [c["name"] for turn in demo for c in turn]
    return Task(domain=domain, prompt=(Message(role="system", content=SYSTEM), Message(role="user", content=question)),
                verifier=AnswerVerifier(expected=expected, mode="numeric", tolerance=1e-6),
                source=Source(connector="tool_agent", uri="examples/tool_agent", locator=locator),
                metadata={"expected_tools": tools, "demonstration": demo})


def build_tasks(domain: str = "tools/inventory") -> list[Task]:
    """The 29 tasks: per item, stock by code, price by code and stock by name; five handbook questions.

    Each carries the calls that answer it (``metadata["demonstration"]``: one call per turn; the
    stock-by-name task looks the code up first), from which the sft stage builds verified tool-call
    demonstrations for the train tasks when ``tools.demonstrations`` is on.
    """
    assert {d for d, _ in DOCS} >= {q[0] for q in DOC_QUESTIONS}
    tasks = []
    for sku, name, stock, price, _ in ITEMS:
        tasks.append(_task(f"How many units of {sku} are in stock?", str(stock), [_call("stock_level", sku=sku)],
                           f"stock/{sku}", domain))
        tasks.append(_task(f"What is the price of {sku} in dollars?", str(price), [_call("item_price", sku=sku)],
                           f"price/{sku}", domain))
        tasks.append(_task(f"How many units of the {name} are in stock?", str(stock),
                           [_call("find_sku", name=name), _call("stock_level", sku=sku)], f"stock-by-name/{sku}", domain))
    for doc, question, answer, query in DOC_QUESTIONS:
        tasks.append(_task(question, answer, [_call("search", query=query)], f"doc/{doc}", domain))
    return tasks


class ToolAgentSource(TaskSource):
    """The example's tasks as a task source (no options; tasks get the source's ``domain``)."""

    name = "tool_agent"

    def _load(self) -> SourceResult:
        return SourceResult(tasks=build_tasks(self.domain))
