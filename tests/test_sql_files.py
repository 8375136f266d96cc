"""The files of sql/: one view or table macro per file, named as it; each file's `-- depends_on:`
line names exactly the relations its SQL reads (found by DuckDB's own parser, not by a pattern);
the layers read only downwards, marts no staging; and the load order is built from the
declarations, failing clearly on a cycle, an unknown name or a misnamed file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest

from tasks.errors import ConfigError
from tasks.lake.sql import SQL_LAYERS, _load_order, _sql_statements, _statement

# The query after `CREATE OR REPLACE VIEW v AS` or `CREATE OR REPLACE MACRO m(...) AS TABLE`.
_BODY = re.compile(r"CREATE\s+OR\s+REPLACE\s+(?:VIEW\s+\w+|MACRO\s+\w+\s*\(.*?\)\s+AS\s+TABLE)\s+(?:AS\s)?",
                   re.IGNORECASE | re.DOTALL)


def _walk(node, tables: set[str], ctes: set[str]) -> None:
    if isinstance(node, dict):
        if node.get("type") == "BASE_TABLE":
            tables.add(node["table_name"])
        elif node.get("type") == "TABLE_FUNCTION":  # a table macro, e.g. family_units_over(...)
            tables.add(node["function"]["function_name"])
        if "cte_map" in node:
            ctes.update(entry["key"] for entry in node["cte_map"]["map"])
        node = list(node.values())
    if isinstance(node, list):
        for child in node:
            _walk(child, tables, ctes)


def relations_read(sql: str) -> set[str]:
    """The tables, views and table functions the query of a CREATE VIEW / table MACRO statement
    reads, from DuckDB's parse tree (json_serialize_sql: parsed, not bound), without its CTEs."""
    [body] = [sql[m.end():] for m in _BODY.finditer(sql)]
    con = duckdb.connect()
    try:
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [body.rstrip().rstrip(";")]).fetchone()[0])
    finally:
        con.close()
    assert not tree["error"], tree
    tables: set[str] = set()
    ctes: set[str] = set()
    _walk(tree, tables, ctes)
    return tables - ctes


def test_relations_read_sees_joins_subqueries_and_table_macros_but_not_ctes():
    sql = """CREATE OR REPLACE VIEW v AS
    WITH c AS (SELECT * FROM a JOIN b ON a.x = b.x) SELECT * FROM c
    JOIN fam(variant_list := ['x']) f ON true WHERE NOT EXISTS (SELECT 1 FROM d WHERE d.y = 1);"""
    assert relations_read(sql) == {"a", "b", "d", "fam"}


def test_each_file_declares_exactly_the_relations_it_reads():
    statements = [s for s in _sql_statements() if s.path.parent.name != "macros"]
    assert len(statements) >= 60
    relations = {name for s in statements for name in s.defines}
    helpers = {name for s in _sql_statements() if s.path.parent.name == "macros" for name in s.defines}
    for stmt in statements:
        read = relations_read(stmt.sql)
        # Everything else a query reads is a shared table macro (lake_table) or DuckDB's own
        # (query_table: a table macro reading a relation its caller names, as ledger_of).
        assert read - relations <= helpers | {"read_parquet", "parquet_kv_metadata", "query_table"}, stmt.name
        assert stmt.reads == read & relations, f"{stmt.name}: declares {sorted(stmt.reads)}, reads {sorted(read & relations)}"


def test_layers_read_downwards_and_marts_read_no_staging():
    statements = _sql_statements()
    layer_of = {name: SQL_LAYERS.index(s.path.parent.name) for s in statements for name in s.defines}
    for stmt in statements:
        layer = SQL_LAYERS.index(stmt.path.parent.name)
        for name in stmt.reads:
            assert layer_of[name] <= layer, f"{stmt.name} reads {name} of a later layer"
            if stmt.path.parent.name == "marts":
                assert SQL_LAYERS[layer_of[name]] in ("intermediate", "marts"), f"{stmt.name} reads {name}"


def _files(tmp_path: Path, files: dict[str, str]) -> list:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return [_statement(tmp_path / name) for name in sorted(files)]


def test_the_load_order_follows_the_declarations(tmp_path):
    statements = _files(tmp_path, {
        "staging/a.sql": "-- depends_on: b\nCREATE OR REPLACE VIEW a AS SELECT * FROM b;\n",
        "staging/b.sql": "-- depends_on:\nCREATE OR REPLACE VIEW b AS SELECT 1 AS x;\n",
        "marts/c.sql": "-- depends_on: a, b\nCREATE OR REPLACE VIEW c AS SELECT * FROM a, b;\n"})
    assert [s.name for s in _load_order(statements)] == ["staging/b.sql", "staging/a.sql", "marts/c.sql"]


@pytest.mark.parametrize("files, message", [
    ({"staging/a.sql": "-- depends_on: b\nCREATE OR REPLACE VIEW a AS SELECT * FROM b;\n",
      "staging/b.sql": "-- depends_on: a\nCREATE OR REPLACE VIEW b AS SELECT * FROM a;\n",
      "staging/c.sql": "-- depends_on: a\nCREATE OR REPLACE VIEW c AS SELECT * FROM a;\n"},
     "sql/: circular dependency between staging/a.sql, staging/b.sql"),
    ({"staging/a.sql": "-- depends_on: nowhere\nCREATE OR REPLACE VIEW a AS SELECT * FROM nowhere;\n"},
     "staging/a.sql depends on nowhere, which no file of sql/ defines"),
])
def test_a_cycle_or_an_unknown_name_fails_naming_the_files(tmp_path, files, message):
    with pytest.raises(ConfigError) as failed:
        _load_order(_files(tmp_path, files))
    assert str(failed.value) == message


@pytest.mark.parametrize("text, message", [
    ("-- depends_on:\nCREATE OR REPLACE VIEW b AS SELECT 1;\n", "staging/a.sql defines b: a file of sql/staging/"),
    ("CREATE OR REPLACE VIEW a AS SELECT 1;\n", "staging/a.sql: needs one '-- depends_on: a, b' line"),
])
def test_a_file_defines_its_own_name_and_declares_what_it_reads(tmp_path, text, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        _files(tmp_path, {"staging/a.sql": text})
