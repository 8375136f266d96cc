"""Queries over the lake's views (:func:`query`), which ``Lake.connect`` (tasks/lake/lake.py) or
the catalog file (tasks/lake/catalog.py) create."""

from __future__ import annotations

from typing import Any, Sequence

import duckdb

from tasks.lake.ducklake import retrying
from tasks.lake.quarantine import reading


def query(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """Every row of ``sql`` as a dict (fetched fully: the connection is free again), run again
    after a passing failure (``tasks.lake.ducklake.retrying``) and after setting aside a data
    file that does not read (``tasks.lake.quarantine.reading``)."""
    def run() -> list[dict[str, Any]]:
        cur = con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    return reading(con, lambda: retrying(run))
