"""The slices of a full rebuild (``tasks.lake.refresh``): the relation a materialised view is
computed from, cut into slices of whole keys (:func:`sliced`).

A full rebuild computes a view a slice at a time so that its windows and groups hold a slice, not
the lake. A key of many values (a response, a trial, a family and model) is sliced by a hash of
it, into slices of about ``rows_per_slice`` rows. A key of few values (a group, as ``model, suite,
prompt_style``) is sliced by key: whole keys, counted, packed in the order of their size into
slices of about ``rows_per_slice`` rows (a key larger than that alone); a hash of twelve such keys
into six slices put three in one, and the slice's memory with them (2.7 GB at 10,000,000
responses). Reading each slice's rows once, from files written by one pass, was tried: the same
CPU (what a slice costs is its own work, not the scan) and twice the memory, so each slice filters
the relation.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import duckdb

# At most this many distinct keys (estimated) are sliced by key; more, by a hash of the key.
GROUPED_KEYS = 10_000


@contextlib.contextmanager
def sliced(con: duckdb.DuckDBPyConnection, source: str, key: tuple[str, ...],
           rows_per_slice: int) -> Iterator[list[str]]:
    """The slices of the relation ``source`` (aliased ``s``) by its ``key`` columns: a SELECT per
    slice of that slice's rows, each key's rows all in one slice; one slice, ``source`` itself,
    when it holds at most ``rows_per_slice`` rows."""
    rows = con.execute(f"SELECT count(*) FROM {source}").fetchone()[0]
    if rows <= rows_per_slice:
        yield [f"SELECT s.* FROM {source} s"]
        return
    n_keys = con.execute(f"SELECT approx_count_distinct(hash({_columns('s', key)})) FROM {source} s").fetchone()[0]
    if n_keys <= GROUPED_KEYS:
        n_slices = _by_key(con, source, key, rows_per_slice)
        try:
            yield [f"SELECT s.* FROM {source} s SEMI JOIN (FROM refresh_slices WHERE refresh_slice = {i}) k "
                   f"ON {same_key('s', key)}"
                   for i in range(n_slices)]
        finally:
            con.execute("DROP TABLE IF EXISTS temp.main.refresh_slices")
    else:
        n_slices = -(-rows // rows_per_slice)
        yield [f"SELECT s.* FROM {source} s WHERE hash({_columns('s', key)}) % {n_slices} = {i}" for i in range(n_slices)]


def same_key(alias: str, key: tuple[str, ...]) -> str:
    """The condition that a row of ``alias`` has the ``key`` of the row of ``k`` (NULL equal to NULL)."""
    return " AND ".join(f"{alias}.{column} IS NOT DISTINCT FROM k.{column}" for column in key)


def _by_key(con: duckdb.DuckDBPyConnection, source: str, key: tuple[str, ...], rows_per_slice: int) -> int:
    """The temporary table ``refresh_slices``: each key of ``source`` with its slice, the keys in
    decreasing size packed into slices (a slice takes the keys that start within its
    ``rows_per_slice`` rows, so it holds at most that many and one key more); returns how many slices."""
    columns = ", ".join(key)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE refresh_slices AS
        SELECT * EXCLUDE (n, start), dense_rank() OVER (ORDER BY start // {rows_per_slice}) - 1 AS refresh_slice
        FROM (SELECT *, coalesce(sum(n) OVER (ORDER BY n DESC, {columns}
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS start
              FROM (SELECT {columns}, count(*) AS n FROM {source} GROUP BY ALL))""")
    return con.execute("SELECT max(refresh_slice) + 1 FROM refresh_slices").fetchone()[0]


def _columns(alias: str, key: tuple[str, ...]) -> str:
    return ", ".join(f"{alias}.{column}" for column in key)
