"""The lake's table folders: each holds a schema file (:func:`ensure_lake` writes them), except
in a command that only reads (:func:`read_only`), where a table without one reads as empty.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from tasks.lake.filesystem import atomic_write, is_url, lake_filesystem, unusable_lake
from tasks.lake.schemas import SCHEMA_FILE, SCHEMAS


# URL lakes whose schema files this process has seen: each check costs one request per table.
_ENSURED: set[str] = set()


# Set by the commands that only read (``sql``, ``runs``: :func:`read_only`).
_READ_ONLY = contextvars.ContextVar("invarbench_lake_read_only", default=False)


@contextlib.contextmanager
def read_only() -> Iterator[None]:
    """Within the block nothing is written to any lake: :func:`ensure_lake` writes no schema file,
    a table that has none yet (a fresh lake, or one written before the table existed) reads as
    empty, and a write raises. For commands that must work with read-only credentials."""
    token = _READ_ONLY.set(True)
    try:
        yield
    finally:
        _READ_ONLY.reset(token)


def absent_tables(lake: str) -> frozenset[str]:
    """The tables of ``lake`` without a schema file, when reading only (none otherwise: then
    :func:`ensure_lake` has written them)."""
    if not _READ_ONLY.get():
        return frozenset()
    fs, root = lake_filesystem(lake)
    try:
        return frozenset(t for t in SCHEMAS if fs.get_file_info(f"{root}/{t}/day=1970-01-01/{SCHEMA_FILE}").type
                         == pafs.FileType.NotFound)
    except OSError as exc:
        raise unusable_lake(lake, exc) from None


_DUCKDB_TYPES = {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN",
                 pa.timestamp("us", tz="UTC"): "TIMESTAMPTZ", pa.list_(pa.string()): "VARCHAR[]"}


def _empty_table_sql(table: str) -> str:
    """A query of no rows with the columns ``lake_table(table)`` would give (its ``day`` included)."""
    columns = [f"CAST(NULL AS {_DUCKDB_TYPES[f.type]}) AS {f.name}" for f in SCHEMAS[table]]
    return f"(SELECT {', '.join(columns)}, CAST(NULL AS DATE) AS day WHERE false)"


def ensure_lake(lake: str) -> None:
    """Create every table folder with an empty schema file, so views work before the first run.

    The schema file is named like a merged file that replaces nothing (:data:`SCHEMA_FILE`), so
    the views' look-up of merged files always finds one.

    A schema file from an older version (a table that has since gained columns) is rewritten, so
    the views of an old lake name every current column before the first new row carries it.
    Raises :class:`LakeError` (a configuration error) when the lake cannot be read or written.
    Inside :func:`read_only` it writes nothing and only checks that the lake can be read.
    """
    if lake in _ENSURED:
        return
    if _READ_ONLY.get():
        absent_tables(lake)  # only checks that the lake can be read (LakeError otherwise)
        return
    fs, root = lake_filesystem(lake)
    try:
        for table, schema in SCHEMAS.items():
            target = f"{root}/{table}/day=1970-01-01/{SCHEMA_FILE}"
            if (fs.get_file_info(target).type == pafs.FileType.NotFound
                    or not pq.read_schema(target, filesystem=fs).equals(schema)):
                atomic_write(fs, target, schema.empty_table())
    except OSError as exc:
        raise unusable_lake(lake, exc) from None
    if is_url(lake):
        _ENSURED.add(lake)
