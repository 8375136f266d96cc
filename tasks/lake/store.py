"""Parquet writes (append-only, atomic) and the DuckDB catalog of views over them.

Parquet under ``<lake>/<table>/day=YYYY-MM-DD/`` is the source of truth. The lake is a local
folder or an object-store URL (``s3://bucket/prefix``); one filesystem layer, pyarrow's, serves
both: it writes the Parquet files, and DuckDB reads the lake through the same filesystem
registered with each connection, so an object-store lake needs no DuckDB extension and no
download. A file becomes visible only when complete (a local temporary name renamed; an object
upload that is published only when it completes), so a crash never leaves a half file and
concurrent writers never lock or overwrite each other. DuckDB is the engine: the catalog file
holds only views (from ``sql/``) and the lake they read, and is rebuilt at will; pipeline reads
use an in-memory DuckDB with the same views, so a sweep never holds the catalog file open and
``invarbench sql`` works while it writes.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from fsspec.implementations.arrow import ArrowFSWrapper
from fsspec.implementations.memory import MemoryFile

from tasks.config import ConfigError, LakeError
from tasks.items.features import FEATURE_NAMES
from tasks.records import now_utc

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"

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
            ("n_errors", _int), ("report_path", _str), ("message", _str), ("host", _str), ("pid", _int),
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
            # "length" marks a response cut at the token limit; files written before it existed lack it
            ("finish_reason", _str),
        ]
    ),
    # A sweep's lease on requests it is sending (tasks.models.claims); renewals append rows.
    "claims": pa.schema([
        ("request_id", _str), ("run_id", _str), ("claimed_at", _ts), ("expires_at", _ts),
    ]),
    # Provider batch jobs (tasks.models.batch_jobs): one row per state seen; the latest row is the job's state.
    "batch_jobs": pa.schema([
        ("batch_id", _str), ("run_id", _str), ("model", _str), ("api_base", _str),
        ("request_ids", pa.list_(_str)), ("input_file_id", _str), ("status", _str),
        ("output_file_id", _str), ("error_file_id", _str), ("message", _str), ("updated_at", _ts),
    ]),
    "parses": pa.schema(
        [
            ("response_id", _str), ("request_id", _str), ("answer_type", _str),
            ("parser_version", _str), ("status", _str), ("value", _str), ("extracted", _str),
            # the canonical answer (tasks.scoring.parse.answer_key) that Consistency@k compares; files
            # written before it existed lack the column, and sql/staging/parses.sql reads them as NULL
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
    # Which items a dataset holds (sql/staging/dataset_items.sql): an item, stored once by content,
    # may belong to several datasets (the same families imported twice, with more prompt styles).
    "dataset_items": pa.schema([("dataset_id", _str), ("item_id", _str), ("created_at", _ts)]),
    # Statistics computed in Python by tasks.analysis.stats; sql/staging/computed.sql exposes them.
    "computed_bootstrap": pa.schema([
        ("computation_id", _str), ("computed_at", _ts), ("scope", _str), ("metric", _str),
        ("model", _str), ("suite", _str), ("task", _str), ("category", _str), ("prompt_style", _str),
        ("variant", _str), ("variant_b", _str), ("bin", _str), ("bin_lo", _int), ("k", _int),
        ("estimate", _f), ("estimate_a", _f), ("estimate_b", _f), ("ci_lo", _f), ("ci_hi", _f),
        ("level", _f), ("n_families", _int), ("n_units", _int), ("n_excluded", _int),
        ("n_scored", _int), ("n_correct", _int), ("n_wrong", _int), ("n_unparsable", _int),
        ("n_error", _int), ("resamples", _int), ("n_valid_resamples", _int), ("seed", _int),
        # what the computation read (tasks.analysis.stats.inputs_digest): a report reuses it while unchanged
        ("inputs_sha256", _str),
    ]),
    "computed_regression": pa.schema([
        ("computation_id", _str), ("computed_at", _ts), ("scope", _str), ("suite", _str),
        ("model", _str), ("task", _str), ("fit", _str), ("formula", _str), ("reference_variant", _str),
        ("reference_model", _str), ("reference_task", _str), ("term", _str), ("coef", _f), ("std_err", _f), ("z", _f),
        ("p_value", _f), ("ci_lo", _f), ("ci_hi", _f), ("n", _int), ("n_correct", _int),
        ("n_unparsable", _int), ("n_error", _int), ("pseudo_r2", _f), ("dropped", _str),
        ("status", _str), ("reason", _str),
    ]),
}


# Compaction (tasks.lake.compact) merges small files into merged files whose Parquet metadata, under
# REPLACES_KEY, names the files they replace (sql/macros/lake_files.sql leaves those out).
MERGED_PREFIX = "merged-"
REPLACES_KEY = b"invarbench.replaces"
# Every table folder holds an empty merged file of the table's schema, replacing nothing.
SCHEMA_FILE = f"{MERGED_PREFIX}schema.parquet"


def is_url(lake: str) -> bool:
    """Whether the lake is an object-store URL (``s3://…``) rather than a local folder."""
    return "://" in lake


def lake_root(lake: str) -> str:
    """Where the views read the lake: an absolute local path, or the URL without its options.

    A URL lake may carry pyarrow filesystem options as a query string
    (``s3://bucket/lake?endpoint_override=…``, see ``Config.lake_path``); they configure the
    filesystem and are no part of the file paths.
    """
    if not is_url(lake):
        return str(Path(lake).expanduser().resolve())
    return lake.split("?", 1)[0].rstrip("/")


def lake_filesystem(lake: str) -> tuple[pafs.FileSystem, str]:
    """The lake's pyarrow filesystem and its root path in it (raises LakeError for a bad URL)."""
    if not is_url(lake):
        return pafs.LocalFileSystem(), lake_root(lake)
    uri = lake
    if lake.startswith("s3://") and "allow_delayed_open" not in lake:
        # Delayed open: a body smaller than one part (most lake files) is one PutObject instead
        # of a three-request multipart upload.
        uri += ("&" if "?" in lake else "?") + "allow_delayed_open=true"
    try:
        fs, root = pafs.FileSystem.from_uri(uri)
    except (OSError, ValueError) as exc:
        raise LakeError(f"warehouse.lake {lake_root(lake)}: {exc}") from None
    return fs, root.rstrip("/")


# Per connection: lake files up to _BLOB_MAX bytes are kept in memory once read, up to _BLOBS_MAX in all.
_BLOB_MAX = 8 << 20
_BLOBS_MAX = 256 << 20


class _LakeFS(ArrowFSWrapper):
    """The lake's pyarrow filesystem as fsspec sees it, under the lake URL's scheme, for DuckDB.

    One per connection, and a snapshot: each table folder is listed once, in one recursive
    listing, on first use. DuckDB binds every view when it is created, and a view over a view
    binds its sources again, so without this the catalog's views would list and stat the same
    keys hundreds of times. Lake files are immutable (a new key per write), so a listing can only
    miss files written after it; a connection is opened per query or per stage for that reason.
    """

    cachable = False  # never share one across connections (fsspec caches instances by arguments)

    def __init__(self, fs: pafs.FileSystem, scheme: str):
        super().__init__(fs)
        self._scheme = scheme
        self._listings: dict[str, dict[str, dict[str, Any]]] = {}
        self._blobs: dict[str, bytes] = {}
        self._blob_bytes = 0

    @property
    def protocol(self):  # ArrowFSWrapper names the filesystem type ("s3"); DuckDB routes by URL scheme
        return (self._scheme,)

    def _listing(self, path: str) -> dict[str, dict[str, Any]]:
        path = self._strip_protocol(path).rstrip("/")
        if path not in self._listings:
            infos = self.fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
            self._listings[path] = {i.path: self._make_entry(i) for i in infos}
        return self._listings[path]

    def find(self, path, maxdepth=None, withdirs=False, detail=False, **kwargs):
        """Every entry under ``path`` from one cached recursive listing (fsspec's glob calls this)."""
        root = self._strip_protocol(path).rstrip("/")
        entries = {name: entry for name, entry in self._listing(root).items()
                   if (withdirs or entry["type"] != "directory")
                   and (maxdepth is None or name[len(root) + 1:].count("/") < maxdepth)}
        return entries if detail else sorted(entries)

    def info(self, path, **kwargs):
        """A listed entry when some listing holds it, else one request."""
        name = self._strip_protocol(path).rstrip("/")
        for root, entries in self._listings.items():
            if name.startswith(root + "/") and name in entries:
                return entries[name]
        return super().info(path, **kwargs)

    def modified(self, path):
        """The listed modification time (ArrowFSWrapper would ask the store again)."""
        return self.info(path)["mtime"]

    def _open(self, path, mode="rb", block_size=None, seekable=True, **kwargs):
        try:
            return self._open_listed(path, mode, block_size, seekable, **kwargs)
        except OSError:
            # A listed file that is gone was deleted by a compaction after the listing: list again
            # when the query is retried (see query()).
            self._listings.clear()
            raise

    def _open_listed(self, path, mode, block_size, seekable, **kwargs):
        entry = self.info(path) if mode == "rb" else None
        if entry is None or entry["size"] is None or entry["size"] > _BLOB_MAX \
                or self._blob_bytes + entry["size"] > _BLOBS_MAX:
            return super()._open(path, mode, block_size, seekable, **kwargs)
        name = self._strip_protocol(path)
        if name not in self._blobs:
            # Binding the views reads each file's footer once per view that depends on it: keep
            # small files whole, fetched once, for the connection's life (files never change).
            with self.fs.open_input_stream(name) as stream:
                self._blobs[name] = stream.read()
            self._blob_bytes += len(self._blobs[name])
        return MemoryFile(self, path, self._blobs[name])


def register_lake(con: duckdb.DuckDBPyConnection, lake: str) -> None:
    """Let ``con`` read an object-store lake through the lake's own filesystem (nothing for a local one).

    DuckDB then reads ``s3://…`` with the credentials and endpoint pyarrow resolved, and never
    needs its ``httpfs`` extension (which it would otherwise try to download).
    """
    if is_url(lake):
        fs, _ = lake_filesystem(lake)
        con.register_filesystem(_LakeFS(fs, lake.split("://", 1)[0]))


def unusable_lake(lake: str, exc: Exception) -> LakeError:
    """The configuration error for a lake that cannot be read or written, with what to check."""
    hint = ("check the credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE or ~/.aws), "
            "warehouse.endpoint_url and that the bucket exists") if is_url(lake) else "check warehouse.path / warehouse.lake"
    # pyarrow's messages name the operation, bucket and key, never the credentials.
    return LakeError(f"cannot use the lake {lake_root(lake)}: {exc}; {hint}")


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


@contextlib.contextmanager
def atomic_writer(fs: pafs.FileSystem, target: str, schema: pa.Schema) -> Iterator[pq.ParquetWriter]:
    """A Parquet writer of ``schema`` for the file ``target``, which readers see only once the
    block ends: complete, or (when the block raises) not at all."""
    if isinstance(fs, pafs.LocalFileSystem):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        # No .parquet suffix until complete: readers glob *.parquet and never see a half file.
        tmp = f"{os.path.dirname(target)}/.tmp-{uuid.uuid4().hex}"
        try:
            with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
                yield writer
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise
    else:
        # Object stores have no rename and need none: an object appears under its key only when
        # its upload completes (one PUT, or a multipart upload's final request), so a writer
        # killed mid-upload leaves no object. The body is encoded in memory first so that the
        # upload starts only once the file is whole. No folders: keys need no parents.
        body = pa.BufferOutputStream()
        with pq.ParquetWriter(body, schema, compression="zstd") as writer:
            yield writer
        with fs.open_output_stream(target) as out:
            out.write(body.getvalue())


def atomic_write(fs: pafs.FileSystem, target: str, table: pa.Table) -> None:
    """Write ``table`` as the Parquet file ``target``, visible to readers only once complete."""
    with atomic_writer(fs, target, table.schema) as writer:
        writer.write_table(table)


# The files this process has written, per lake, until a compaction takes them (tasks.lake.compact).
_WRITTEN: dict[str, list[str]] = {}
_WRITTEN_LOCK = threading.Lock()


def take_written(lake: str) -> list[str]:
    """The paths of the files this process wrote to ``lake`` since the last call; each path is
    handed out once, so two compactions in one process never merge the same file."""
    with _WRITTEN_LOCK:
        return _WRITTEN.pop(lake, [])


def conform(table: str, data: pa.Table) -> pa.Table:
    """``data`` with exactly the columns of lake table ``table``, in its order and types: a missing
    column is nulls (rows written before it existed), an unknown one a KeyError."""
    schema = SCHEMAS[table]
    extra = set(data.column_names) - set(schema.names)
    if extra:
        raise KeyError(f"{table}: unknown columns {sorted(extra)}")
    return pa.table([data[f.name].cast(f.type) if f.name in data.column_names else pa.nulls(data.num_rows, f.type)
                     for f in schema], schema=schema)


def write_table(lake: str, table: str, data: pa.Table) -> str | None:
    """Append an Arrow table to ``table`` as one new Parquet file, as :func:`write_rows` does with
    dicts (same column rule); returns its path (None when no rows). Every lake write ends here.

    For large derived writes: a rescore of a million responses spent most of its time building
    a dict per row and converting the dicts to Arrow.
    """
    if not data.num_rows:
        return None
    if _READ_ONLY.get():
        raise RuntimeError(f"a read-only command tried to write to the lake table {table}")
    data = conform(table, data)
    fs, root = lake_filesystem(lake)
    stamp = now_utc()
    target = f"{root}/{table}/day={stamp:%Y-%m-%d}/part-{stamp:%H%M%S%f}-{uuid.uuid4().hex}.parquet"
    atomic_write(fs, target, data)
    with _WRITTEN_LOCK:
        _WRITTEN.setdefault(lake, []).append(target)
    return target


def write_rows(lake: str, table: str, rows: Sequence[dict[str, Any]]) -> str | None:
    """Append ``rows`` to ``table`` as one new Parquet file; returns its path (None when no rows).

    Columns follow the table's schema exactly: a missing column is null, an unknown one an error.
    Each file has a key of its own (time and a random id), so writers never overwrite each other.
    """
    if not rows:
        return None
    schema = SCHEMAS[table]
    extra = set(rows[0]) - set(schema.names)
    if extra:
        raise KeyError(f"{table}: unknown columns {sorted(extra)}")
    return write_table(lake, table, pa.Table.from_pylist([{n: r.get(n) for n in schema.names} for r in rows],
                                                         schema=schema))


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


def create_views(con: duckdb.DuckDBPyConnection, lake: str, sql: str | None = None) -> None:
    """Create (or replace) on ``con`` the views and macros of ``sql/`` that the names in ``sql``
    need, with everything they read (every one when ``sql`` is None), reading the lake at ``lake``.

    Creating a view binds it against the lake's files, so a connection for a few queries
    creates only what they name: ``sql`` is their text (or a list of view names).
    """
    register_lake(con, lake)
    statements = _sql_statements()
    absent = absent_tables(lake)
    for i in _needed(statements, sql):
        _retry_vanished(lambda: con.execute(_lake_sql(statements[i], lake, absent)))


def connect(lake: str, sql: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the views over the lake that ``sql`` needs (all when None; see
    :func:`create_views`): for the pipeline's own reads."""
    ensure_lake(lake)
    con = duckdb.connect(":memory:")
    create_views(con, lake, sql)
    return con


# The catalog remembers which lake and which sql/ its views were built from, so a copied or moved
# warehouse, or a lake mounted elsewhere, is noticed on open and the views rebuilt for it.
_CATALOG_TABLE = "invarbench_catalog"


def _catalog_stamp(lake: str) -> tuple[str, str]:
    import hashlib

    digest = hashlib.sha256()
    for path in sql_files():  # names too: moving a file between layers changes the load order
        digest.update(path.relative_to(SQL_DIR).as_posix().encode("utf-8") + b"\0" + path.read_bytes())
    # views built while tables were absent read them as empty: rebuilt once the tables exist
    digest.update(",".join(sorted(absent_tables(lake))).encode("utf-8"))
    return lake_root(lake), digest.hexdigest()


# How DuckDB refuses a database file written in another storage format (a catalog written by
# DuckDB 2.0, by releases before the version pin, cannot be opened by 1.5).
_OTHER_STORAGE = re.compile(r"created with an? (?:newer|older) version|version number \d")


def _open_writable(catalog: Path, attempts: int) -> duckdb.DuckDBPyConnection:
    for attempt in range(attempts):
        try:
            return duckdb.connect(str(catalog))
        except duckdb.IOException as exc:
            if _OTHER_STORAGE.search(str(exc)):
                # Views only: the Parquet lake is the truth, so a catalog this DuckDB cannot read is
                # replaced, not a reason to fail.
                for path in (catalog, catalog.with_name(catalog.name + ".wal")):
                    path.unlink(missing_ok=True)
                return duckdb.connect(str(catalog))
            if attempt == attempts - 1:
                raise
            time.sleep(0.25)
    raise AssertionError("unreachable")


def build_catalog(catalog: Path, lake: str, attempts: int = 20) -> Path:
    """(Re)build the catalog file: views only, so it can be deleted and rebuilt at any time.

    Another process (a user's DuckDB shell) may hold the file; retry briefly, then give up
    with the lock error, since the lake itself is unaffected.
    """
    ensure_lake(lake)
    catalog.parent.mkdir(parents=True, exist_ok=True)
    con = _open_writable(catalog, attempts)
    try:
        create_views(con, lake)
        root, digest = _catalog_stamp(lake)
        con.execute(f"CREATE OR REPLACE TABLE {_CATALOG_TABLE} AS SELECT ? AS lake, ? AS sql_sha256", [root, digest])
    finally:
        con.close()
    return catalog


def _catalog_is_current(catalog: Path, lake: str) -> bool:
    try:
        con = duckdb.connect(str(catalog), read_only=True)
    except duckdb.Error:
        return False
    try:
        stored = con.execute(f"SELECT lake, sql_sha256 FROM {_CATALOG_TABLE}").fetchone()
    except duckdb.Error:  # built before the catalog recorded its lake
        return False
    finally:
        con.close()
    return stored == _catalog_stamp(lake)


def open_catalog(catalog: Path, lake: str) -> duckdb.DuckDBPyConnection:
    """The catalog, read-only, with views over ``lake``: rebuilt first when missing or built for
    another lake (a copied or moved warehouse) or another ``sql/``."""
    if not (catalog.exists() and _catalog_is_current(catalog, lake)):
        build_catalog(catalog, lake)
    con = duckdb.connect(str(catalog), read_only=True)
    register_lake(con, lake)
    return con


# How DuckDB reports a file that its listing held but that is gone when it opens it (locally, or
# through the lake's filesystem): a compaction merged and deleted it in between.
T = TypeVar("T")
_VANISHED = re.compile(r"No such file|No files found|Path does not exist|NoSuchKey|NO_SUCH_KEY")


def query(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """Run ``sql`` and return every row as a dict (fetches fully, so the connection is free again).

    A query that finds a listed lake file gone (a compaction replaced it by a merged file while the
    query ran) runs again, on a new listing that holds the merged file instead.
    """
    def run() -> list[dict[str, Any]]:
        cur = con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    return _retry_vanished(run)


def _retry_vanished(run: Callable[[], T]) -> T:
    """``run()``, run again (up to three times in all) when it found a listed lake file gone: a
    compaction replaced it by a merged file after the listing, and the next listing holds that."""
    for attempt in range(3):
        try:
            return run()
        except duckdb.Error as exc:  # an IOException locally, a plain Error from the lake's filesystem
            if attempt == 2 or not _VANISHED.search(str(exc)):
                raise
    raise AssertionError("unreachable")


# One in-memory DuckDB per local lake and process, each view created once, when a read first
# needs it: creating a view binds it against the lake's files (every view: more than half a
# second), which the pipeline's many small reads would otherwise pay each time, and a command
# that reads two views would pay for all of them. Views re-bind on every query, so files written
# since are seen. Object-store lakes keep a connection per read: their filesystem caches its
# listing per connection.
_READERS: dict[str, tuple[duckdb.DuckDBPyConnection, set[int]]] = {}
_READERS_LOCK = threading.Lock()


def _reader(lake: str, sql: str | None) -> duckdb.DuckDBPyConnection:
    with _READERS_LOCK:
        con, created = _READERS.get(lake, (None, set()))
        if con is None or not os.path.isdir(lake_root(lake)):
            # (re)made when first used, or when the lake folder was removed since
            _ENSURED.discard(lake)
            ensure_lake(lake)
            con, created = duckdb.connect(":memory:"), set()
            _READERS[lake] = (con, created)
        statements = _sql_statements()
        for i in _needed(statements, sql):
            if i not in created:
                con.execute(_lake_sql(statements[i], lake))
                created.add(i)
        return con


@contextlib.contextmanager
def reader(lake: str, sql: str | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection with the lake's views for the pipeline's reads, closed on exit: a cursor of the
    process's shared in-memory DuckDB for a local lake, a connection of its own for an object store.

    ``sql``: the text of the queries to run (or the names they read), so that only the views
    they need are created (see :func:`create_views`); None: every view.
    """
    # A read-only command's views may stand in for absent tables: never the process's shared ones.
    con = connect(lake, sql) if is_url(lake) or _READ_ONLY.get() else _reader(lake, sql).cursor()
    try:
        yield con
    finally:
        con.close()


def read(lake: str, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """One query over the lake's views (only those it names are created); closes whatever
    connection it opened."""
    with reader(lake, sql) as con:
        return query(con, sql, params)


def write_new_items(lake: str, rows: Sequence[dict[str, Any]]) -> int:
    """Append the item rows the lake does not hold yet (items are content-addressed); returns how many."""
    known = {r["item_id"] for r in read(
        lake, "SELECT DISTINCT item_id FROM raw_items WHERE item_id IN (SELECT unnest(?::VARCHAR[]))",
        [[r["item_id"] for r in rows]])}
    new = [r for r in rows if r["item_id"] not in known]
    write_rows(lake, "items", new)
    return len(new)


def write_memberships(lake: str, dataset: str, item_ids: Sequence[str]) -> int:
    """Record that ``dataset`` holds ``item_ids`` (the pairs not recorded yet); returns how many were new."""
    known = {r["item_id"] for r in read(
        lake, "SELECT item_id FROM dataset_items WHERE dataset_id = ?", [dataset])}
    fresh = sorted(set(item_ids) - known)
    created = now_utc()
    write_rows(lake, "dataset_items", [{"dataset_id": dataset, "item_id": i, "created_at": created} for i in fresh])
    return len(fresh)
