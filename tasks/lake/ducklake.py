"""The lake's tables as DuckLake tables (https://ducklake.select/docs/stable/specification/introduction),
on a connection where the lake is attached as ``lake`` (``tasks.lake.lake.Lake`` attaches it):
the tables of ``SCHEMAS`` created or widened (:func:`create_tables`), a chunk committed in one
transaction and retried while the catalog is busy (:func:`commit`), DuckLake's own maintenance
(:func:`compact`), and the one-time import of a lake in the layout before DuckLake
(:func:`import_parquet_lake`).
"""

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
from tasks.lake.schemas import SCHEMAS, column_types, conform

# The name every view reads the lake by (sql/macros/lake_files.sql).
ALIAS = "lake"

T = TypeVar("T")


# How DuckDB reports a data file that the catalog listed when the work began but that is gone when
# it is read: a compaction merged it (DuckLake deletes a replaced file at once, as the merged file
# keeps its rows' snapshots) and the work, planned before, never commits; run again, it plans on
# the merged file. Measured: a second compaction on S3 failed with 404 this way.
VANISHED = re.compile(r"No such file|No files found|Cannot open file|HTTP 404|NoSuchKey|NO_SUCH_KEY")


def retrying(work: Callable[[], T], attempts: int = 20) -> T:
    """``work()``, run again with jittered backoff while it fails for a reason that passes: a
    conflict DuckLake did not resolve itself, a SQLite catalog that another process holds
    (``database is locked``: its writers, a compaction, another process attaching it), or a data
    file a compaction replaced meanwhile (:data:`VANISHED`)."""
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


def attached(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the lake is attached to ``con`` (as :data:`ALIAS`)."""
    return con.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name = ?", [ALIAS]).fetchone()[0] > 0


def lake_tables(con: duckdb.DuckDBPyConnection) -> dict[str, set[str]]:
    """The tables of the attached lake, each with its column names."""
    columns: dict[str, set[str]] = {}
    for table, column in con.execute("SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = ?",
                                     [ALIAS]).fetchall():
        columns.setdefault(table, set()).add(column)
    return columns


def create_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create every table of SCHEMAS the lake lacks, and add the columns a table gained since
    (rows written before read them as nulls), in one transaction."""
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
            _in_transaction(con, ddl)

    retrying(create)


def _in_transaction(con: duckdb.DuckDBPyConnection, statements: list[str]) -> None:
    con.execute("BEGIN")
    try:
        for statement in statements:
            con.execute(statement)
        con.execute("COMMIT")
    except duckdb.Error:
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise


def commit(con: duckdb.DuckDBPyConnection, table: str, chunk: pa.Table, message: str = "",
           run_id: str | None = None, attempts: int = 20) -> int:
    """Append ``chunk`` to ``table`` in one transaction (one snapshot); returns that snapshot's id.

    The snapshot carries ``message`` and, when given, ``{"run_id": run_id}`` as its extra info,
    which is how a run's snapshots are found (``ducklake_snapshots``). DuckLake retries logical
    conflicts itself; the rest is retried whole (:func:`retrying`).

    The id is DuckLake's ``last_committed_snapshot()``: the last commit of this DuckDB database
    (not the lake's newest, which may be another process's), so no other commit on ``con``'s
    database may come between (``Lake`` holds its commit lock around this).
    """
    extra = json.dumps({"run_id": run_id}) if run_id else None

    def append() -> int:
        con.register("invarbench_chunk", chunk)
        try:
            _in_transaction(con, [
                f"INSERT INTO {ALIAS}.main.{table} BY NAME SELECT * FROM invarbench_chunk",
                f"CALL ducklake_set_commit_message('{ALIAS}', 'invarbench', {sql_literal(message)}, "
                f"extra_info => {sql_literal(extra) if extra else 'NULL'})"])
        finally:
            con.unregister("invarbench_chunk")
        return con.execute(f"SELECT id FROM {ALIAS}.last_committed_snapshot()").fetchone()[0]

    return retrying(append, attempts)


def compact(con: duckdb.DuckDBPyConnection, expire_before: dt.datetime | None = None) -> int:
    """DuckLake's maintenance: small inserts flushed to Parquet, adjacent files merged, snapshots
    older than ``expire_before`` expired (none when None: every snapshot stays readable), the files
    no snapshot needs any more deleted, and files of failed commits (an hour old); returns how
    many files were merged.

    Safe during writes and beside another compaction: each step is a DuckLake transaction.
    """
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


# A lake before DuckLake: Parquet under <root>/<table>/day=YYYY-MM-DD/, where a merged file names in
# its metadata (key invarbench.replaces) the files it replaced, which are no longer part of the table.
OLD_SCHEMA_FILE = "day=1970-01-01/merged-schema.parquet"
_OLD_ROWS = """
SELECT * EXCLUDE (filename, day)
FROM read_parquet('{folder}/**/*.parquet', hive_partitioning = true, union_by_name = true, filename = true)
WHERE parse_filename(filename) NOT IN (
    SELECT unnest(string_split(decode(value), chr(10))) FROM parquet_kv_metadata('{folder}/**/merged-*.parquet')
    WHERE decode(key) = 'invarbench.replaces')
"""


def import_parquet_lake(con: duckdb.DuckDBPyConnection, root: str,
                        progress: Callable[[str, int], None] | None = None) -> dict[str, int]:
    """Copy every table of the old lake at ``root`` into the attached lake's tables, one
    transaction per table, leaving out the files a merged file replaced; returns the rows copied
    per table. ``progress(table, rows)`` is called after each table."""
    copied = {}
    for table in SCHEMAS:
        folder = f"{root}/{table}".replace("'", "''")
        try:
            rows = con.execute(_OLD_ROWS.format(folder=folder)).to_arrow_table()
        except duckdb.IOException as exc:  # a table newer than the old lake (dataset_items): no file
            if "No files found" not in str(exc):
                raise
            rows = SCHEMAS[table].empty_table()
        # A lake written before a column existed (responses.finish_reason) reads it as nulls.
        chunk = conform(table, rows)
        if chunk.num_rows:
            commit(con, table, chunk, f"import {table} from {root}")
        copied[table] = chunk.num_rows
        if progress:
            progress(table, chunk.num_rows)
    return copied
