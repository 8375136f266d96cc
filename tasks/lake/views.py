"""Queries over the lake's views (:func:`query`). The views themselves are created on the
connections ``Lake.connect`` gives (tasks/lake/lake.py), or on the catalog file (tasks/lake/catalog.py).
"""

from __future__ import annotations

from typing import Any, Sequence

import duckdb


def query(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """Run ``sql`` and return every row as a dict (fetches fully, so the connection is free again)."""
    cur = con.execute(sql, params or [])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]
