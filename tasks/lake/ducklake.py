"""The lake's tables as DuckLake tables on a connection where ``Lake`` attached the lake as ``lake``:
created or widened (:func:`create_tables`), a chunk committed in one retried transaction
(:func:`commit`), DuckLake's maintenance (:func:`compact`)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import random
import re
import time
from typing import Callable, TypeVar

import duckdb
import pyarrow as pa

from tasks.lake.engine import sql_literal
from tasks.lake.schemas import SCHEMAS, column_types

# The name every view reads the lake by (sql/macros/lake_files.sql).
ALIAS = "lake"

T = TypeVar("T")


# A data file the catalog listed when the work began, gone when read: a compaction merged it
# (DuckLake deletes a replaced file at once) and the work never commits; run again, it plans on the
# merged file. Measured: a second compaction on S3 failed with 404 this way.
VANISHED = re.compile(r"No such file|No files found|Cannot open file|HTTP 404|NoSuchKey|NO_SUCH_KEY")


def retrying(work: Callable[[], T], attempts: int = 20) -> T:
    """``work()``, run again with jittered backoff while it fails for a reason that passes: a
    conflict DuckLake did not resolve, a SQLite catalog another process holds (``database is
    locked``), or a data file a compaction replaced meanwhile (:data:`VANISHED`)."""
    for attempt in range(attempts):
        try:
            return work()
        except duckdb.Error as exc:
            passing = (isinstance(exc, duckdb.TransactionException) or "database is locked" in str(exc)
                       or bool(VANISHED.search(str(exc))))
            if not passing or attempt == attempts - 1:
                raise
            time.sleep(min(2.0, 0.05 * 2 ** attempt) * random.random())
    raise AssertionError("unreachable")


# The alias as a SQL literal: DuckDB's Python client imports pandas (0.35 s of CPU) to bind the first
# query parameter of a process, and the checks on every opening of the lake (``invarbench sql``) need none.
_ALIAS_LITERAL = sql_literal(ALIAS)


def attached(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the lake is attached to ``con`` (as :data:`ALIAS`)."""
    return con.execute(f"SELECT count(*) FROM duckdb_databases() WHERE database_name = {_ALIAS_LITERAL}").fetchone()[0] > 0


def current_snapshot(con: duckdb.DuckDBPyConnection) -> int:
    """The id of the snapshot the lake attached to ``con`` is read at (the latest, unless attached
    at another)."""
    return con.execute(f"SELECT id FROM ducklake_current_snapshot({_ALIAS_LITERAL})").fetchone()[0]


def lake_tables(con: duckdb.DuckDBPyConnection) -> dict[str, set[str]]:
    """The tables of the attached lake, each with its column names."""
    rows = con.execute("SELECT table_name, list(column_name) FROM duckdb_columns() "
                       f"WHERE database_name = {_ALIAS_LITERAL} GROUP BY 1").fetchall()
    return {table: set(columns) for table, columns in rows}


def create_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create the tables of SCHEMAS the lake lacks and add the columns they gained (older rows read
    nulls), in one transaction."""
    def create() -> None:
        have = lake_tables(con)
        ddl = []
        for table in SCHEMAS:
            types = column_types(table)
            if table not in have:
                ddl.append(f"CREATE TABLE IF NOT EXISTS {ALIAS}.main.{table} "
                           f"({', '.join(f'{name} {kind}' for name, kind in types)})")
            ddl += [f"ALTER TABLE {ALIAS}.main.{table} ADD COLUMN IF NOT EXISTS {name} {kind}"
                    for name, kind in types if table in have and name not in have[table]]
        if ddl:
            in_transaction(con, ddl)

    retrying(create)


def in_transaction(con: duckdb.DuckDBPyConnection, statements: list[str]) -> None:
    """Run ``statements`` on ``con`` as one transaction (one snapshot of the lake), rolled back on an error."""
    try:
        con.execute(";\n".join(["BEGIN", *statements, "COMMIT"]))
    except duckdb.Error:
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise


def commit(con: duckdb.DuckDBPyConnection, table: str, chunk: pa.Table, message: str = "",
           run_id: str | None = None, attempts: int = 20) -> int:
    """Append ``chunk`` to ``table`` in one transaction (one snapshot), retried whole
    (:func:`retrying`); returns that snapshot's id (:func:`commit_select`)."""
    con.register("invarbench_chunk", chunk)
    try:
        return commit_select(con, table, "SELECT * FROM invarbench_chunk", message, run_id, attempts)
    finally:
        con.unregister("invarbench_chunk")


def commit_select(con: duckdb.DuckDBPyConnection, table: str, select: str, message: str = "",
                  run_id: str | None = None, attempts: int = 20) -> int:
    """Append the rows of ``select`` (columns named as ``table``'s) to ``table`` in one transaction
    (one snapshot), retried whole (:func:`retrying`); returns that snapshot's id. The snapshot
    carries ``message`` and, when given, ``{"run_id": run_id}`` as its extra info: how a run's
    snapshots are found.

    The id is the last commit of ``con``'s DuckDB (not the lake's newest, which may be another
    process's), so no other commit of that DuckDB may come between (``Lake``'s commit lock)."""
    extra = json.dumps({"run_id": run_id}) if run_id else None

    def append() -> int:
        in_transaction(con, [
            f"INSERT INTO {ALIAS}.main.{table} BY NAME {select}",
            f"CALL ducklake_set_commit_message('{ALIAS}', 'invarbench', {sql_literal(message)}, "
            f"extra_info => {sql_literal(extra) if extra else 'NULL'})"])
        # no catalog query, unlike lake.last_committed_snapshot() (a catalog transaction of its own)
        return con.execute(f"SELECT id FROM ducklake_last_committed_snapshot('{ALIAS}')").fetchone()[0]

    return retrying(append, attempts)


def compact(con: duckdb.DuckDBPyConnection, expire_before: dt.datetime | None = None) -> int:
    """DuckLake's maintenance, each step a transaction of its own (safe during writes and beside
    another compaction): small inserts flushed to Parquet, adjacent files merged, snapshots older
    than ``expire_before`` expired (None: all stay readable), the files no snapshot needs deleted,
    and files of failed commits an hour old; returns how many files were merged."""
    retrying(lambda: con.execute(f"CALL ducklake_flush_inlined_data('{ALIAS}')"))
    merged = retrying(lambda: con.execute(f"CALL ducklake_merge_adjacent_files('{ALIAS}')").fetchall())
    if expire_before is not None:
        retrying(lambda: con.execute(f"CALL ducklake_expire_snapshots('{ALIAS}', older_than => ?)", [expire_before]))
    retrying(lambda: con.execute(f"CALL ducklake_cleanup_old_files('{ALIAS}', cleanup_all => true)"))
    # A write or merge whose commit failed (and was retried) leaves its file in no snapshot; one
    # younger than an hour may still belong to a transaction in flight, so it waits for the next.
    retrying(lambda: con.execute(
        f"CALL ducklake_delete_orphaned_files('{ALIAS}', older_than => now() - INTERVAL 1 HOUR)"))
    return sum(int(r[2]) for r in merged)
