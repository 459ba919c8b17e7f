"""Tasks for the tool agent, verified by their answers (numeric), each naming the tools it needs."""

from __future__ import annotations

from examples.tool_agent.inventory import DOCS, ITEMS
from sdk.tasks.records import AnswerVerifier, Message, Source, Task

SYSTEM = ("You answer questions about the store's inventory and policies. Use the tools to look facts up, "
          "then reply with one line: Answer: <number>.")
DOC_QUESTIONS = [("returns", "Within how many days can a customer return an item?", "30"),
                 ("shipping", "How many business days does express shipping take?", "2"),
                 ("warranty", "How many years of warranty do power tools have?", "2"),
                 ("restock", "How many days does delivery of a reordered item take?", "7"),
                 ("discount", "What percent discount do orders above 500 dollars get?", "10")]


def _task(question: str, expected: str, tools: list[str], locator: str) -> Task:
    return Task(domain="tools/inventory", prompt=(Message(role="system", content=SYSTEM),
                                                  Message(role="user", content=question)),
                verifier=AnswerVerifier(expected=expected, mode="numeric", tolerance=1e-6),
                source=Source(connector="tool_agent", uri="examples/tool_agent", locator=locator),
                metadata={"expected_tools": tools})


def build_tasks() -> list[Task]:
    """Stock and price questions per item, and handbook questions answered through ``search``."""
    assert {d for d, _ in DOCS} >= {d for d, _, _ in DOC_QUESTIONS}
    tasks = []
    for sku, name, stock, price, _ in ITEMS:
        tasks.append(_task(f"How many units of {sku} are in stock?", str(stock), ["stock_level"], f"stock/{sku}"))
        tasks.append(_task(f"What is the price of {sku} in dollars?", str(price), ["item_price"], f"price/{sku}"))
        tasks.append(_task(f"How many units of the {name} are in stock?", str(stock), ["find_sku", "stock_level"],
                           f"stock-by-name/{sku}"))
    for doc, question, answer in DOC_QUESTIONS:
        tasks.append(_task(question, answer, ["search"], f"doc/{doc}"))
    return tasks
