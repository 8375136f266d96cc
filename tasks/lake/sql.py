"""The SQL of ``sql/``: the shared macros (``sql/macros``, grouped by topic) and one file per view
or table macro in the layers ``staging``, ``intermediate`` and ``marts``, named as what it defines,
whose ``-- depends_on:`` line names the relations it reads (as dbt's ``ref`` does). The files in
load order (:func:`sql_files`), built from those declarations, and a file's text for one lake
(:func:`_lake_sql`). A view whose file has a ``-- materialised: <key columns>`` line is stored as
the lake table of its name (tasks/lake/refresh.py keeps it up to date, a key at a time); when the
lake's copy is current its view reads that table, and the file's own query, the definition from the
raw lake, becomes the view ``<name>_from_raw`` (:func:`_lake_sql`).
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from tasks.errors import ConfigError
from tasks.lake.schemas import empty_table_sql

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"


# The layers of sql/, in load order: a file may read what its own or an earlier layer defines,
# and marts read no staging relation (tests/test_sql_files.py checks both).
SQL_LAYERS = ("macros", "staging", "intermediate", "marts")
_DEFINED = re.compile(r"CREATE\s+OR\s+REPLACE\s+(?:VIEW|MACRO)\s+(\w+)", re.IGNORECASE)
_DEPENDS_ON = re.compile(r"^--\s*depends_on:(.*)$", re.MULTILINE)
_MATERIALISED = re.compile(r"^--\s*materialised:(.*)$", re.MULTILINE)
# The name of a materialised view's definition from the raw lake: ``trial_scores_from_raw``.
FROM_RAW = "{}_from_raw"


def _without_literals(sql: str) -> str:
    return re.sub(r"--[^\n]*|'(?:[^']|'')*'", "", sql)


def sql_code(path: Path) -> str:
    """The SQL of ``path`` without its comments and string literals (table names such as
    ``'parses'``): the text in which the names a file defines are looked up."""
    return _without_literals(path.read_text(encoding="utf-8"))


def sql_defines(path: Path) -> set[str]:
    """The views and macros that the SQL file ``path`` creates."""
    return set(_DEFINED.findall(sql_code(path)))


@dataclass(frozen=True)
class _Statement:
    """One file of ``sql/``: run as one piece, after the files that define what it reads."""

    sql: str
    defines: frozenset[str]
    reads: frozenset[str]  # the relations its ``-- depends_on:`` line names (none for macros)
    path: Path
    key: tuple[str, ...] = ()  # a materialised view's key columns (its ``-- materialised:`` line)

    @property
    def name(self) -> str:
        """The file as ``layer/file.sql``."""
        return f"{self.path.parent.name}/{self.path.name}"


def _statement(path: Path) -> _Statement:
    text = path.read_text(encoding="utf-8")
    defines = frozenset(sql_defines(path))
    stmt = _Statement(text, defines, frozenset(), path)
    if path.parent.name == "macros":  # macros read no relation, and every view may call them
        return stmt
    if defines != {path.stem}:
        raise ConfigError(f"{stmt.name} defines {', '.join(sorted(defines)) or 'nothing'}: a file of "
                          f"sql/{path.parent.name}/ defines one view or table macro, named as the file")
    declared = _DEPENDS_ON.findall(text)
    if len(declared) != 1:
        raise ConfigError(f"{stmt.name}: needs one '-- depends_on: a, b' line naming the relations it reads")
    reads = frozenset(name.strip() for name in declared[0].split(",") if name.strip())
    key = tuple(name.strip() for line in _MATERIALISED.findall(text) for name in line.split(",") if name.strip())
    return _Statement(text, defines, reads, path, key)


def _load_order(statements: list[_Statement]) -> list[_Statement]:
    # DuckDB binds a view when it is created, so a file loads after every file it declares;
    # otherwise files keep their layer and name order.
    defined = {name for stmt in statements for name in stmt.defines}
    for stmt in statements:
        if unknown := sorted(stmt.reads - defined):
            raise ConfigError(f"{stmt.name} depends on {', '.join(unknown)}, which no file of sql/ defines")
    ordered: list[_Statement] = []
    loaded: set[str] = set()
    pending = list(statements)
    while pending:
        ready = next((stmt for stmt in pending if stmt.reads <= loaded), None)
        if ready is None:
            raise ConfigError(f"sql/: circular dependency between {', '.join(_on_cycles(pending))}")
        ordered.append(ready)
        loaded |= ready.defines
        pending.remove(ready)
    return ordered


def _on_cycles(pending: list[_Statement]) -> list[str]:
    """The files of ``pending`` (none loadable) left once those no other pending file reads, which
    are only downstream of a cycle, are dropped again and again: the files on the cycles."""
    left = list(pending)
    while True:
        read = set().union(*(stmt.reads for stmt in left))
        kept = [stmt for stmt in left if stmt.defines & read]
        if len(kept) == len(left):
            return sorted(stmt.name for stmt in left)
        left = kept


@functools.cache
def _sql_statements() -> tuple[_Statement, ...]:
    # Read once per process: sql/ is code, as the modules are.
    paths = [path for layer in SQL_LAYERS for path in sorted((SQL_DIR / layer).glob("*.sql"))]
    return tuple(_load_order([_statement(path) for path in paths]))


def sql_files() -> list[Path]:
    """Every file of ``sql/`` in load order: macros first, then each file after those it declares."""
    return [stmt.path for stmt in _sql_statements()]


def _needed(statements: Sequence[_Statement], sql: str | None) -> list[int]:
    """Indices (in load order) of the statements the names in ``sql`` need, with every macro
    (creating one binds nothing); every statement for None."""
    if sql is None:
        return list(range(len(statements)))
    index = {name: i for i, stmt in enumerate(statements) for name in stmt.defines}
    needed = {i for i, stmt in enumerate(statements) if stmt.path.parent.name == "macros"}
    todo = [index[word] for word in set(re.findall(r"\w+", sql)) if word in index]
    while todo:
        i = todo.pop()
        if i not in needed:
            needed.add(i)
            todo.extend(index[name] for name in statements[i].reads)
    return sorted(needed)


def materialised_statements() -> list[_Statement]:
    """The materialised views (a ``-- materialised:`` line in their file), in load order."""
    return [stmt for stmt in _sql_statements() if stmt.key]


@functools.cache
def sql_digest() -> str:
    """A digest of every file of ``sql/``, names included (moving a file between layers changes the
    load order): what the catalog's views and the lake's materialised tables were built from."""
    digest = hashlib.sha256()
    for path in sql_files():
        digest.update(path.relative_to(SQL_DIR).as_posix().encode("utf-8") + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _lake_sql(stmt: _Statement, absent: frozenset[str] = frozenset(), materialised: bool = False) -> str:
    """The file's SQL, with each lake table in ``absent`` (a read-only lake that lacks it) read as no
    rows. ``materialised``: a materialised view reads its lake table, and the file's query is the
    view ``<name>_from_raw``."""
    sql = stmt.sql
    for table in absent:
        sql = sql.replace(f"lake_table('{table}')", empty_table_sql(table))
    if materialised and stmt.key:
        (name,) = stmt.defines
        from_raw = re.sub(rf"(CREATE\s+OR\s+REPLACE\s+VIEW\s+){name}\b", rf"\g<1>{FROM_RAW.format(name)}", sql,
                          count=1, flags=re.IGNORECASE)
        return f"{from_raw}\nCREATE OR REPLACE VIEW {name} AS SELECT * FROM lake_table('{name}');"
    return sql
