"""The lake as one object (:class:`Lake`): where it lives, its DuckLake catalog, the DuckDB
connections that read it through the views of ``sql/``, whether this process may write to it,
and its commits and compaction.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import logging
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, ClassVar, Iterator, Sequence

import duckdb
import pyarrow as pa

from tasks import progress
from tasks.errors import LakeError
from tasks.lake import ducklake
from tasks.lake.config import WarehouseSettings
from tasks.lake.engine import Limits, connect, load_sql, sql_literal
from tasks.lake.location import is_url, lake_root, s3_secret_sql, unusable_lake
from tasks.lake.materialised import is_current
from tasks.lake.schemas import SCHEMAS
from tasks.lake.sql import _lake_sql, _needed, _sql_statements
from tasks.lake.views import query

log = logging.getLogger(__name__)

# Where a lake folder's tables in the layout before DuckLake are moved once imported.
PRE_DUCKLAKE = "_pre_ducklake"


def _reads_materialised(con: duckdb.DuckDBPyConnection, statements: Sequence[Any], needed: Sequence[int]) -> bool:
    """Whether the views ``needed`` (indexes into ``statements``) read the lake's materialised
    tables: some of them are materialised, and those tables are current (a write since the last
    refresh makes them stale, and the views then read the raw lake)."""
    return any(statements[i].key for i in needed) and is_current(con)


class Lake:
    """The lake at ``location``: a local folder or an object-store URL (``s3://bucket/prefix``,
    with the endpoint and region as a query string, see ``Config.lake_path``). Every table is a
    DuckLake table (https://ducklake.select/docs/stable/specification/introduction): its data
    files under ``<location>/data/``, its catalog in ``catalog``.

    ``catalog``: the DuckLake catalog, ``sqlite:<path>`` or ``postgres:<libpq connection
    string>``; None for the default, a SQLite file ``<location>/catalog.sqlite`` (an object-store
    lake has no default: :meth:`of` gives it one in the warehouse folder).

    It is passed where the lake is used: :meth:`connect` is the one way to get a connection that
    reads it, :meth:`read` one query over it, :meth:`commit` the one way to append to it
    (``tasks.lake.writes``). ``Lake(location)`` gives the same object each time in a process (see
    ``_OPEN``), and it pickles as its location, mode, limits and catalog: a Prefect task that
    takes it, or a cache key that hashes it, sees the location, never a connection.

    ``limits``: the memory limit and spill folder of every DuckDB opened to read it, here and in
    ``tasks.lake.catalog`` (``tasks.lake.engine.Limits``; the defaults when not given).

    ``read_only``: nothing is written to it: the catalog is attached READ_ONLY, a lake with no
    catalog yet reads as empty tables (and nothing is created), and a write raises. For the
    commands that must work with read-only credentials (``sql``, ``runs``).
    """

    # One object per location, mode and catalog in a process, so that every holder shares its
    # shared reader and its views (creating them costs half a second) and its commit lock.
    _OPEN: ClassVar[dict[tuple[str, bool, str | None], Lake]] = {}
    _OPEN_LOCK: ClassVar[threading.Lock] = threading.Lock()

    location: str
    read_only: bool
    limits: Limits

    def __new__(cls, location: str, read_only: bool = False, limits: Limits | None = None,
                catalog: str | None = None) -> Lake:
        with cls._OPEN_LOCK:
            lake = cls._OPEN.get((location, read_only, catalog))
            if lake is None:
                lake = super().__new__(cls)
                lake._open(location, read_only, limits or Limits(), catalog)
                cls._OPEN[(location, read_only, catalog)] = lake
            elif limits is not None and limits != lake.limits:
                with lake._reader_lock:  # the shared reader was opened within the old limits
                    lake.limits, lake._reader = limits, None
            return lake

    @classmethod
    def of(cls, cfg: WarehouseSettings, read_only: bool = False) -> Lake:
        """The lake a configuration names, with its ``[warehouse] catalog`` (``Config.lake_catalog``)
        and within its ``[warehouse]`` limits."""
        return cls(cfg.lake_path, read_only, Limits.of(cfg.warehouse), cfg.lake_catalog)

    def _open(self, location: str, read_only: bool, limits: Limits, catalog: str | None) -> None:
        self.location, self.read_only, self.limits, self._catalog = location, read_only, limits, catalog
        # the shared reader, the absent tables (and whether materialised) each view was created for,
        # whether the lake is attached to it
        self._reader: tuple[duckdb.DuckDBPyConnection, dict[int, tuple[frozenset[str], bool]], bool] | None = None
        self._reader_lock = threading.Lock()
        # One commit at a time per process: SQLite takes one writer, and a process's own commits
        # would otherwise meet as "database is locked" and back off against each other; and a
        # commit's snapshot id is read as this DuckDB's last commit (ducklake.commit).
        self._commit_lock = threading.Lock()

    def __reduce__(self) -> tuple[type, tuple[str, bool, Limits, str | None]]:
        # Rebuilt (in another process, or by Prefect's hashing) from its location: state stays behind.
        return (Lake, (self.location, self.read_only, self.limits, self._catalog))

    def __repr__(self) -> str:
        return f"Lake({self.location!r}{', read_only=True' if self.read_only else ''})"

    def __str__(self) -> str:
        return self.location

    @property
    def is_url(self) -> bool:
        """Whether the lake is an object-store URL (``s3://…``) rather than a local folder."""
        return is_url(self.location)

    @property
    def root(self) -> str:
        """The lake's root: an absolute local path, or the URL without its options."""
        return lake_root(self.location)

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
        """Where DuckLake writes the tables' data files (an absolute path or URL, as DuckLake requires)."""
        return f"{self.root}/data/"

    def _sqlite_file(self) -> Path | None:
        return Path(self.catalog[len("sqlite:"):]) if self.catalog.startswith("sqlite:") else None

    def has_catalog(self) -> bool:
        """Whether the lake's catalog exists (a Postgres catalog is taken to)."""
        path = self._sqlite_file()
        return path is None or path.exists()

    def _setup_sql(self) -> list[str]:
        scanner = "postgres_scanner" if self.catalog.startswith("postgres:") else "sqlite_scanner"
        lines = [load_sql(name) for name in ("ducklake", scanner) + (("httpfs",) if self.is_url else ())]
        return lines + ([s3_secret_sql(self.location)] if self.is_url else [])

    def attach_sql(self, read_only: bool | None = None, at: int | None = None) -> str:
        """The SQL that attaches the lake as ``lake`` to a DuckDB: its extensions loaded by path,
        an object-store lake's secret (credentials: keep the text out of files others read), and
        the ATTACH, READ_ONLY when ``read_only`` (default: the lake's mode) or ``at`` (a snapshot id)."""
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
        """Load the extensions into ``con`` and check that an object-store lake answers (one small
        listing), before anything is created; raises LakeError when it does not."""
        try:
            con.execute("\n".join(self._setup_sql()))
            if self.is_url:
                con.execute(f"SELECT count(*) FROM glob({sql_literal(self.data_path + '.probe*')})")
        except duckdb.IOException as exc:
            raise unusable_lake(self.location, exc) from None

    def attach(self, con: duckdb.DuckDBPyConnection, read_only: bool | None = None, at: int | None = None) -> None:
        """Attach the lake to ``con`` as ``lake`` (see :meth:`attach_sql`); nothing when it has no
        catalog yet and is read, where the views read every table as empty. A local lake in the
        layout before DuckLake is imported first, even by a reader: the one write it makes."""
        if (read_only or self.read_only or at is not None) and not self.has_catalog():
            if not self._old_layout():
                self._reach(con)  # an unusable object store says so, even before its first commit
                return
            Lake(self.location, False, self.limits, self._catalog).ensure()
        self._reach(con)
        try:
            ducklake.retrying(lambda: con.execute(self._attach_line(read_only, at)))
        except duckdb.IOException as exc:
            raise unusable_lake(self.location, exc) from None
        except duckdb.InvalidInputException as exc:
            # A reader of a PostgreSQL catalog that no writer has created yet (has_catalog cannot
            # tell): it reads every table as empty, as a reader of a missing SQLite catalog does.
            if "creating a new DuckLake is explicitly disabled" not in str(exc):
                raise

    def absent_tables(self, con: duckdb.DuckDBPyConnection | None = None) -> frozenset[str]:
        """The tables the lake attached to ``con`` lacks (every table when it has no catalog)."""
        if con is None or not ducklake.attached(con):
            return frozenset(SCHEMAS)
        return frozenset(SCHEMAS) - set(ducklake.lake_tables(con))

    def ensure(self) -> None:
        """Create the catalog and every table (importing a lake in the layout before DuckLake);
        when read-only, only check that the lake can be read. Raises LakeError (a configuration
        error) when it cannot be read or written."""
        self.connect("").close()

    def create_views(self, con: duckdb.DuckDBPyConnection, sql: str | Sequence[str] | None = None,
                     materialised: bool | None = None) -> None:
        """Create (or replace) on ``con``, where the lake is attached (:meth:`attach`), the views
        and macros of ``sql/`` that the names in ``sql`` need, with everything they read (every one
        when ``sql`` is None). Creating a view binds it, so a connection for a few queries creates
        only what they name: ``sql`` is their text (or a list of view names). A materialised view
        reads its lake table while that is current (``tasks.lake.materialised``), else the raw lake;
        ``materialised`` says which, whether current or not."""
        statements = _sql_statements()
        absent = self.absent_tables(con)
        needed = _needed(statements, sql)
        if materialised is None:
            materialised = _reads_materialised(con, statements, needed)
        for i in needed:
            con.execute(_lake_sql(statements[i], absent, materialised))

    def connect(self, sql: str | None = None, at: int | None = None) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with the lake attached as ``lake`` and the views that ``sql`` needs
        (every view when None; see :meth:`create_views`); the caller closes it (``with
        lake.connect(sql) as con:``).

        A cursor of one in-memory DuckDB per lake and process, each view created once, when a
        read first needs it: creating a view binds it, which the pipeline's many small reads would
        otherwise pay each time. Queries see every snapshot committed before they start.
        ``at``: a connection of its own that reads the lake as of snapshot ``at`` (read-only).
        """
        if at is not None:
            con = connect(limits=self.limits)
            self.attach(con, at=at)
            self.create_views(con, sql)
            return con
        return self._shared_reader(sql).cursor()

    def _shared_reader(self, sql: str | None) -> duckdb.DuckDBPyConnection:
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
            con, created, _ = self._reader
            statements = _sql_statements()
            # a read-only lake may gain a table another process creates: its views then read it
            absent = self.absent_tables(con) if self.read_only else frozenset()
            needed = _needed(statements, sql)
            current = _reads_materialised(con, statements, needed)
            for i in needed:
                made = (absent, current and bool(statements[i].key))
                if created.get(i) != made:
                    con.execute(_lake_sql(statements[i], absent, made[1]))
                    created[i] = made
            return con

    def _attach_writable(self, con: duckdb.DuckDBPyConnection) -> None:
        """Attach the lake for writing, creating its catalog and tables when new (and importing
        an old lake into them once), under a lock that other local processes wait on meanwhile."""
        self._reach(con)
        try:
            with self._creating():
                self._create(con)
        except OSError as exc:  # a folder that cannot be made (a file in its way, no permission)
            raise unusable_lake(self.location, exc) from None

    def _create(self, con: duckdb.DuckDBPyConnection) -> None:
        fresh = not self.has_catalog()
        path = self._sqlite_file()
        if fresh and path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Readers then never wait for a writer (measured: 310 ms median → 18 ms); it persists in the file.
            with contextlib.closing(sqlite3.connect(path)) as db:
                db.execute("PRAGMA journal_mode=WAL")
        try:
            self.attach(con, read_only=False)
            fresh = fresh or not ducklake.lake_tables(con)
            ducklake.create_tables(con)
        except duckdb.IOException as exc:
            raise unusable_lake(self.location, exc) from None
        if fresh and self._old_layout(con):
            self._import_old(con)

    @contextlib.contextmanager
    def _creating(self) -> Iterator[None]:
        path = self._sqlite_file()
        if path is None or path.exists():
            yield
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(f"{path}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
            # a process that waited on it finds the catalog made; one that comes later takes no lock
            Path(f"{path}.lock").unlink(missing_ok=True)

    def _old_layout(self, con: duckdb.DuckDBPyConnection | None = None) -> bool:
        """Whether the lake holds tables in the layout before DuckLake (each old table folder has
        a schema file); an object-store lake is listed through ``con`` (one listing of the lake)."""
        if not self.is_url:
            return any(Path(self.root, table, ducklake.OLD_SCHEMA_FILE).exists() for table in SCHEMAS)
        if con is None:
            return False
        found = con.execute(f"SELECT count(*) FROM glob({sql_literal(f'{self.root}/*/{ducklake.OLD_SCHEMA_FILE}')})")
        return found.fetchone()[0] > 0

    def _import_old(self, con: duckdb.DuckDBPyConnection) -> None:
        """Import the tables of the old layout, then move a local lake's folders to ``_pre_ducklake/``
        (an object store has no move: its old objects stay where they are, beside ``data/``)."""
        log.warning("importing the lake %s (the layout before DuckLake) into DuckLake", self.root)
        with progress.stage("import", len(SCHEMAS)) as advance:
            def done(table: str, rows: int) -> None:
                log.info("imported %s: %d rows", table, rows)
                advance(1)
            ducklake.import_parquet_lake(con, self.root, done)
        if self.is_url:
            return
        aside = Path(self.root, PRE_DUCKLAKE)
        aside.mkdir(exist_ok=True)
        for table in SCHEMAS:
            if Path(self.root, table).is_dir():
                os.replace(Path(self.root, table), aside / table)

    def read(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        """The rows of one query over the lake's views (only those it names are created)."""
        with self.connect(sql) as con:
            return query(con, sql, params)

    def commit(self, table: str, data: pa.Table, run_id: str | None = None) -> int:
        """Append ``data`` (of the table's schema) to ``table`` in one DuckLake transaction, its
        snapshot marked with ``run_id`` when given; returns the snapshot id."""
        if self.read_only:
            raise RuntimeError(f"a read-only command tried to write to the lake table {table}")
        with self._commit_lock, self.connect("") as con:
            return ducklake.commit(con, table, data, f"{table}: {data.num_rows} rows", run_id)

    def compact(self, expire_before: dt.datetime | None = None) -> int:
        """DuckLake's maintenance on the lake, expiring the snapshots older than ``expire_before``
        (``tasks.lake.ducklake.compact``); returns how many files were merged."""
        # Under the commit lock: its commits would otherwise come between a commit and the
        # reading of that commit's snapshot id (ducklake.commit).
        with self._commit_lock, self.connect("") as con:
            return ducklake.compact(con, expire_before)
