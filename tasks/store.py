"""Parquet writes (append-only, atomic) and the DuckDB catalog of views over them.

Parquet under ``<lake>/<table>/day=YYYY-MM-DD/`` is the source of truth. A file is written under
a temporary name and renamed when complete, so a crash never leaves a half file and concurrent
writers never lock each other. DuckDB is the engine: the catalog file holds only views (from
``sql/*.sql``) and is rebuilt at will; pipeline reads use an in-memory DuckDB with the same views,
so a sweep never holds the catalog file open and ``invarbench sql`` works while it writes.
"""

from __future__ import annotations

import datetime as dt
import os
import time
import uuid
from pathlib import Path
from typing import Any, Iterable, Sequence

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from tasks.features import FEATURE_NAMES

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"

_str = pa.string()
_int = pa.int64()
_f = pa.float64()
_ts = pa.timestamp("us", tz="UTC")

SCHEMAS: dict[str, pa.Schema] = {
    "items": pa.schema(
        [
            ("item_id", _str), ("dataset_id", _str), ("suite", _str), ("task", _str),
            ("family_id", _str), ("variant", _str), ("prompt_style", _str), ("category", _str),
            ("key_entities", _int), ("bin", _str), ("bin_lo", _int), ("bin_hi", _int),
            ("prompt", _str), ("messages", _str), ("steps", _str), ("solver", _str),
            ("gold", _str), ("answer_type", _str), ("generator", _str), ("generator_version", _str),
            ("seed", _int), ("params", _str),
        ]
        + [(name, _f if name == "symbol_density" else _int) for name in FEATURE_NAMES]
        + [("created_at", _ts)]
    ),
    "runs": pa.schema(
        [
            ("run_id", _str), ("flow_run_id", _str), ("kind", _str), ("status", _str),
            ("started_at", _ts), ("updated_at", _ts), ("config", _str), ("models", _str),
            ("n_items", _int), ("n_requests", _int), ("n_sent", _int), ("n_cached", _int),
            ("n_errors", _int), ("report_path", _str), ("message", _str),
        ]
    ),
    "requests": pa.schema(
        [
            ("run_id", _str), ("request_id", _str), ("trial_id", _str), ("item_id", _str),
            ("model", _str), ("step", _str), ("step_index", _int), ("provider", _str),
            ("route_model", _str), ("api_base", _str), ("sampling", _str), ("sample_idx", _int),
            ("messages", _str), ("created_at", _ts),
        ]
    ),
    "responses": pa.schema(
        [
            ("response_id", _str), ("request_id", _str), ("run_id", _str), ("model", _str),
            ("status", _str), ("text", _str), ("error", _str), ("attempts", _int),
            ("latency_s", _f), ("prompt_tokens", _int), ("completion_tokens", _int),
            ("created_at", _ts), ("cost_usd", _f),
        ]
    ),
    # A sweep's lease on requests it is sending (tasks.claims); renewals append rows.
    "claims": pa.schema([
        ("request_id", _str), ("run_id", _str), ("claimed_at", _ts), ("expires_at", _ts),
    ]),
    # Provider batch jobs (tasks.batch_api): one row per state seen; the latest row is the job's state.
    "batch_jobs": pa.schema([
        ("batch_id", _str), ("run_id", _str), ("model", _str), ("api_base", _str),
        ("request_ids", pa.list_(_str)), ("input_file_id", _str), ("status", _str),
        ("output_file_id", _str), ("error_file_id", _str), ("message", _str), ("updated_at", _ts),
    ]),
    "parses": pa.schema(
        [
            ("response_id", _str), ("request_id", _str), ("answer_type", _str),
            ("parser_version", _str), ("status", _str), ("value", _str), ("extracted", _str),
            # the canonical answer (tasks.parse.answer_key) that Consistency@k compares; files
            # written before it existed lack the column, and sql/00_staging.sql reads them as NULL
            ("canonical", _str), ("created_at", _ts),
        ]
    ),
    "scores": pa.schema(
        [
            ("trial_id", _str), ("run_id", _str), ("item_id", _str), ("model", _str),
            ("sample_idx", _int), ("scorer_version", _str), ("status", _str),
            ("correct", pa.bool_()), ("lenient_correct", pa.bool_()), ("predicted", _str),
            ("response_ids", _str), ("created_at", _ts),
        ]
    ),
    # Statistics written back by tasks.stats; the sql/3x views expose them.
    "stats_bootstrap": pa.schema([
        ("computation_id", _str), ("computed_at", _ts), ("scope", _str), ("metric", _str),
        ("model", _str), ("suite", _str), ("task", _str), ("category", _str), ("prompt_style", _str),
        ("variant", _str), ("variant_b", _str), ("bin", _str), ("bin_lo", _int), ("k", _int),
        ("estimate", _f), ("estimate_a", _f), ("estimate_b", _f), ("ci_lo", _f), ("ci_hi", _f),
        ("level", _f), ("n_families", _int), ("n_units", _int), ("n_excluded", _int),
        ("n_scored", _int), ("n_correct", _int), ("n_wrong", _int), ("n_unparsable", _int),
        ("n_error", _int), ("resamples", _int), ("n_valid_resamples", _int), ("seed", _int),
    ]),
    "stats_regression": pa.schema([
        ("computation_id", _str), ("computed_at", _ts), ("scope", _str), ("suite", _str),
        ("model", _str), ("task", _str), ("fit", _str), ("formula", _str), ("reference_variant", _str),
        ("reference_model", _str), ("reference_task", _str), ("term", _str), ("coef", _f), ("std_err", _f), ("z", _f),
        ("p_value", _f), ("ci_lo", _f), ("ci_hi", _f), ("n", _int), ("n_correct", _int),
        ("n_unparsable", _int), ("n_error", _int), ("pseudo_r2", _f), ("dropped", _str),
        ("status", _str), ("reason", _str),
    ]),
}


def now_utc() -> dt.datetime:
    """The current time, timezone-aware UTC (every timestamp in the lake is UTC)."""
    return dt.datetime.now(dt.timezone.utc)


def _filesystem(lake: str) -> tuple[pafs.FileSystem, str]:
    if "://" in lake:
        return pafs.FileSystem.from_uri(lake)
    return pafs.LocalFileSystem(), str(Path(lake).resolve())


def ensure_lake(lake: str) -> None:
    """Create every table folder with an empty schema file, so views work before the first run."""
    fs, root = _filesystem(lake)
    for table, schema in SCHEMAS.items():
        folder = f"{root}/{table}/day=1970-01-01"
        target = f"{folder}/part-schema.parquet"
        if fs.get_file_info(target).type == pafs.FileType.NotFound:
            fs.create_dir(folder, recursive=True)
            _atomic_write(fs, target, schema.empty_table())


def _atomic_write(fs: pafs.FileSystem, target: str, table: pa.Table) -> None:
    if isinstance(fs, pafs.LocalFileSystem):
        # No .parquet suffix until complete: readers glob *.parquet and never see a half file.
        tmp = f"{os.path.dirname(target)}/.tmp-{uuid.uuid4().hex}"
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, target)
    else:
        # Object stores publish a PUT whole or not at all: no rename needed there.
        pq.write_table(table, target, filesystem=fs, compression="zstd")


def write_rows(lake: str, table: str, rows: Sequence[dict[str, Any]]) -> str | None:
    """Append ``rows`` to ``table`` as one new Parquet file; returns its path (None when no rows).

    Columns follow the table's schema exactly: a missing column is null, an unknown one an error.
    """
    if not rows:
        return None
    schema = SCHEMAS[table]
    extra = set(rows[0]) - set(schema.names)
    if extra:
        raise KeyError(f"{table}: unknown columns {sorted(extra)}")
    data = pa.Table.from_pylist([{n: r.get(n) for n in schema.names} for r in rows], schema=schema)
    fs, root = _filesystem(lake)
    stamp = now_utc()
    folder = f"{root}/{table}/day={stamp:%Y-%m-%d}"
    fs.create_dir(folder, recursive=True)
    target = f"{folder}/part-{stamp:%H%M%S%f}-{uuid.uuid4().hex[:12]}.parquet"
    _atomic_write(fs, target, data)
    return target


def _sql_files() -> list[Path]:
    return sorted(SQL_DIR.glob("*.sql"))


def _statements(lake: str) -> Iterable[str]:
    glob_root = lake.rstrip("/")
    for path in _sql_files():
        text = path.read_text(encoding="utf-8").replace("{{lake}}", glob_root)
        for stmt in text.split(";\n"):
            if stmt.strip() and not all(l.strip().startswith("--") or not l.strip() for l in stmt.splitlines()):
                yield stmt


def create_views(con: duckdb.DuckDBPyConnection, lake: str) -> None:
    """Create (or replace) every view of ``sql/`` on ``con``, reading the lake at ``lake``."""
    if "://" in lake:
        con.execute("INSTALL httpfs; LOAD httpfs;")
    for stmt in _statements(lake):
        con.execute(stmt)


def connect(lake: str) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with all views over the lake: for the pipeline's own reads."""
    ensure_lake(lake)
    con = duckdb.connect(":memory:")
    create_views(con, lake)
    return con


def build_catalog(catalog: Path, lake: str, attempts: int = 20) -> Path:
    """(Re)build the catalog file: views only, so it can be deleted and rebuilt at any time.

    Another process (a user's DuckDB shell) may hold the file; retry briefly, then give up
    with the lock error, since the lake itself is unaffected.
    """
    ensure_lake(lake)
    catalog.parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(attempts):
        try:
            con = duckdb.connect(str(catalog))
            break
        except duckdb.IOException:
            if attempt == attempts - 1:
                raise
            time.sleep(0.25)
    try:
        create_views(con, lake)
    finally:
        con.close()
    return catalog


def query(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """Run ``sql`` and return every row as a dict (fetches fully, so the connection is free again)."""
    cur = con.execute(sql, params or [])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def read(lake: str, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """One query over the lake's views, on a connection of its own that is closed afterwards."""
    con = connect(lake)
    try:
        return query(con, sql, params)
    finally:
        con.close()


def write_new_items(lake: str, rows: Sequence[dict[str, Any]]) -> int:
    """Append the item rows the lake does not hold yet (items are content-addressed); returns how many."""
    known = {r["item_id"] for r in read(
        lake, "SELECT DISTINCT item_id FROM raw_items WHERE item_id IN (SELECT unnest(?::VARCHAR[]))",
        [[r["item_id"] for r in rows]])}
    new = [r for r in rows if r["item_id"] not in known]
    write_rows(lake, "items", new)
    return len(new)
