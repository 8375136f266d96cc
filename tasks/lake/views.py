"""Queries over the lake's views (:func:`query`). The views themselves are created on the
connections ``Lake.connect`` gives (tasks/lake/lake.py), or on the catalog file (tasks/lake/catalog.py).
"""

from __future__ import annotations

from typing import Any, Sequence

import duckdb

from tasks.lake.ducklake import retrying
from tasks.lake.quarantine import reading


def query(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """Run ``sql`` and return every row as a dict (fetches fully, so the connection is free again).

    Run again when it meets a passing failure (``tasks.lake.ducklake.retrying``): a data file a
    compaction replaced after the query listed it, or a busy catalog; and after setting aside a
    data file that does not read (``tasks.lake.quarantine.reading``).
    """
    def run() -> list[dict[str, Any]]:
        cur = con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    return reading(con, lambda: retrying(run))
