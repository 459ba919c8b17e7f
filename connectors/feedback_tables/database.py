"""Database access for the SQL feedback connector: engines, clear errors, streaming selects.

Every way a database can be unusable (bad URL, driver not installed, server down, wrong
password, missing SQLite file, missing table or column) becomes one :class:`SourceError`
whose ``fix`` says what to change; passwords never appear in messages.

Streaming follows SQLAlchemy 2.0's guidance: ``execution_options(stream_results=True,
yield_per=N)`` gives server-side cursors on PostgreSQL (psycopg2 named cursors) and MySQL
(``SSCursor``), and plain batched fetches on SQLite.
"""

from __future__ import annotations

import importlib.util
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from sdk.errors import SourceError

_DRIVERS = {"postgresql": "psycopg2-binary (pip install 'tuneloop[postgres]')",
            "mysql": "pymysql (pip install 'tuneloop[mysql]'), with a URL like mysql+pymysql://",
            "mariadb": "pymysql (pip install 'tuneloop[mysql]'), with a URL like mariadb+pymysql://"}


_FALLBACK = {"postgresql": [("psycopg", "psycopg"), ("psycopg2", "psycopg2")],
             "mysql": [("MySQLdb", "mysqldb"), ("pymysql", "pymysql")],
             "mariadb": [("MySQLdb", "mysqldb"), ("pymysql", "pymysql")]}


def _pick_driver(url: sa.URL) -> sa.URL:
    """For a bare ``postgresql://`` / ``mysql://`` URL, use the first installed driver
    (SQLAlchemy 2.1 defaults to psycopg 3 and mysqlclient, which our extras do not install)."""
    if "+" in url.drivername or url.get_backend_name() not in _FALLBACK:
        return url
    for module, driver in _FALLBACK[url.get_backend_name()]:
        if importlib.util.find_spec(module) is not None:
            return url.set(drivername=f"{url.get_backend_name()}+{driver}")
    return url


class Database:
    """One engine for one read.

    Args:
        url: SQLAlchemy URL.
        resolve: maps a relative SQLite path to an absolute one (the config folder's resolver).
        connect_timeout_s: seconds to wait for a server (PostgreSQL/MySQL).
    Raises:
        SourceError: bad URL, missing driver or missing SQLite file.
    """

    def __init__(self, url: str, resolve: Callable[[str], Path] = Path, connect_timeout_s: int = 10) -> None:
        self.display = self.safe_url(url)
        try:
            parsed = make_url(url)
        except sa_exc.ArgumentError as exc:
            raise SourceError(f"database URL {url!r} is not a SQLAlchemy URL ({exc})",
                              "write it as dialect+driver://user:pass@host:port/db, e.g. sqlite:///feedback.db") from None
        parsed = _pick_driver(parsed)
        connect_args: dict[str, Any] = {}
        if parsed.get_backend_name() == "sqlite":
            db = parsed.database
            if db and db != ":memory:" and not db.startswith("file:"):
                path = resolve(db)
                if not path.is_file():
                    raise SourceError(f"SQLite database {path} " + ("is a folder" if path.is_dir() else "does not exist"),
                                      "check `url:` of the sql_feedback source (relative paths start at the config's folder)")
                parsed = parsed.set(database=str(path))
        elif parsed.get_backend_name() in ("postgresql", "mysql", "mariadb"):
            connect_args["connect_timeout"] = connect_timeout_s
        try:
            self.engine = sa.create_engine(parsed, connect_args=connect_args)
        except (ImportError, sa_exc.NoSuchModuleError) as exc:
            need = _DRIVERS.get(parsed.get_backend_name(), "the DBAPI driver for this dialect")
            raise SourceError(f"no database driver for {self.display} ({exc})", f"install {need}") from None

    @staticmethod
    def safe_url(url: str, table: str | None = None) -> str:
        """The URL with any password masked (plus ``#table``), for messages and provenance."""
        try:
            text = make_url(url).render_as_string(hide_password=True)
        except sa_exc.ArgumentError:
            text = "<invalid url>"
        return f"{text}#{table}" if table else text

    def close(self) -> None:
        """Release the engine's connections."""
        self.engine.dispose()

    def _connect(self) -> sa.Connection:
        try:
            return self.engine.connect()
        except sa_exc.DBAPIError as exc:
            first = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)
            raise SourceError(f"cannot connect to {self.display}: {first}",
                              "check that the server is running and reachable, and the host, port, user, "
                              "password and database in `url:`") from None

    @contextmanager
    def session(self) -> Iterator[Session]:
        """An ORM session on one connection, for typed queries (:mod:`feedback.store`).

        Raises:
            SourceError: the database cannot be reached (errors inside the block are the caller's).
        """
        with self._connect() as conn, Session(bind=conn) as session:
            yield session

    def relation(self, conn: sa.Connection, table: str | None, query: str | None) -> sa.FromClause:
        """A selectable for the table (reflected) or the query (wrapped as a subquery); built once
        per :class:`Database` (pages of a keyset read reuse it)."""
        cache = self.__dict__.setdefault("_relations", {})
        if (table, query) not in cache:
            cache[(table, query)] = self._relation(conn, table, query)
        return cache[(table, query)]

    def _relation(self, conn: sa.Connection, table: str | None, query: str | None) -> sa.FromClause:
        if table is not None:
            schema, _, name = table.rpartition(".")
            try:
                return sa.Table(name, sa.MetaData(), autoload_with=conn, schema=schema or None)
            except sa_exc.DatabaseError as exc:  # e.g. SQLite's "file is not a database" (a CSV or dump named .db)
                raise SourceError(f"cannot read table {table!r} of {self.display}: {str(exc.orig).splitlines()[0]}",
                                  "check that `url:` points at the database itself (not an export or a dump)") from None
            except sa_exc.NoSuchTableError:
                names = sa.inspect(conn).get_table_names(schema=schema or None)
                raise SourceError(f"table {table!r} does not exist in {self.display}",
                                  f"set `table:` to one of {sorted(names)[:20]}" if names else
                                  "that database has no tables: check the database name in `url:`") from None
        try:
            keys = list(conn.execute(sa.text(f"SELECT * FROM ({query}) AS q WHERE 1=0")).keys())
        except sa_exc.DBAPIError as exc:
            raise SourceError(f"the `query:` of the sql_feedback source fails: {str(exc.orig).splitlines()[0]}",
                              "run the query by hand and fix it (it must be a single SELECT)") from None
        return sa.text(query).columns(*[sa.column(k) for k in keys]).subquery("q")

    def columns(self, table: str | None, query: str | None) -> list[str]:
        """The column names of the table or query result. Raises :class:`SourceError`."""
        with self._connect() as conn:
            return list(self.relation(conn, table, query).c.keys())

    def select(self, conn: sa.Connection, table: str | None, query: str | None, columns: list[str],
               where: str | None, order_by: list[str], then_by: list[str],
               after: tuple[str | None, Any] | None, within: Any = None) -> sa.Select:
        """The ``SELECT`` of :meth:`stream` (columns checked). ``within``: a key range with
        ``conditions(relation) -> [SQL conditions]`` (a :class:`~connectors.feedback_tables.shards.Shard`).
        Raises :class:`SourceError`."""
        rel = self.relation(conn, table, query)
        available = set(rel.c.keys())
        missing = [c for c in columns if c not in available]
        if missing:
            raise SourceError(f"columns {missing} are not in {table or 'the query result'} "
                              f"(it has {sorted(available)})", "fix `columns:` / `json_paths:` of the sql_feedback source")
        stmt = sa.select(*[rel.c[c] for c in columns])
        if where:
            stmt = stmt.where(sa.text(f"({where})"))
        if after is not None:
            stmt = stmt.where(rel.c[after[0]] > after[1])
        if within is not None:
            stmt = stmt.where(*within.conditions(rel))
        return stmt.order_by(*[rel.c[c] for c in dict.fromkeys(order_by + then_by)])

    def stream(self, table: str | None, query: str | None, columns: list[str], where: str | None,
               order_by: list[str], then_by: list[str], after: tuple[str | None, Any] | None,
               batch_size: int, within: Any = None) -> Iterator[dict[str, Any]]:
        """Yield rows (column name -> value) of ``columns``, ordered by ``order_by + then_by``.

        Args:
            after: ``(column, value)``: only rows with ``column > value`` (incremental reads).
            within: only the rows of this key range (see :meth:`select`).
        Raises:
            SourceError: connection, table, column or filter problems.
        """
        with self._connect() as conn:
            stmt = self.select(conn, table, query, columns, where, order_by, then_by, after, within)
            try:
                result = conn.execution_options(stream_results=True, yield_per=batch_size).execute(stmt)
                for row in result.mappings():
                    yield dict(row)
            except sa_exc.DBAPIError as exc:
                raise SourceError(f"reading {self.display} failed: {str(exc.orig).strip().splitlines()[0]}",
                                  "check `filter:` and the mapped columns of the sql_feedback source") from None

    def pages(self, table: str | None, query: str | None, columns: list[str], where: str | None, key: str,
              after: Any, batch_size: int) -> Iterator[list[dict[str, Any]]]:
        """Rows of ``columns`` in ``key`` order, one list per page, by keyset pagination (field case L3).

        Each page is its own short statement, ``WHERE key > :last ORDER BY key LIMIT :n``, on its own
        connection checkout and transaction: no server-side cursor or transaction stays open between
        pages, so a pooler in transaction mode (PgBouncer) and a watermark committed after each page
        in the same database cannot end the read, and memory holds one page on any driver. ``key``
        must be unique (a primary key); rows whose key is NULL cannot be paged and are not read.

        Args:
            after: start after this key value (``None``: from the first row).
        Raises:
            SourceError: connection, table, column or filter problems.
        """
        last = after
        while True:
            with self._connect() as conn:
                rel = self.relation(conn, table, query)
                stmt = self.select(conn, table, query, columns, where, [key], [],
                                   (key, last) if last is not None else None).where(rel.c[key].is_not(None))
                try:
                    page = [dict(r) for r in conn.execute(stmt.limit(batch_size)).mappings()]
                except sa_exc.DBAPIError as exc:
                    raise SourceError(f"reading {self.display} failed: {str(exc.orig).strip().splitlines()[0]}",
                                      "check `filter:` and the mapped columns of the sql_feedback source") from None
            if page:
                yield page
            if len(page) < batch_size:
                return
            last = page[-1][key]

    def select_sql(self, table: str | None, query: str | None, columns: list[str], where: str | None,
                   order_by: list[str], then_by: list[str], within: Any = None) -> str:
        """The ``SELECT`` of :meth:`stream` as SQL text in this database's dialect (no parameters)."""
        with self._connect() as conn:
            stmt = self.select(conn, table, query, columns, where, order_by, then_by, None, within)
            return str(stmt.compile(dialect=self.engine.dialect, compile_kwargs={"literal_binds": True}))
