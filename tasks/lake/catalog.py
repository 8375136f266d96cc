"""The catalog file: DuckDB holding only views (from ``sql/``) over the lake attached as ``lake``,
rebuilt at will, since the DuckLake tables are the truth (:func:`build_catalog`, :func:`open_catalog`).
Beside it, the SQL that attaches the lake for a shell (:func:`attach_file`).

A database file cannot store an ATTACH: whoever opens the catalog attaches the lake first
(``Lake.attach``), or the views fail with ``Catalog "lake" does not exist``.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import time
from pathlib import Path

import duckdb

from tasks.lake.engine import connect, sql_literal
from tasks.lake.lake import Lake
from tasks.lake.materialised import is_current
from tasks.lake.sql import sql_digest

# The catalog remembers which lake and which sql/ its views were built from, so a copied or moved
# warehouse, or a lake mounted elsewhere, is noticed on open and the views rebuilt for it.
_CATALOG_TABLE = "invarbench_catalog"
# The name the catalog file is attached under to read its stamp on another DuckDB (_stored_stamp).
_FILE_ALIAS = "invarbench_catalog_file"


def _catalog_stamp(lake: Lake, con: duckdb.DuckDBPyConnection) -> tuple[str, str]:
    return _stamp(lake, lake.absent_tables(con), is_current(con))


def _stamp(lake: Lake, absent: frozenset[str], current: bool) -> tuple[str, str]:
    # views built while tables were absent read them as empty: rebuilt once the tables exist; and
    # those over the materialised tables read them only while they are current (tasks.lake.materialised)
    parts = [sql_digest(), ",".join(sorted(absent)), lake.catalog, str(current)]
    return lake.root, hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


# How DuckDB refuses a database file written in another storage format (a catalog written by
# DuckDB 2.0, by releases before the version pin, cannot be opened by 1.5).
_OTHER_STORAGE = re.compile(r"created with an? (?:newer|older) version|version number \d")


def _open_writable(catalog: Path, lake: Lake, attempts: int) -> duckdb.DuckDBPyConnection:
    for attempt in range(attempts):
        try:
            return connect(str(catalog), lake.limits)
        except duckdb.IOException as exc:
            if _OTHER_STORAGE.search(str(exc)):
                # Views only: the lake is the truth, so a catalog this DuckDB cannot read is
                # replaced, not a reason to fail.
                for path in (catalog, catalog.with_name(catalog.name + ".wal")):
                    path.unlink(missing_ok=True)
                return connect(str(catalog), lake.limits)
            if attempt == attempts - 1:
                raise
            time.sleep(0.25)
    raise AssertionError("unreachable")


def build_catalog(catalog: Path, lake: Lake, attempts: int = 20, ensured: bool = False) -> Path:
    """(Re)build the catalog file: views only, so it can be deleted and rebuilt at any time.

    Another process (a user's DuckDB shell) may hold the file; retry briefly, then give up
    with the lock error, since the lake itself is unaffected. ``ensured``: the caller has
    made the lake (``Lake.ensure``), which takes the lake's shared DuckDB, and would wait here
    while another thread creates views on it.
    """
    if not ensured:
        lake.ensure()
    catalog.parent.mkdir(parents=True, exist_ok=True)
    con = _open_writable(catalog, lake, attempts)
    try:
        lake.attach(con, read_only=True)
        # one transaction: a file's catalog written once, not once per view (half the time)
        con.execute("BEGIN")
        # what the views are built for, read once (each a catalog read), and stamped as such
        absent, current = lake.absent_tables(con), is_current(con)
        lake.create_views(con, materialised=current, absent=absent)
        root, digest = _stamp(lake, absent, current)
        # literals: a query parameter costs a process the import of pandas (tasks.lake.ducklake.attached)
        con.execute(f"CREATE OR REPLACE TABLE {_CATALOG_TABLE} AS "
                    f"SELECT {sql_literal(root)} AS lake, {sql_literal(digest)} AS sql_sha256")
        con.execute("COMMIT")
    finally:
        con.close()
    if not lake.is_url:  # an object-store lake's attach holds credentials: never in a file others may read
        attach_file(catalog).write_text(lake.attach_sql(read_only=True) + "\n", encoding="utf-8")
    return catalog


def attach_file(catalog: Path) -> Path:
    """The SQL file beside ``catalog`` that attaches its lake read-only, for a DuckDB shell of
    this installation (``.venv/bin/duckdb -readonly -cmd ".read warehouse/attach.sql" warehouse/invarbench.duckdb``):
    the extensions loaded by path from their wheels, then the ATTACH."""
    return catalog.with_name("attach.sql")


def _catalog_is_current(catalog: Path, lake: Lake, con: duckdb.DuckDBPyConnection | None) -> bool:
    own = contextlib.closing(connect(limits=lake.limits)) if con is None else contextlib.nullcontext(con)
    try:
        with own as checked:
            if con is None:
                lake.attach(checked, read_only=True)
            return _stored_stamp(checked, catalog) == _catalog_stamp(lake, checked)
    except duckdb.Error:  # unreadable here (see held_elsewhere), or built before the catalog recorded its lake
        return False


def _stored_stamp(con: duckdb.DuckDBPyConnection, catalog: Path) -> tuple[str, str] | None:
    """The stamp the catalog file holds, read through ``con`` with the file attached read-only
    for the read (another DuckDB of this process may hold it read-only meanwhile, not writable)."""
    con.execute(f"ATTACH {sql_literal(str(catalog))} AS {_FILE_ALIAS} (READ_ONLY)")
    try:
        return con.execute(f"SELECT lake, sql_sha256 FROM {_FILE_ALIAS}.{_CATALOG_TABLE}").fetchone()
    finally:
        con.execute(f"DETACH {_FILE_ALIAS}")


def ensure_catalog(catalog: Path, lake: Lake, con: duckdb.DuckDBPyConnection | None = None) -> None:
    """Rebuild the catalog when it is missing or was built for another lake (a copied or moved
    warehouse), another ``sql/``, other tables or the materialised tables' other currency.
    ``con``: a DuckDB where ``lake`` is attached to check it through (the end of a run: the one
    its refresh used, so that the check pays no connection, extensions and attach of its own);
    else one opened for the check."""
    if not (catalog.exists() and _catalog_is_current(catalog, lake, con)):
        build_catalog(catalog, lake, ensured=con is not None)  # a lake attached to con exists


def held_elsewhere(exc: duckdb.Error) -> bool:
    """Whether ``exc``, raised opening the catalog file, says it is open elsewhere: in another
    process (a user's DuckDB shell: its lock, an IOException) or in another DuckDB of this one
    (opened with other settings, or attached there for writing)."""
    return isinstance(exc, (duckdb.IOException, duckdb.ConnectionException)) or "Unique file handle conflict" in str(exc)


def open_catalog(catalog: Path, lake: Lake) -> duckdb.DuckDBPyConnection:
    """The catalog, read-only, with ``lake`` attached read-only and within its limits
    (:func:`ensure_catalog` first)."""
    ensure_catalog(catalog, lake)
    con = connect(str(catalog), lake.limits, read_only=True)
    lake.attach(con, read_only=True)
    return con
