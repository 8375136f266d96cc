"""Damage contained: a data file of the lake that cannot be read is set aside, and the work goes on.

DuckLake lists a table's data files in its catalog; one that does not read (truncated, overwritten,
a disk error) would fail every query of its table. When a query fails naming such a file
(:func:`reading`), the file is moved to ``<lake>/quarantine/<table>/`` and its rows are deleted
from the table in a new snapshot, with a warning naming it; then the query runs again.

The rows leave the table as DuckLake's own delete of a whole file records it (a new snapshot that
ends the file), written to the catalog directly: DuckLake's ``DELETE ... WHERE filename = …``
opens the file to find its rows, which is what fails (measured on DuckDB 1.5.5: it does, unless
it had the footer cached), and DuckLake has no function that drops a file from a table. Later
writes, compaction and cleanup see the file gone (tested); the snapshots from before still list
it: the lake as of them no longer reads. ``invarbench check`` lists what is in quarantine (:func:`quarantined`).

Only a writable lake quarantines: a read-only command writes nothing (it raises as before). On an
object store the move is a copy and a delete (pyarrow's S3 file system, reached with the endpoint
and region of the DuckDB secret the query read the file with and the credentials of the
environment, as that secret's: :func:`_files`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import duckdb
import pyarrow as pa

from tasks.lake.ducklake import ALIAS, lake_tables, retrying

if TYPE_CHECKING:
    import pyarrow.fs as pafs

log = logging.getLogger(__name__)

T = TypeVar("T")
FOLDER = "quarantine"
MAX_FILES = 100  # files set aside for one query at most: beyond, the lake needs a person
# DuckDB quotes the file it failed to read, with " or ' depending on the error.
_NAMED = re.compile(r"""["']([^"']+\.parquet)["']""")


def reading(con: duckdb.DuckDBPyConnection, work: Callable[[], T]) -> T:
    """``work()``, a query on ``con`` (the lake attached as ``lake``), run again after each data
    file its failure names is quarantined (:func:`quarantine`)."""
    for _ in range(MAX_FILES):
        try:
            return work()
        except duckdb.Error as exc:
            found = unreadable_file(con, exc)
            if found is None:
                raise
            quarantine(con, *found, exc)
    return work()


def unreadable_file(con: duckdb.DuckDBPyConnection, exc: duckdb.Error) -> tuple[str, str] | None:
    """(table, path) of the data file that ``exc`` failed to read, when it names a file of a table of
    the writable local lake attached to ``con`` that is there and does not read; else None."""
    if _read_only(con):
        return None
    paths = [p for p in _NAMED.findall(str(exc)) if _is_file(*_files(con, p))]
    if not paths:
        return None
    for table in lake_tables(con):
        files = {f for (f,) in con.execute(f"SELECT data_file FROM ducklake_list_files('{ALIAS}', ?)", [table]).fetchall()}
        for path in paths:
            if path in files and read_error(con, path) is not None:
                return table, path
    return None


def _read_only(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute("SELECT readonly FROM duckdb_databases() WHERE database_name = ?", [ALIAS]).fetchone()
    return row is None or bool(row[0])


def read_error(con: duckdb.DuckDBPyConnection, path: str) -> str | None:
    """The first line of the error that reading the data file ``path`` to its end (footer, then
    every row group) meets on ``con``, or None when it reads."""
    try:
        reader = con.execute("SELECT * FROM read_parquet(?)", [path]).to_arrow_reader(10_000)
        for _ in reader:  # a batch at a time: large files stay out of memory
            pass
    except (duckdb.Error, OSError, pa.ArrowException) as exc:
        return str(exc).splitlines()[0]
    return None


def quarantine(con: duckdb.DuckDBPyConnection, table: str, path: str, why: BaseException) -> str:
    """Move ``path`` (a data file of ``table``) to the lake's quarantine folder and delete its rows
    from the table in one snapshot; returns where it went. A file another process moved first is
    only deleted from the table (again: a delete of rows already gone deletes none)."""
    # DuckLake writes a table's files under <lake>/data/main/<table>/: the lake's root is before /data/.
    target = f"{path.rsplit('/data/', 1)[0]}/{FOLDER}/{table}/{Path(path).name}"
    files, source = _files(con, path)
    if "://" not in path:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):  # moved by another process first
        if _is_file(files, source):
            # (on S3 a copy and a delete, after which pyarrow keeps the data folder as an empty
            # "<folder>/" object: a DuckDB glob and DuckLake skip it)
            files.move(source, _files(con, target)[1])
    log.warning("quarantined the unreadable data file %s of table %s (%s): moved to %s; its rows are out of "
                "the table from now on", path, table, str(why).splitlines()[0], target)
    _end_file(con, table, path)
    return target


def _end_file(con: duckdb.DuckDBPyConnection, table: str, path: str, attempts: int = 20) -> None:
    """Take ``path`` out of ``table`` in a new snapshot, as DuckLake records a delete of every row
    of a file: a snapshot like the latest, a ``deleted_from_table`` change, and the file's (and its
    delete files') ``end_snapshot`` set to it. Written to the catalog directly, since DuckLake's
    DELETE opens the file first. A writer that took the same snapshot id meanwhile makes it run again."""
    meta, name = f"__ducklake_metadata_{ALIAS}", Path(path).name

    def end() -> None:
        con.execute("BEGIN")
        try:
            found = con.execute(f"""SELECT f.data_file_id, f.table_id FROM {meta}.ducklake_data_file f
                                    JOIN {meta}.ducklake_table t USING (table_id)
                                    WHERE f.end_snapshot IS NULL AND t.end_snapshot IS NULL AND t.table_name = ?
                                      AND (f.path = ? OR f.path = ?)""", [table, name, path]).fetchall()
            for file_id, table_id in found:  # none when another process took it out first
                [(snapshot,)] = con.execute(f"SELECT max(snapshot_id) + 1 FROM {meta}.ducklake_snapshot").fetchall()
                con.execute(f"""INSERT INTO {meta}.ducklake_snapshot SELECT ?, now(), schema_version, next_catalog_id,
                                next_file_id FROM {meta}.ducklake_snapshot WHERE snapshot_id = ?""", [snapshot, snapshot - 1])
                con.execute(f"INSERT INTO {meta}.ducklake_snapshot_changes VALUES (?, ?, 'invarbench', ?, NULL)",
                            [snapshot, f"deleted_from_table:{table_id}", f"quarantine {table}: {name}"])
                for kind in ("data_file", "delete_file"):
                    con.execute(f"UPDATE {meta}.ducklake_{kind} SET end_snapshot = ? "
                                "WHERE data_file_id = ? AND end_snapshot IS NULL", [snapshot, file_id])
            con.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")
            raise

    for attempt in range(attempts):
        try:
            return retrying(end)
        except duckdb.ConstraintException:  # a commit took the snapshot id: plan on the new latest
            if attempt == attempts - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


def quarantined(con: duckdb.DuckDBPyConnection, root: str) -> list[dict[str, Any]]:
    """The files in the quarantine folder of the lake at ``root`` (``Lake.root``; an object-store
    lake's reached as ``con`` reads it), one dict each."""
    import pyarrow.fs as pafs  # here, not at the top: 35 ms of every command's start

    files, folder = _files(con, f"{root}/{FOLDER}")
    scheme = root.split("://", 1)[0] + "://" if "://" in root else ""
    found = files.get_file_info(pafs.FileSelector(folder, recursive=True, allow_not_found=True))
    return [{"file": scheme + f.path, "table": Path(f.path).parent.name, "bytes": f.size}
            for f in sorted(found, key=lambda f: f.path) if f.type == pafs.FileType.File]


def _files(con: duckdb.DuckDBPyConnection, path: str) -> tuple[pafs.FileSystem, str]:
    """The file system that holds ``path`` (a local path or an ``s3://`` URL) and the path in it.
    An object store is reached at the endpoint and region of the DuckDB secret ``con`` reads
    ``path`` with, and with the credentials of the environment, where that secret took them
    (``Lake.s3_secret_sql``; DuckDB shows a secret's settings, never its keys)."""
    import pyarrow.fs as pafs  # here, not at the top: 35 ms of every command's start

    if "://" not in path:
        return pafs.LocalFileSystem(), path
    row = con.execute("SELECT s.secret_string FROM which_secret(?, 's3') w JOIN duckdb_secrets() s USING (name)",
                      [path]).fetchone()
    settings = dict(part.split("=", 1) for part in row[0].split(";") if "=" in part) if row else {}
    files = pafs.S3FileSystem(
        access_key=os.environ.get("AWS_ACCESS_KEY_ID"), secret_key=os.environ.get("AWS_SECRET_ACCESS_KEY"),
        session_token=os.environ.get("AWS_SESSION_TOKEN"), region=settings.get("region") or None,
        endpoint_override=settings.get("endpoint") or None, scheme="http" if settings.get("use_ssl") == "false" else "https")
    return files, path.split("://", 1)[1]


def _is_file(files: pafs.FileSystem, path: str) -> bool:
    return files.get_file_info(path).type.name == "File"
