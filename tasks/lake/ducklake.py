"""The lake as DuckLake tables (https://ducklake.select/docs/stable/specification/introduction).

Work in progress for issue #31 stage 2: a :class:`DuckLakeStore` owns the catalog (SQLite by
default, Postgres for several machines), the data path (local or ``s3://``) and the one way to get
a connection; every lake table of ``SCHEMAS`` is a DuckLake table; a chunk is committed in one
transaction, retried on a conflict; compaction is DuckLake's merge, expire and cleanup; an old
Parquet lake is imported once through its own ``lake_table`` macro. Not wired into the pipeline yet:
it is meant to become the storage behind ``tasks.lake.lake.Lake``.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TypeVar

import duckdb
import pyarrow as pa

from tasks.lake.engine import Limits, connect, load_extension, secret_sql
from tasks.lake.lake import Lake
from tasks.lake.schemas import SCHEMAS
from tasks.lake.sql import SQL_DIR, _sql_statements, sql_defines

# The alias every view reads (sql/macros/lake_files.sql in its DuckLake form).
ALIAS = "lake"

# DuckLake's snapshots decide which files belong to a table: the merged-file protocol goes away.
# `day` stays NULL so the staging views' EXCLUDE (day) still bind.
LAKE_TABLE_MACRO = (f"CREATE OR REPLACE MACRO lake_table(tbl) AS TABLE "
                    f"SELECT *, NULL::DATE AS day FROM query_table('{ALIAS}.main.' || tbl)")


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


T = TypeVar("T")


@dataclass(frozen=True)
class DuckLakeStore:
    """Where the lake lives as DuckLake: its catalog and its data path, and how to connect to it.

    ``catalog``: ``sqlite:/abs/path.sqlite`` or ``postgres:<libpq connection string>``;
    ``data_path``: an absolute folder or an ``s3://`` prefix (with ``secret``: the SQL options of a
    DuckDB S3 secret, such as :func:`tasks.lake.engine.s3_secret` gives); ``limits``: each
    connection's memory limit and spill folder.
    """

    catalog: str
    data_path: str
    secret: dict[str, str] = field(default_factory=dict)
    limits: Limits = Limits()

    @classmethod
    def local(cls, warehouse: Path, limits: Limits = Limits()) -> "DuckLakeStore":
        """The default lake: a SQLite catalog and local data under ``warehouse``."""
        root = Path(warehouse).expanduser().resolve()
        return cls(f"sqlite:{root / 'lake.sqlite'}", f"{root / 'lake-data'}/", limits=limits)

    def _extensions(self) -> tuple[str, ...]:
        scanner = "postgres_scanner" if self.catalog.startswith("postgres:") else "sqlite_scanner"
        return ("ducklake", scanner) + (("httpfs",) if self.data_path.startswith("s3://") else ())

    def connect(self, read_only: bool = False) -> duckdb.DuckDBPyConnection:
        """An in-memory DuckDB with the lake attached as ``lake`` and every table of SCHEMAS in it."""
        con = connect(limits=self.limits, autoinstall_known_extensions=False, autoload_known_extensions=False)
        for name in self._extensions():
            load_extension(con, name)
        if self.secret:
            con.execute(secret_sql(self.secret))
        new = self.catalog.startswith("sqlite:") and not Path(self.catalog[len("sqlite:"):]).exists()
        if new:
            Path(self.catalog[len("sqlite:"):]).parent.mkdir(parents=True, exist_ok=True)
        mode = "READ_ONLY" if read_only else f"DATA_PATH {_literal(self.data_path)}"
        _retrying(lambda: con.execute(f"ATTACH IF NOT EXISTS {_literal('ducklake:' + self.catalog)} AS {ALIAS} ({mode})"))
        if new:
            # Readers then never wait for a writer (measured: 310 ms median → 18 ms); it persists in the file.
            with contextlib.closing(sqlite3.connect(self.catalog[len("sqlite:"):])) as db:
                db.execute("PRAGMA journal_mode=WAL")
        if not read_only:
            self._create_tables(con)
        return con

    def _create_tables(self, con: duckdb.DuckDBPyConnection) -> None:
        have = {r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = ?", [ALIAS]).fetchall()}
        for table, schema in SCHEMAS.items():
            if table not in have:
                con.register("invarbench_schema", schema.empty_table())
                with contextlib.suppress(duckdb.CatalogException):  # another process created it first
                    _retrying(lambda: con.execute(
                        f"CREATE TABLE {ALIAS}.main.{table} AS SELECT * FROM invarbench_schema WITH NO DATA"))
                con.unregister("invarbench_schema")


def commit(con: duckdb.DuckDBPyConnection, table: str, chunk: pa.Table, message: str = "",
           attempts: int = 20) -> int:
    """Append ``chunk`` to ``table`` in one transaction (one snapshot); returns the snapshot id.

    DuckLake retries logical conflicts itself; the rest is retried whole (:func:`_retrying`).
    """
    def append() -> int:
        con.register("invarbench_chunk", chunk)
        try:
            con.execute("BEGIN")
            con.execute(f"INSERT INTO {ALIAS}.main.{table} SELECT * FROM invarbench_chunk")
            if message:
                con.execute(f"CALL ducklake_set_commit_message('{ALIAS}', 'invarbench', ?)", [message])
            con.execute("COMMIT")
        except duckdb.Error:
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")
            raise
        finally:
            con.unregister("invarbench_chunk")
        return snapshot(con)

    return _retrying(append, attempts)


def _retrying(work: Callable[[], T], attempts: int = 20) -> T:
    """``work()``, run again with jittered backoff while it fails for a reason that passes: a
    conflict DuckLake did not resolve itself, or a SQLite catalog that another process holds
    (``database is locked``: its writers, a compaction, another process attaching it)."""
    for attempt in range(attempts):
        try:
            return work()
        except duckdb.Error as exc:
            passing = isinstance(exc, duckdb.TransactionException) or "database is locked" in str(exc)
            if not passing or attempt == attempts - 1:
                raise
            time.sleep(min(2.0, 0.05 * 2 ** attempt) * random.random())
    raise AssertionError("unreachable")


def snapshot(con: duckdb.DuckDBPyConnection) -> int:
    """The id of the lake's latest snapshot."""
    return con.execute(f"SELECT max(snapshot_id) FROM ducklake_snapshots('{ALIAS}')").fetchone()[0]


def compact(con: duckdb.DuckDBPyConnection) -> int:
    """DuckLake's maintenance: small inserts flushed to Parquet, adjacent files merged, snapshots
    before this one expired and their files deleted, files of failed commits (an hour old) deleted;
    returns how many files were merged.

    Safe during writes and beside another compaction: each step is a DuckLake transaction.
    """
    _retrying(lambda: con.execute(f"CALL ducklake_flush_inlined_data('{ALIAS}')"))
    merged = _retrying(lambda: con.execute(f"CALL ducklake_merge_adjacent_files('{ALIAS}')").fetchall())
    _retrying(lambda: con.execute(f"CALL ducklake_expire_snapshots('{ALIAS}', older_than => now())"))
    _retrying(lambda: con.execute(f"CALL ducklake_cleanup_old_files('{ALIAS}', cleanup_all => true)"))
    # A write or merge whose commit failed (and was retried) leaves its file in no snapshot; one
    # younger than an hour may still belong to a transaction in flight, so it waits for the next.
    _retrying(lambda: con.execute(
        f"CALL ducklake_delete_orphaned_files('{ALIAS}', older_than => now() - INTERVAL 1 HOUR)"))
    return sum(int(r[2]) for r in merged)


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """Every view and macro of ``sql/`` on ``con``, reading the attached DuckLake tables."""
    replaced = sql_defines(SQL_DIR / "macros" / "lake_files.sql")
    con.execute(LAKE_TABLE_MACRO)
    for stmt in _sql_statements():
        if not stmt.defines & replaced:
            con.execute(stmt.sql)


def import_parquet_lake(con: duckdb.DuckDBPyConnection, old_lake: Lake,
                        progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """Copy every table of an old Parquet lake (day folders, merged files) into the DuckLake
    tables, one transaction per table, through the old ``lake_table`` macro (which leaves out the
    files a merged file replaces); returns the rows copied per table."""
    from tasks.lake.schemas import conform
    from tasks.lake.sql import _lake_sql

    old = connect(limits=old_lake.limits)
    for stmt in _sql_statements():
        if stmt.defines & sql_defines(SQL_DIR / "macros" / "lake_files.sql"):
            old.execute(_lake_sql(stmt, old_lake.location))
    copied = {}
    for table in SCHEMAS:
        try:
            rows = old.execute(f"SELECT * EXCLUDE (day) FROM lake_table('{table}')").to_arrow_table()
        except duckdb.IOException as exc:  # a table newer than the old lake (dataset_items): no file
            if "No files found" not in str(exc):
                raise
            rows = SCHEMAS[table].empty_table()
        # A lake written before a column existed (responses.finish_reason) reads it as nulls.
        chunk = conform(table, rows) if rows.num_rows else SCHEMAS[table].empty_table()
        if chunk.num_rows:
            commit(con, table, chunk, f"import {table} from {old_lake}")
        copied[table] = chunk.num_rows
        if progress:
            progress(table)
    old.close()
    return copied
