"""The example's tools as a configured tool factory: the inventory API and the handbook search.

Referenced from ``agent.yaml`` under ``tools.factories`` as
``{type: examples.tool_agent.tools:InventoryTools, options: {db: ...}}``. The factory (re)builds the
SQLite database at ``db`` (relative to the config file; :func:`examples.tool_agent.inventory.build_db`,
deterministic content) each time a stage builds the tools, so the rl and eval stages read the same
data, and returns ``stock_level``, ``item_price``, ``find_sku`` and ``search`` (the handbook through
:class:`connectors.retrievers.SqlFtsRetriever`, ``tools.retrieval_k`` documents per search).
"""

from __future__ import annotations

from pydantic import Field

from sdk.rollout.factories import ToolFactory, ToolFactoryOptions


class InventoryToolsOptions(ToolFactoryOptions):
    """Where the example database lives."""

    db: str = Field("inventory.db", description="SQLite file, relative to the config file; rebuilt on every use")


class InventoryTools(ToolFactory):
    """``stock_level(sku)``, ``item_price(sku)``, ``find_sku(name)`` and ``search(query)`` over one SQLite file."""

    Options = InventoryToolsOptions

    def _tools(self) -> list:
        from connectors.retrievers import SqlFtsRetriever
        from examples.tool_agent.inventory import build_db, inventory_tools
        from sdk.rollout.retrieval import retriever_tool

        url = build_db(self.resolve(self.options.db))
        k = self.settings.retrieval_k
        search = retriever_tool(SqlFtsRetriever(url=url, table="docs_fts", k=k), k=k,
                                description="Search the store handbook (returns, shipping, warranty, discounts).",
                                min_score=self.settings.retrieval_min_score)
        return [*inventory_tools(url), search]
