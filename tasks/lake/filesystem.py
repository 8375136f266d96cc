"""Where the lake lives and how its files are read and written: a local folder or an object-store
URL (``s3://bucket/prefix``), served by one filesystem layer, pyarrow's.

It writes the Parquet files, and DuckDB reads the lake through the same filesystem registered with
each connection (:func:`register_lake`), so an object-store lake needs no DuckDB extension and no
download. A file becomes visible only when complete (:func:`atomic_writer`: a local temporary name
renamed; an object upload that is published only when it completes), so a crash never leaves a
half file and concurrent writers never lock or overwrite each other.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path
from typing import Any, Iterator

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from fsspec.implementations.arrow import ArrowFSWrapper
from fsspec.implementations.memory import MemoryFile

from tasks.errors import LakeError


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
