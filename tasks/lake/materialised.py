"""Whether the lake's materialised views are current (:func:`is_current`): the views of ``sql/``
whose file has a ``-- materialised:`` line are stored as lake tables of their names, brought up to
date by ``tasks.lake.refresh``, which records in the lake table :data:`MARK_TABLE` the snapshot it
brought them up to and a digest of the SQL it built them with (the mark).

They are current when that mark is the last snapshot that changed a lake table they read (their
sources, :func:`source_tables`) and their SQL is the same (:func:`definition_digest`): only then do the views read them, so a
query answers exactly as from the raw lake, however long ago the last refresh was.
"""

from __future__ import annotations

import functools
import hashlib
import re

import duckdb

from tasks.lake.ducklake import ALIAS, attached, lake_tables
from tasks.lake.engine import sql_literal
from tasks.lake.sql import SQL_DIR, _sql_statements, materialised_statements

# One row per refresh: the snapshot whose changes it took in, the digest of its SQL, whether it rebuilt all.
MARK_TABLE = "refreshes"
MARK_COLUMNS = "snapshot_id BIGINT, sql_sha256 VARCHAR, full_rebuild BOOLEAN, n_keys BIGINT, refreshed_at TIMESTAMPTZ"

_LAKE_TABLE = re.compile(r"lake_table\('(\w+)'\)")
# The kinds of change of a snapshot (ducklake_snapshots' changes) that change a table's rows.
_ROW_CHANGES = re.compile(r"insert|delet|creat|drop|alter")


def materialised_names() -> list[str]:
    """The materialised views, in load order."""
    return [next(iter(stmt.defines)) for stmt in materialised_statements()]


@functools.cache
def _definition() -> tuple[frozenset[str], str]:
    """The lake tables the materialised views read, through every view they depend on, and a digest
    of the SQL of those views and of every macro: what their tables were built with (a change
    elsewhere in sql/, a mart, leaves them current)."""
    statements = {name: stmt for stmt in _sql_statements() for name in stmt.defines}
    todo = list(materialised_statements())
    seen = {stmt.path: stmt for stmt in _sql_statements() if stmt.path.parent.name == "macros"}
    while todo:
        stmt = todo.pop()
        if stmt.path not in seen:
            seen[stmt.path] = stmt
            todo.extend(statements[name] for name in stmt.reads)
    digest = hashlib.sha256()
    for path in sorted(seen):
        digest.update(path.relative_to(SQL_DIR).as_posix().encode("utf-8") + b"\0" + seen[path].sql.encode("utf-8"))
    return frozenset(t for stmt in seen.values() for t in _LAKE_TABLE.findall(stmt.sql)), digest.hexdigest()


def source_tables() -> frozenset[str]:
    """The lake tables the materialised views read, through every view they depend on."""
    return _definition()[0]


def definition_digest() -> str:
    """A digest of the SQL the materialised views are computed with (their files, those they
    depend on, the macros): a refresh records it, and tables built with another are not current."""
    return _definition()[1]


def mark(con: duckdb.DuckDBPyConnection) -> tuple[int, str] | None:
    """The snapshot the last refresh took in and the digest of its SQL, on ``con`` where the lake
    is attached; None when never refreshed (or a materialised table is missing)."""
    if not attached(con) or not {MARK_TABLE, *materialised_names()} <= set(lake_tables(con)):
        return None
    row = con.execute(f"SELECT snapshot_id, sql_sha256 FROM {ALIAS}.main.{MARK_TABLE} "
                      "ORDER BY snapshot_id DESC LIMIT 1").fetchone()
    return (int(row[0]), row[1]) if row else None


def changed_tables(con: duckdb.DuckDBPyConnection, snapshot: int) -> frozenset[str]:
    """The source tables whose rows a snapshot after ``snapshot``, up to the one the lake is read
    at, changed (catalog reads only)."""
    return frozenset().union(*(names for _, names in _changes_since(con, snapshot, source_tables())))


def whole_at(con: duckdb.DuckDBPyConnection, snapshot: int) -> bool:
    """Whether the materialised tables hold, for every key, what their views gave at ``snapshot``,
    the mark (catalog reads only): the refresh that recorded it read no source changed after it
    (none changed before its last commit, that of the mark; each table is a transaction of its
    own, which reads the snapshot of its start), and no refresh wrote to them since (an
    interrupted one leaves some tables ahead of the mark)."""
    views = frozenset({MARK_TABLE, *materialised_names()})
    changes = _changes_since(con, snapshot, source_tables() | views)
    marked = [i for i, (_, names) in enumerate(changes) if MARK_TABLE in names]
    return bool(marked) and not any(names & source_tables() for _, names in changes[:marked[-1]]) \
        and not any(names & views for _, names in changes[marked[-1] + 1:])


def _changes_since(con: duckdb.DuckDBPyConnection, snapshot: int,
                   tables: frozenset[str]) -> list[tuple[int, frozenset[str]]]:
    """Each snapshot after ``snapshot``, up to the one the lake is read at, with which of the lake
    ``tables`` it changed the rows of (each snapshot's list of changes names a table by id, or as
    ``main.<name>`` when it created it)."""
    # literals, not parameters: binding one costs a process the import of pandas (ducklake.attached)
    listed = ", ".join(sql_literal(table) for table in sorted(tables))
    names = {str(r[0]): r[1] for r in con.execute(f"SELECT table_id, table_name FROM ducklake_table_info('{ALIAS}') "
                                                  f"WHERE table_name IN ({listed})").fetchall()}
    names |= {f"main.{table}": table for table in tables}
    rows = con.execute(f"SELECT snapshot_id, changes FROM ducklake_snapshots('{ALIAS}') WHERE snapshot_id > {int(snapshot)} "
                       f"AND snapshot_id <= (SELECT id FROM ducklake_current_snapshot('{ALIAS}')) "
                       "ORDER BY snapshot_id").fetchall()
    return [(snapshot_id, frozenset(names[table] for kind, tables in changes.items() if _ROW_CHANGES.search(kind)
                                    for table in tables if table in names)) for snapshot_id, changes in rows]


def is_current(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the materialised tables of the lake attached to ``con`` hold exactly what their
    views compute from the raw lake: refreshed with the same definitions, no source changed since."""
    found = mark(con)
    return found is not None and found[1] == definition_digest() and not changed_tables(con, found[0])
