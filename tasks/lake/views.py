"""The pipeline's reads: DuckDB views of ``sql/`` over the lake, created on an in-memory DuckDB
(:func:`connect`, :func:`reader`), so a sweep never holds the catalog file open and
``invarbench sql`` works while it writes; and queries run again when a compaction replaced a file
they listed (:func:`query`).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from typing import Any, Callable, Iterator, Sequence, TypeVar

import duckdb

from tasks.lake.filesystem import is_url, lake_root, register_lake
from tasks.lake.sql import _lake_sql, _needed, _sql_statements
from tasks.lake.tables import _ENSURED, _READ_ONLY, absent_tables, ensure_lake


def create_views(con: duckdb.DuckDBPyConnection, lake: str, sql: str | None = None) -> None:
    """Create (or replace) on ``con`` the views and macros of ``sql/`` that the names in ``sql``
    need, with everything they read (every one when ``sql`` is None), reading the lake at ``lake``.

    Creating a view binds it against the lake's files, so a connection for a few queries
    creates only what they name: ``sql`` is their text (or a list of view names).
    """
    register_lake(con, lake)
    statements = _sql_statements()
    absent = absent_tables(lake)
    for i in _needed(statements, sql):
        _retry_vanished(lambda: con.execute(_lake_sql(statements[i], lake, absent)))


def connect(lake: str, sql: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the views over the lake that ``sql`` needs (all when None; see
    :func:`create_views`): for the pipeline's own reads."""
    ensure_lake(lake)
    con = duckdb.connect(":memory:")
    create_views(con, lake, sql)
    return con
# How DuckDB reports a file that its listing held but that is gone when it opens it (locally, or
# through the lake's filesystem): a compaction merged and deleted it in between.
T = TypeVar("T")
_VANISHED = re.compile(r"No such file|No files found|Path does not exist|NoSuchKey|NO_SUCH_KEY")


def query(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """Run ``sql`` and return every row as a dict (fetches fully, so the connection is free again).

    A query that finds a listed lake file gone (a compaction replaced it by a merged file while the
    query ran) runs again, on a new listing that holds the merged file instead.
    """
    def run() -> list[dict[str, Any]]:
        cur = con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    return _retry_vanished(run)


def _retry_vanished(run: Callable[[], T]) -> T:
    """``run()``, run again (up to three times in all) when it found a listed lake file gone: a
    compaction replaced it by a merged file after the listing, and the next listing holds that."""
    for attempt in range(3):
        try:
            return run()
        except duckdb.Error as exc:  # an IOException locally, a plain Error from the lake's filesystem
            if attempt == 2 or not _VANISHED.search(str(exc)):
                raise
    raise AssertionError("unreachable")


# One in-memory DuckDB per local lake and process, each view created once, when a read first
# needs it: creating a view binds it against the lake's files (every view: more than half a
# second), which the pipeline's many small reads would otherwise pay each time, and a command
# that reads two views would pay for all of them. Views re-bind on every query, so files written
# since are seen. Object-store lakes keep a connection per read: their filesystem caches its
# listing per connection.
_READERS: dict[str, tuple[duckdb.DuckDBPyConnection, set[int]]] = {}
_READERS_LOCK = threading.Lock()


def _reader(lake: str, sql: str | None) -> duckdb.DuckDBPyConnection:
    with _READERS_LOCK:
        con, created = _READERS.get(lake, (None, set()))
        if con is None or not os.path.isdir(lake_root(lake)):
            # (re)made when first used, or when the lake folder was removed since
            _ENSURED.discard(lake)
            ensure_lake(lake)
            con, created = duckdb.connect(":memory:"), set()
            _READERS[lake] = (con, created)
        statements = _sql_statements()
        for i in _needed(statements, sql):
            if i not in created:
                con.execute(_lake_sql(statements[i], lake))
                created.add(i)
        return con


@contextlib.contextmanager
def reader(lake: str, sql: str | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection with the lake's views for the pipeline's reads, closed on exit: a cursor of the
    process's shared in-memory DuckDB for a local lake, a connection of its own for an object store.

    ``sql``: the text of the queries to run (or the names they read), so that only the views
    they need are created (see :func:`create_views`); None: every view.
    """
    # A read-only command's views may stand in for absent tables: never the process's shared ones.
    con = connect(lake, sql) if is_url(lake) or _READ_ONLY.get() else _reader(lake, sql).cursor()
    try:
        yield con
    finally:
        con.close()


def read(lake: str, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """One query over the lake's views (only those it names are created); closes whatever
    connection it opened."""
    with reader(lake, sql) as con:
        return query(con, sql, params)
