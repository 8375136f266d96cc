"""The SQL of ``sql/``: its layers and files in load order, each statement with the names it
defines and reads, and a statement's text for one lake (:func:`_lake_sql`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from tasks.config import ConfigError
from tasks.lake.filesystem import lake_root
from tasks.lake.tables import _empty_table_sql

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"


# The layers of sql/, in load order: a file may use what earlier layers define, never later ones
# (tests/test_metric_views.py checks it).
SQL_LAYERS = ("macros", "staging", "intermediate", "marts")
_DEFINED = re.compile(r"CREATE\s+OR\s+REPLACE\s+(?:VIEW|MACRO)\s+(\w+)", re.IGNORECASE)


def _without_literals(sql: str) -> str:
    return re.sub(r"--[^\n]*|'(?:[^']|'')*'", "", sql)


def sql_code(path: Path) -> str:
    """The SQL of ``path`` without its comments and string literals (lake paths such as
    ``'{{lake}}/parses/…'``): the text in which the names a file uses are looked up."""
    return _without_literals(path.read_text(encoding="utf-8"))


def sql_defines(path: Path) -> set[str]:
    """The views and macros that the SQL file ``path`` creates."""
    return set(_DEFINED.findall(sql_code(path)))


def _uses(code: str, names: set[str]) -> bool:
    return any(re.search(rf"\b{name}\b", code) for name in names)


def _dependency_order(paths: list[Path]) -> list[Path]:
    # DuckDB binds a view when it is created, so within a layer a file must come after the files
    # whose views it reads; otherwise files keep their name order.
    code = {p: sql_code(p) for p in paths}
    needs = {p: {q for q in paths if q != p and _uses(code[p], sql_defines(q))} for p in paths}
    ordered: list[Path] = []
    while len(ordered) < len(paths):
        ready = [p for p in paths if p not in ordered and needs[p] <= set(ordered)]
        if not ready:
            cycle = sorted(str(p.relative_to(SQL_DIR)) for p in paths if p not in ordered)
            raise ConfigError(f"sql/: circular dependency between {', '.join(cycle)}")
        ordered.append(ready[0])
    return ordered


def sql_files() -> list[Path]:
    """Every file of ``sql/`` in load order: layer by layer, each layer in dependency order."""
    return [path for layer in SQL_LAYERS for path in _dependency_order(sorted((SQL_DIR / layer).glob("*.sql")))]


@dataclass(frozen=True)
class _Statement:
    sql: str  # with the ``{{lake}}`` placeholder
    defines: frozenset[str]
    reads: frozenset[str]  # names other statements define, as this one's code names them


@functools.cache
def _sql_statements() -> tuple[_Statement, ...]:
    # Each statement with what it defines and which other statements' names it reads: a view is
    # bound when created, so a view's sources must exist first, and a query needs no more than
    # the closure of the names it reads. Read once per process: sql/ is code, as the modules are.
    texts = []
    for path in sql_files():
        for stmt in path.read_text(encoding="utf-8").split(";\n"):
            if stmt.strip() and not all(l.strip().startswith("--") or not l.strip() for l in stmt.splitlines()):
                texts.append(stmt)
    code = [_without_literals(t) for t in texts]
    defines = [frozenset(_DEFINED.findall(c)) for c in code]
    names = set().union(*defines)
    words = [set(re.findall(r"\w+", c)) for c in code]
    return tuple(_Statement(t, d, frozenset((w & names) - d)) for t, d, w in zip(texts, defines, words))


def _needed(statements: Sequence[_Statement], sql: str | None) -> list[int]:
    """Indices (in load order) of the statements the names in ``sql`` need; every one for None."""
    if sql is None:
        return list(range(len(statements)))
    wanted = set(re.findall(r"\w+", sql))
    needed: set[int] = set()
    for i in reversed(range(len(statements))):  # a statement reads only statements before it
        if statements[i].defines & wanted:
            needed.add(i)
            wanted |= statements[i].reads
    return sorted(needed)


def _lake_sql(stmt: _Statement, lake: str, absent: frozenset[str] = frozenset()) -> str:
    # A quote in a folder name must not end the SQL string literal.
    sql = stmt.sql.replace("{{lake}}", lake_root(lake).replace("'", "''"))
    for table in absent:  # no file to read (see read_only)
        sql = sql.replace(f"lake_table('{table}')", _empty_table_sql(table))
    return sql
