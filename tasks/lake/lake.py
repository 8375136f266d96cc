"""The lake as one object (:class:`Lake`): where it lives, its filesystem, the DuckDB connections
that read it through the views of ``sql/``, whether this process may write to it, and what this
process has checked, written and compacted in it.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Sequence

import duckdb
import pyarrow.fs as pafs

from tasks.lake.engine import Limits, connect
from tasks.lake.filesystem import is_url, lake_filesystem, lake_root, register_lake, unusable_lake
from tasks.lake.sql import _lake_sql, _needed, _sql_statements
from tasks.lake.tables import absent_schema_files, write_schema_files
from tasks.lake.views import _retry_vanished, query

if TYPE_CHECKING:
    from tasks.config import Config


class Lake:
    """The lake at ``location``: a local folder or an object-store URL (``s3://bucket/prefix``,
    with pyarrow filesystem options as a query string, see ``Config.lake_path``).

    It is passed where the lake is used: :meth:`connect` is the one way to get a connection that
    reads it, :meth:`read` one query over it; ``tasks.lake.writes`` appends to it and
    ``tasks.lake.compact`` merges what this process wrote to it. ``Lake(location)`` gives the same
    object each time in a process (see ``_OPEN``), and it pickles as its location, mode and limits: a
    Prefect task that takes it, or a cache key that hashes it, sees the location, never a
    connection. Flow parameters stay the configuration's strings; the flow builds the Lake
    (:meth:`of`).

    ``limits``: the memory limit and spill folder of every DuckDB opened to read it, here and in
    ``tasks.lake.catalog`` (``tasks.lake.engine.Limits``; the defaults when not given).

    ``read_only``: nothing is written to it: :meth:`ensure` writes no schema file, a table that
    has none yet (a fresh lake, or one written before the table existed) reads as empty, and a
    write raises. For the commands that must work with read-only credentials (``sql``, ``runs``).

    The storage behind it is Parquet day folders today; DuckLake (``tasks.lake.ducklake``, issue
    #31 stage 2) can back it later behind the same methods: :meth:`connect` would attach the
    DuckLake catalog instead of registering the filesystem, writes would commit, and the
    written/kept state would give way to DuckLake's own compaction.
    """

    # One object per location and mode in a process, so that every holder shares its state: the
    # shared reader and its views (creating them costs half a second), the files written since
    # the last compaction (two compactions must never merge the same file) and the files kept
    # aside for the run's final merge, whichever code built the Lake from the configuration.
    _OPEN: ClassVar[dict[tuple[str, bool], Lake]] = {}
    _OPEN_LOCK: ClassVar[threading.Lock] = threading.Lock()

    location: str
    read_only: bool
    limits: Limits

    def __new__(cls, location: str, read_only: bool = False, limits: Limits | None = None) -> Lake:
        with cls._OPEN_LOCK:
            lake = cls._OPEN.get((location, read_only))
            if lake is None:
                lake = super().__new__(cls)
                lake._open(location, read_only, limits or Limits())
                cls._OPEN[(location, read_only)] = lake
            elif limits is not None and limits != lake.limits:
                with lake._reader_lock:  # the shared reader was opened within the old limits
                    lake.limits, lake._reader = limits, None
            return lake

    @classmethod
    def of(cls, cfg: Config, read_only: bool = False) -> Lake:
        """The lake a configuration names, within its ``[warehouse]`` limits."""
        return cls(cfg.lake_path, read_only, Limits.of(cfg.warehouse))

    def _open(self, location: str, read_only: bool, limits: Limits) -> None:
        self.location, self.read_only, self.limits = location, read_only, limits
        self._ensured = False  # schema files seen (object stores only: each check costs one request per table)
        self._reader: tuple[duckdb.DuckDBPyConnection, set[int]] | None = None
        self._reader_lock = threading.Lock()
        self._written: list[str] = []
        self._kept: list[str] = []
        self._files_lock = threading.Lock()

    def __reduce__(self) -> tuple[type, tuple[str, bool, Limits]]:
        # Rebuilt (in another process, or by Prefect's hashing) from its location: state stays behind.
        return (Lake, (self.location, self.read_only, self.limits))

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
        """Where the views read the lake: an absolute local path, or the URL without its options."""
        return lake_root(self.location)

    def filesystem(self) -> tuple[pafs.FileSystem, str]:
        """The lake's pyarrow filesystem and its root path in it (raises LakeError for a bad URL).

        Made on each call, as pyarrow resolves credentials when it makes one: a refreshed
        session token is picked up by the next use.
        """
        return lake_filesystem(self.location)

    def absent_tables(self) -> frozenset[str]:
        """The tables without a schema file, when read-only (none otherwise: then :meth:`ensure`
        has written them)."""
        if not self.read_only:
            return frozenset()
        fs, root = self.filesystem()
        try:
            return absent_schema_files(fs, root)
        except OSError as exc:
            raise unusable_lake(self.location, exc) from None

    def ensure(self) -> None:
        """Create every table folder with its schema file, so views work before the first run
        (see ``tasks.lake.tables.write_schema_files``); when read-only, only check that the lake
        can be read. Raises LakeError (a configuration error) when it cannot be read or written."""
        if self._ensured:
            return
        if self.read_only:
            self.absent_tables()
            return
        fs, root = self.filesystem()
        try:
            write_schema_files(fs, root)
        except OSError as exc:
            raise unusable_lake(self.location, exc) from None
        # A local check is cheap, and sees a lake folder removed since.
        self._ensured = self.is_url

    def create_views(self, con: duckdb.DuckDBPyConnection, sql: str | None = None) -> None:
        """Create (or replace) on ``con`` the views and macros of ``sql/`` that the names in ``sql``
        need, with everything they read (every one when ``sql`` is None), reading this lake.

        Creating a view binds it against the lake's files, so a connection for a few queries
        creates only what they name: ``sql`` is their text (or a list of view names).
        """
        register_lake(con, self.location)
        statements = _sql_statements()
        absent = self.absent_tables()
        for i in _needed(statements, sql):
            _retry_vanished(lambda: con.execute(_lake_sql(statements[i], self.location, absent)))

    def connect(self, sql: str | None = None) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with the lake's views that ``sql`` needs (every view when None; see
        :meth:`create_views`), for the pipeline's reads; the caller closes it (``with
        lake.connect(sql) as con:``). It never holds the catalog file open.

        A local lake's connections are cursors of one in-memory DuckDB per lake and process, each
        view created once, when a read first needs it: creating a view binds it against the lake's
        files, which the pipeline's many small reads would otherwise pay each time. Views re-bind
        on every query, so files written since are seen. An object-store lake gives a connection
        of its own (its filesystem caches its listing per connection), and so does a read-only
        lake (its views may stand in for absent tables).
        """
        if self.is_url or self.read_only:
            self.ensure()
            con = connect(limits=self.limits)
            self.create_views(con, sql)
            return con
        return self._shared_reader(sql).cursor()

    def _shared_reader(self, sql: str | None) -> duckdb.DuckDBPyConnection:
        with self._reader_lock:
            if self._reader is None or not os.path.isdir(self.root):
                # made when first used, or again when the lake folder was removed since
                self.ensure()
                self._reader = (connect(limits=self.limits), set())
            con, created = self._reader
            statements = _sql_statements()
            for i in _needed(statements, sql):
                if i not in created:
                    con.execute(_lake_sql(statements[i], self.location))
                    created.add(i)
            return con

    def read(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        """The rows of one query over the lake's views (only those it names are created)."""
        with self.connect(sql) as con:
            return query(con, sql, params)

    def add_written(self, path: str) -> None:
        """Note that this process wrote the lake file ``path`` (for :meth:`take_written`)."""
        with self._files_lock:
            self._written.append(path)

    def take_written(self) -> list[str]:
        """The files this process wrote since the last call; each path is handed out once, so two
        compactions in one process never merge the same file."""
        with self._files_lock:
            written, self._written = self._written, []
            return written

    def keep(self, paths: Iterable[str]) -> None:
        """Set compacted files aside for the run's final compaction (``tasks.lake.compact``)."""
        with self._files_lock:
            self._kept.extend(paths)

    def take_kept(self) -> list[str]:
        """The files set aside by :meth:`keep` since the last call."""
        with self._files_lock:
            kept, self._kept = self._kept, []
            return kept

    @property
    def kept(self) -> list[str]:
        """The files set aside for the run's final compaction, as they stand."""
        with self._files_lock:
            return list(self._kept)
