"""Queries over the lake's views (:func:`query`), run again when a compaction replaced a file
they listed. The views themselves are created on the connections ``Lake.connect`` gives
(tasks/lake/lake.py), or on the catalog file (tasks/lake/catalog.py).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence, TypeVar

import duckdb

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
