"""A small internal API backed by SQLite: an inventory, exposed as typed tools, and a policy handbook.

``build_db(path)`` creates (or recreates) the database: ``items`` (sku, name, stock, price,
warehouse), ``docs`` (id, body) and the FTS5 index ``docs_fts`` searched by
:class:`connectors.retrievers.SqlFtsRetriever`. ``inventory_tools(url)`` returns the tools the
model may call; each reads the database read-only through SQLAlchemy with bound parameters.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import create_engine, text

ITEMS = [("A-100", "cordless drill", 7, 89.0, "north"), ("A-200", "hammer", 42, 12.5, "north"),
         ("B-310", "tape measure", 0, 6.0, "south"), ("B-420", "work gloves", 15, 4.25, "south"),
         ("C-510", "ladder", 3, 120.0, "north"), ("C-620", "paint roller", 28, 8.75, "south"),
         ("D-730", "circular saw", 5, 149.0, "north"), ("D-840", "safety goggles", 60, 3.5, "south")]
DOCS = [("returns", "Customers may return unused items within 30 days of purchase with the receipt."),
        ("shipping", "Standard shipping takes 5 business days. Express shipping takes 2 business days."),
        ("warranty", "Power tools carry a 2 year warranty. Hand tools carry a 1 year warranty."),
        ("restock", "Items at zero stock are reordered every Monday; delivery takes 7 days."),
        ("discount", "Orders above 500 dollars get a 10 percent discount.")]


def build_db(path: str | Path) -> str:
    """Create the example database at ``path``; returns its SQLAlchemy URL."""
    from connectors.retrievers import create_sqlite_fts

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE items (sku TEXT PRIMARY KEY, name TEXT, stock INTEGER, price REAL, warehouse TEXT)")
    con.execute("CREATE TABLE docs (id TEXT PRIMARY KEY, body TEXT)")
    con.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)", ITEMS)
    con.executemany("INSERT INTO docs VALUES (?, ?)", DOCS)
    con.commit()
    con.close()
    url = f"sqlite:///{path}"
    create_sqlite_fts(url, "docs", "docs_fts")
    return url


def inventory_tools(url: str) -> list:
    """The inventory API as typed functions (``stock_level``, ``item_price``, ``find_sku``)."""
    engine = create_engine(url)

    def _one(sql: str, **params):
        with engine.connect() as conn:
            return conn.execute(text(sql), params).first()

    def stock_level(sku: str) -> int:
        """Units of an item in stock.

        Args:
            sku: the item code, e.g. "A-100".
        """
        row = _one("SELECT stock FROM items WHERE sku = :sku", sku=sku.strip().upper())
        if row is None:
            raise KeyError(f"unknown sku {sku!r}")
        return int(row[0])

    def item_price(sku: str) -> float:
        """Price of one unit of an item, in dollars.

        Args:
            sku: the item code, e.g. "A-100".
        """
        row = _one("SELECT price FROM items WHERE sku = :sku", sku=sku.strip().upper())
        if row is None:
            raise KeyError(f"unknown sku {sku!r}")
        return float(row[0])

    def find_sku(name: str) -> str:
        """The item code of a product by its name.

        Args:
            name: the product name, e.g. "hammer".
        """
        row = _one("SELECT sku FROM items WHERE lower(name) = :n", n=name.strip().lower())
        if row is None:
            raise KeyError(f"no product named {name!r}")
        return str(row[0])

    return [stock_level, item_price, find_sku]
