"""The lake's table folders: each holds a schema file (:func:`write_schema_files`), except in a
lake opened read-only (``Lake.read_only``), where a table without one reads as empty
(:func:`_empty_table_sql`).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from tasks.lake.filesystem import atomic_write
from tasks.lake.schemas import SCHEMA_FILE, SCHEMAS


def absent_schema_files(fs: pafs.FileSystem, root: str) -> frozenset[str]:
    """The tables of the lake at ``root`` in ``fs`` that have no schema file."""
    return frozenset(t for t in SCHEMAS if fs.get_file_info(f"{root}/{t}/day=1970-01-01/{SCHEMA_FILE}").type
                     == pafs.FileType.NotFound)


_DUCKDB_TYPES = {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN",
                 pa.timestamp("us", tz="UTC"): "TIMESTAMPTZ", pa.list_(pa.string()): "VARCHAR[]"}


def _empty_table_sql(table: str) -> str:
    """A query of no rows with the columns ``lake_table(table)`` would give (its ``day`` included)."""
    columns = [f"CAST(NULL AS {_DUCKDB_TYPES[f.type]}) AS {f.name}" for f in SCHEMAS[table]]
    return f"(SELECT {', '.join(columns)}, CAST(NULL AS DATE) AS day WHERE false)"


def write_schema_files(fs: pafs.FileSystem, root: str) -> None:
    """Create every table folder of the lake at ``root`` with an empty schema file, so views work
    before the first run.

    The schema file is named like a merged file that replaces nothing (:data:`SCHEMA_FILE`), so
    the views' look-up of merged files always finds one.

    A schema file from an older version (a table that has since gained columns) is rewritten, so
    the views of an old lake name every current column before the first new row carries it.
    """
    for table, schema in SCHEMAS.items():
        target = f"{root}/{table}/day=1970-01-01/{SCHEMA_FILE}"
        if (fs.get_file_info(target).type == pafs.FileType.NotFound
                or not pq.read_schema(target, filesystem=fs).equals(schema)):
            atomic_write(fs, target, schema.empty_table())
