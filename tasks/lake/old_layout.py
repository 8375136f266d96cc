"""The one-time import of a lake in the layout before DuckLake: Parquet under
``<root>/<table>/day=YYYY-MM-DD/``, where a merged file names in its metadata (key
``invarbench.replaces``) the files it replaced, which are no longer part of the table.
``tasks.lake.lake.Lake`` imports such a lake into DuckLake when it first creates the catalog.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import duckdb

from tasks import progress
from tasks.lake import ducklake
from tasks.lake.engine import sql_literal
from tasks.lake.schemas import SCHEMAS, conform

log = logging.getLogger(__name__)

# Where a lake folder's old tables are moved once imported (never deleted).
PRE_DUCKLAKE = "_pre_ducklake"
# Each old table folder has one (an empty file of the table's schema).
SCHEMA_FILE = "day=1970-01-01/merged-schema.parquet"
_ROWS = """
SELECT * EXCLUDE (filename, day)
FROM read_parquet('{folder}/**/*.parquet', hive_partitioning = true, union_by_name = true, filename = true)
WHERE parse_filename(filename) NOT IN (
    SELECT unnest(string_split(decode(value), chr(10))) FROM parquet_kv_metadata('{folder}/**/merged-*.parquet')
    WHERE decode(key) = 'invarbench.replaces')
"""


def found(root: str, url: bool, con: duckdb.DuckDBPyConnection | None = None) -> bool:
    """Whether the lake at ``root`` (an object-store ``url`` or not) holds old tables; an object
    store is listed through ``con`` (one listing), and without one is taken to hold none."""
    if not url:
        return any(Path(root, table, SCHEMA_FILE).exists() for table in SCHEMAS)
    return con is not None and con.execute(
        f"SELECT count(*) FROM glob({sql_literal(f'{root}/*/{SCHEMA_FILE}')})").fetchone()[0] > 0


def import_old_layout(con: duckdb.DuckDBPyConnection, root: str, url: bool) -> dict[str, int]:
    """Copy every old table at ``root`` into the lake attached to ``con``, one commit per table,
    then move a local lake's old folders to ``PRE_DUCKLAKE`` (an object store has no move: its old
    objects stay beside ``data/``); returns the rows copied per table."""
    log.warning("importing the lake %s (the layout before DuckLake) into DuckLake", root)
    copied = {}
    with progress.stage("import", len(SCHEMAS)) as advance:
        for table in SCHEMAS:
            folder = f"{root}/{table}".replace("'", "''")
            try:
                rows = con.execute(_ROWS.format(folder=folder)).to_arrow_table()
            except duckdb.IOException as exc:  # a table newer than the old lake (dataset_items): no file
                if "No files found" not in str(exc):
                    raise
                rows = SCHEMAS[table].empty_table()
            chunk = conform(table, rows)  # a column the old lake predates (responses.finish_reason) reads as nulls
            if chunk.num_rows:
                ducklake.commit(con, table, chunk, f"import {table} from {root}")
            copied[table] = chunk.num_rows
            log.info("imported %s: %d rows", table, chunk.num_rows)
            advance(1)
    if not url:
        Path(root, PRE_DUCKLAKE).mkdir(exist_ok=True)
        for table in [t for t in SCHEMAS if Path(root, t).is_dir()]:
            os.replace(Path(root, table), Path(root, PRE_DUCKLAKE, table))
    return copied
