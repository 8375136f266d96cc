"""The lake as one object (:class:`Lake`): where it lives, its DuckLake catalog, the DuckDB that
reads it through the views of ``sql/``, and its commits and compaction."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import logging
import os
import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import Any, ClassVar, Iterable, Iterator, Sequence
from urllib.parse import parse_qs, urlsplit

import duckdb
import pyarrow as pa

from tasks.errors import LakeError
from tasks.lake import ducklake, old_layout
from tasks.lake.config import WarehouseSettings
from tasks.lake.engine import Limits, connect, load_sql, sql_literal
from tasks.lake.materialised import is_current
from tasks.lake.schemas import SCHEMAS
from tasks.lake.sql import _lake_sql, _needed, _sql_statements
from tasks.lake.views import query

log = logging.getLogger(__name__)

# The views made on a DuckDB: statement index -> the absent tables and whether materialised.
Made = dict[int, tuple[frozenset[str], bool]]


class Lake:
    """The lake at ``location`` (a folder or ``s3://bucket/prefix?options``, ``Config.lake_path``),
    every table a DuckLake table (https://ducklake.select/docs/stable/specification/introduction):
    data files under ``<location>/data/``, the catalog ``catalog`` (``sqlite:<path>``,
    ``postgres:<libpq string>``, or None: ``<location>/catalog.sqlite``). One object per arguments
    in a process (``_OPEN``): its holders share one DuckDB and one commit lock; it pickles as its
    arguments. ``limits``: each DuckDB's memory and spill folder. ``read_only``: attached READ_ONLY,
    no catalog yet reads as empty tables, a write raises (``sql``, ``runs``)."""

    _OPEN: ClassVar[dict[tuple[str, bool, str | None], Lake]] = {}
    _OPEN_LOCK: ClassVar[threading.Lock] = threading.Lock()

    location: str
    read_only: bool
    limits: Limits
    _reader: tuple[duckdb.DuckDBPyConnection, Made, bool] | None  # the shared DuckDB, its views, attached?
    # This process made the lake new (no table, nothing imported) and has committed nothing to it
    # since: it holds no row of this process's, and none of another's but those written meanwhile.
    made_empty_here: bool

    def __new__(cls, location: str, read_only: bool = False, limits: Limits | None = None,
                catalog: str | None = None) -> Lake:
        with cls._OPEN_LOCK:
            lake = cls._OPEN.get((location, read_only, catalog))
            if lake is None:
                lake = cls._OPEN[(location, read_only, catalog)] = super().__new__(cls)
                lake.location, lake.read_only, lake._catalog = location, read_only, catalog
                lake.limits, lake._reader = limits or Limits(), None
                lake.made_empty_here = False  # set by _attach_writable, cleared by each commit
                # One commit at a time: SQLite takes one writer, and a commit's id is its DuckDB's last.
                lake._reader_lock, lake._commit_lock = threading.Lock(), threading.Lock()
            elif limits is not None and limits != lake.limits:
                with lake._reader_lock:  # the shared reader was opened within the old limits
                    lake.limits, lake._reader = limits, None
            return lake

    @classmethod
    def of(cls, cfg: WarehouseSettings, read_only: bool = False) -> Lake:
        """The lake a configuration names, with its catalog and limits."""
        return cls(cfg.lake_path, read_only, Limits.of(cfg.warehouse), cfg.lake_catalog)

    def __reduce__(self) -> tuple[type, tuple[str, bool, Limits, str | None]]:
        return (Lake, (self.location, self.read_only, self.limits, self._catalog))

    def __repr__(self) -> str:
        return f"Lake({self.location!r}{', read_only=True' if self.read_only else ''})"

    def __str__(self) -> str:
        return self.location

    @property
    def is_url(self) -> bool:
        """Whether the lake is an object-store URL (``s3://…``) rather than a local folder."""
        return "://" in self.location

    @property
    def root(self) -> str:
        """An absolute local path, or the URL without its options (the connection's, not paths)."""
        return (self.location.split("?", 1)[0].rstrip("/") if self.is_url
                else str(Path(self.location).expanduser().resolve()))

    @property
    def catalog(self) -> str:
        """The DuckLake catalog: ``sqlite:<absolute path>`` or ``postgres:<libpq connection string>``."""
        if self._catalog:
            return self._catalog
        if self.is_url:
            raise LakeError(f"the lake {self.root} needs a catalog (Lake.of gives it one in the warehouse folder)")
        return f"sqlite:{self.root}/catalog.sqlite"

    @property
    def data_path(self) -> str:
        """Where DuckLake writes the tables' data files (absolute, as DuckLake requires)."""
        return f"{self.root}/data/"

    def _sqlite_file(self) -> Path | None:
        return Path(self.catalog.removeprefix("sqlite:")) if self.catalog.startswith("sqlite:") else None

    def has_catalog(self) -> bool:
        """Whether the lake's catalog exists (a Postgres catalog is taken to)."""
        return (path := self._sqlite_file()) is None or path.exists()

    def s3_secret_sql(self) -> str:
        """A DuckDB S3 secret: credentials from ``AWS_*``, endpoint and region from the URL's options
        (else ``AWS_REGION`` / ``AWS_DEFAULT_REGION``). Raises LakeError without credentials."""
        key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
        if not (key and secret):
            raise LakeError(f"the s3:// lake {self.root} is read and written with AWS_ACCESS_KEY_ID and "
                            "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN if any) set in the environment")
        query = {k: v[-1] for k, v in parse_qs(urlsplit(self.location).query).items()}
        options = {"TYPE": "s3", "KEY_ID": sql_literal(key), "SECRET": sql_literal(secret)}
        if token := os.environ.get("AWS_SESSION_TOKEN"):
            options["SESSION_TOKEN"] = sql_literal(token)
        if region := query.get("region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"):
            options["REGION"] = sql_literal(region)
        if endpoint := query.get("endpoint_override", ""):
            url = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
            options |= {"ENDPOINT": sql_literal(url.netloc), "URL_STYLE": "'path'",
                        "USE_SSL": str(url.scheme == "https").lower()}
        body = ", ".join(f"{k} {v}" for k, v in options.items())
        return f"CREATE OR REPLACE TEMPORARY SECRET invarbench_lake ({body});"

    def _unusable(self, exc: Exception) -> LakeError:
        """The error for a lake that cannot be used (DuckDB's message never holds credentials)."""
        hint = ("check the credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY), warehouse.endpoint_url and "
                "that the bucket exists") if self.is_url else "check warehouse.path / warehouse.lake"
        return LakeError(f"cannot use the lake {self.root}: {exc}; {hint}")

    def _setup_sql(self) -> list[str]:
        scanner = "postgres_scanner" if self.catalog.startswith("postgres:") else "sqlite_scanner"
        lines = [load_sql(name) for name in ("ducklake", scanner) + (("httpfs",) if self.is_url else ())]
        return lines + ([self.s3_secret_sql()] if self.is_url else [])

    def attach_sql(self, read_only: bool | None = None, at: int | None = None) -> str:
        """The SQL that loads the extensions by path, creates an object store's secret (keep it out of
        files others read) and attaches the lake as ``lake``, READ_ONLY when ``read_only`` (default:
        the lake's mode) or ``at`` (a snapshot id)."""
        return "\n".join(self._setup_sql() + [self._attach_line(read_only, at)])

    def _attach_line(self, read_only: bool | None, at: int | None) -> str:
        read_only = self.read_only if read_only is None else read_only
        # The catalog stores the data path it was created with: a copied or moved warehouse reads
        # and writes its own (the override holds for this attach only).
        options = [f"DATA_PATH {sql_literal(self.data_path)}", "OVERRIDE_DATA_PATH true"]
        options += [f"SNAPSHOT_VERSION {int(at)}"] if at is not None else []
        options += ["READ_ONLY"] if read_only or at is not None else []
        return (f"ATTACH IF NOT EXISTS {sql_literal('ducklake:' + self.catalog)} AS {ducklake.ALIAS} "
                f"({', '.join(options)});")

    def _reach(self, con: duckdb.DuckDBPyConnection) -> None:
        """Load the extensions; check that an object store answers (one listing), else LakeError."""
        try:
            con.execute("\n".join(self._setup_sql()))
            if self.is_url:
                con.execute(f"SELECT count(*) FROM glob({sql_literal(self.data_path + '.probe*')})")
        except duckdb.IOException as exc:
            raise self._unusable(exc) from None

    def attach(self, con: duckdb.DuckDBPyConnection, read_only: bool | None = None, at: int | None = None) -> None:
        """Attach the lake to ``con`` (:meth:`attach_sql`); nothing when it is read and has no catalog
        yet (its views read empty tables), unless it is an old lake: a reader imports it first."""
        self._reach(con)  # an unusable object store says so, even before its first commit
        self._attach_reached(con, read_only, at)

    def _attach_reached(self, con: duckdb.DuckDBPyConnection, read_only: bool | None, at: int | None) -> None:
        """:meth:`attach` on ``con`` that :meth:`_reach` has set up (its listing is not repeated)."""
        if (read_only or self.read_only or at is not None) and not self.has_catalog():
            if not old_layout.found(self.root, self.is_url):
                return
            Lake(self.location, False, self.limits, self._catalog).ensure()
        try:
            ducklake.retrying(lambda: con.execute(self._attach_line(read_only, at)))
        except duckdb.IOException as exc:
            raise self._unusable(exc) from None
        except duckdb.InvalidInputException as exc:
            # A reader of a PostgreSQL catalog that no writer has created yet (has_catalog cannot
            # tell): it reads every table as empty, as a reader of a missing SQLite catalog does.
            if "creating a new DuckLake is explicitly disabled" not in str(exc):
                raise

    def absent_tables(self, con: duckdb.DuckDBPyConnection, have: Iterable[str] | None = None) -> frozenset[str]:
        """The tables the lake attached to ``con`` lacks (every table when it has no catalog).
        ``have``: its tables, when the caller has read them (``ducklake.lake_tables``: a catalog
        read of 10-20 ms, not repeated)."""
        if have is None:
            if not ducklake.attached(con):
                return frozenset(SCHEMAS)
            have = ducklake.lake_tables(con)
        return frozenset(SCHEMAS) - set(have)

    def ensure(self) -> None:
        """Create the catalog and tables (when read-only, check the lake reads), else LakeError."""
        self.connect("").close()

    def create_views(self, con: duckdb.DuckDBPyConnection, sql: str | Sequence[str] | None = None,
                     materialised: bool | None = None, made: Made | None = None,
                     absent: frozenset[str] | None = None) -> None:
        """Create on ``con`` (the lake attached) the views and macros of ``sql/`` that the names in
        ``sql`` (a query or view names; None: all) need: creating a view binds it, so only those.
        A materialised view reads its lake table while current (``tasks.lake.materialised``), else
        the raw lake; ``materialised`` forces which. ``made``: what ``con`` has (kept up to date)."""
        statements, made = _sql_statements(), {} if made is None else made
        absent = self.absent_tables(con) if absent is None else absent
        needed = _needed(statements, sql)
        if materialised is None:
            materialised = any(statements[i].key for i in needed) and is_current(con)
        for i in needed:
            view = (absent, materialised and bool(statements[i].key))
            if made.get(i) != view:
                con.execute(_lake_sql(statements[i], *view))
                made[i] = view

    def connect(self, sql: str | None = None, at: int | None = None) -> duckdb.DuckDBPyConnection:
        """A cursor of the lake's DuckDB in this process with the views ``sql`` needs (None: all;
        :meth:`create_views`), seeing every snapshot committed before a query starts; the caller
        closes it. ``at``: a connection of its own, as of snapshot ``at`` (read-only)."""
        if at is not None:
            con = connect(limits=self.limits)
            self.attach(con, at=at)
            self.create_views(con, sql)
            return con
        with self._reader_lock:
            if self._reader is None or self._reader[2] != self.has_catalog():
                # made when first used, or again when the catalog appeared or was removed since
                # (a reader of a PostgreSQL catalog not created yet tries again at each use)
                con = connect(limits=self.limits)
                if self.read_only:
                    self.attach(con)
                else:
                    self._attach_writable(con)
                self._reader = (con, {}, ducklake.attached(con))
            con, made, _ = self._reader
            # a read-only lake may gain a table another process creates: its views then read it
            self.create_views(con, sql, made=made, absent=None if self.read_only else frozenset())
            return con.cursor()

    def _attach_writable(self, con: duckdb.DuckDBPyConnection) -> None:
        """Attach for writing; create a new catalog and tables (importing an old lake) under a lock."""
        self._reach(con)
        path = self._sqlite_file()
        try:
            with self._creating(path):
                fresh = not self.has_catalog()
                if fresh and path is not None:
                    # Readers then never wait for a writer (measured: 310 ms median → 18 ms); it persists in the file.
                    with contextlib.closing(sqlite3.connect(path)) as db:
                        db.execute("PRAGMA journal_mode=WAL")
                try:
                    self._attach_reached(con, read_only=False, at=None)
                    fresh = fresh or not ducklake.lake_tables(con)
                    ducklake.create_tables(con)
                except duckdb.IOException as exc:
                    raise self._unusable(exc) from None
                if fresh and old_layout.found(self.root, self.is_url, con):
                    old_layout.import_old_layout(con, self.root, self.is_url)
                elif fresh:
                    self.made_empty_here = True
        except OSError as exc:  # a folder that cannot be made (a file in its way, no permission)
            raise self._unusable(exc) from None

    @contextlib.contextmanager
    def exclusive(self, purpose: str) -> Iterator[None]:
        """Hold the lake's lock for ``purpose`` (an exclusive ``flock``, which the kernel releases
        if the process dies), waiting while another process holds it (and logging so first). The
        lock file is in the machine's temporary folder, named by the catalog, so the lake's own
        folder gains no file: the processes of one machine are kept apart, not machines sharing a
        PostgreSQL catalog."""
        path = self._sqlite_file()
        catalog = f"sqlite:{os.path.realpath(path)}" if path is not None else self.catalog  # however a process spells it
        digest = hashlib.sha256(catalog.encode()).hexdigest()[:16]
        with open(Path(tempfile.gettempdir()) / f"invarbench-{purpose}-{digest}.lock", "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                log.info("waiting for another process's %s of the lake %s", purpose, self.location)
                fcntl.flock(lock, fcntl.LOCK_EX)
            yield  # released when the file closes

    @staticmethod
    @contextlib.contextmanager
    def _creating(path: Path | None) -> Iterator[None]:
        if path is None or path.exists():
            yield
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(f"{path}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
            # a process that waited on it finds the catalog made; one that comes later takes no lock
            Path(f"{path}.lock").unlink(missing_ok=True)

    def read(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        """The rows of one query over the lake's views (only those it names are created)."""
        with self.connect(sql) as con:
            return query(con, sql, params)

    def commit(self, table: str, data: pa.Table, run_id: str | None = None) -> int:
        """Append ``data`` to ``table`` in one snapshot, marked with ``run_id``; returns its id."""
        if self.read_only:
            raise RuntimeError(f"a read-only command tried to write to the lake table {table}")
        with self._commit_lock, self.connect("") as con:
            self.made_empty_here = False
            return ducklake.commit(con, table, data, f"{table}: {data.num_rows} rows", run_id)

    def commit_select(self, table: str, select: str, run_id: str | None = None) -> int:
        """Append the rows of ``select`` (over the lake's views) to ``table`` in one snapshot, in
        DuckDB (no row passes through Python), marked with ``run_id``; returns its id."""
        if self.read_only:
            raise RuntimeError(f"a read-only command tried to write to the lake table {table}")
        with self._commit_lock, self.connect(select) as con:
            self.made_empty_here = False
            return ducklake.commit_select(con, table, select, f"{table}: rows of a query", run_id)

    def compact(self, expire_before: dt.datetime | None = None) -> int:
        """DuckLake's maintenance (``ducklake.compact``), under the commit lock: its commits would
        come between a commit and the reading of its snapshot id; returns the files merged."""
        with self._commit_lock, self.connect("") as con:
            return ducklake.compact(con, expire_before)
