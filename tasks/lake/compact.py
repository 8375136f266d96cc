"""Compaction: the small Parquet files of the lake merged into one file per table and day.

Every chunk a run stores is a file of its own: writes are atomic, need no lock, and a crash loses
at most the chunk in flight, while people query the lake as it grows. But every query opens every
file, and on object storage each file costs requests (a HEAD and a GET), so a lake of many small
files is slow to read. So when a process's work ends (a run, or a dispatched unit of one) the files
it wrote are merged, per table and day folder, into one ``merged-….parquet`` whose Parquet metadata
(key ``tasks.lake.schemas.REPLACES_KEY``) names every file it replaces. The views leave out a file that a merged
file names (``replaced_files`` in sql/macros/lake_files.sql), so the swap is a single atomic write:
before it the small files are the table, after it the merged file is, and no reader ever sees a row
twice or misses one. The small files are then deleted.

A process killed between the two steps leaves small files that a merged file names: the views
already ignore them, and :func:`compact_lake` (``invarbench compact``) deletes them. Killed while
writing the merged file, it leaves no merged file (writes are atomic) and the small files stand.

Only the process that wrote a file merges it when its work ends, so two compactions never merge the
same file (both merged files would hold its rows). :func:`compact_lake` merges what is left in day
folders before yesterday (UTC): files of killed processes, lakes written before compaction
existed. No run writes there any more; run one ``compact_lake`` at a time.

A query that listed a folder just before a compaction deleted a file, and opens it just after,
finds it gone; the pipeline's own reads run such a query again (tasks.lake.views.query).

A long run also reads what it wrote while it runs (the ledger and claims before each wave of
calls, parses and scores after each chunk), and a read opens every file: left alone, a
200,000-item sweep would end with some 20,000 response files, each chunk reading more of them
than the last. So each (model, chunk) unit merges its own files when it ends (``final=False``);
the merged files are kept aside, merged again when a folder holds more than a few, and the
run's end merges what is left into one.
"""

from __future__ import annotations

import datetime as dt
import logging
import posixpath
import uuid
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from tasks.lake.filesystem import atomic_writer, unusable_lake
from tasks.lake.lake import Lake
from tasks.lake.schemas import MERGED_PREFIX, REPLACES_KEY, SCHEMAS, conform
from tasks.records import now_utc
from tasks.runs import progress

# Lake files are small: reading and deleting them is waiting on the store, not the CPU.
_THREADS = 16

log = logging.getLogger(__name__)


@dataclass
class CompactStats:
    """What a compaction did: small files merged, merged files written, files deleted."""

    merged: int = 0
    written: int = 0
    deleted: int = 0
    files: list[str] = field(default_factory=list)  # the files that hold the compacted rows now

    def add(self, other: "CompactStats") -> None:
        """Add ``other``'s counts and files to these."""
        self.merged += other.merged
        self.written += other.written
        self.deleted += other.deleted
        self.files += other.files


def merged_file_metadata(names: Iterable[str]) -> dict[bytes, bytes]:
    """The schema metadata of a merged file that replaces the files ``names`` (base names)."""
    return {REPLACES_KEY: "\n".join(sorted(set(names))).encode("utf-8")}


def _replaces(schema: pa.Schema) -> set[str]:
    value = (schema.metadata or {}).get(REPLACES_KEY, b"")
    return {name for name in value.decode("utf-8").split("\n") if name}


def _read(fs: pafs.FileSystem, file: pafs.FileInfo) -> pa.Table:
    # The whole (small) file in one read, not ranged reads of its footer and each column.
    with fs.open_input_stream(file.path) as stream:
        return pq.read_table(pa.BufferReader(stream.read()))


def _delete(fs: pafs.FileSystem, paths: Sequence[str]) -> int:
    def one(path: str) -> int:
        try:
            fs.delete_file(path)
            return 1
        except FileNotFoundError:  # deleted by an earlier, interrupted attempt
            return 0

    with ThreadPoolExecutor(_THREADS) as pool:
        return sum(pool.map(one, paths))


# Files read ahead of the merged file's writer: bounds the memory a merge holds.
_READ_AHEAD = 64


def _merge(fs: pafs.FileSystem, folder: str, files: Sequence[pafs.FileInfo]) -> CompactStats:
    """Merge ``files`` of one table and day ``folder`` into one file, then delete them. The files
    are read a few at a time and written as they come, so a merge holds little in memory."""
    table_name = posixpath.basename(posixpath.dirname(folder))
    schema = SCHEMAS[table_name]
    paths = [f.path for f in files]
    # A merged file being merged again hands on the names it replaced, in case a killed compaction
    # left some of them behind: they stay out of the views until deleted.
    names = {posixpath.basename(p) for p in paths}.union(
        *(_replaces(pq.read_schema(p, filesystem=fs)) for p in paths if posixpath.basename(p).startswith(MERGED_PREFIX)))
    target = f"{folder}/{MERGED_PREFIX}{now_utc():%H%M%S%f}-{uuid.uuid4().hex}.parquet"
    try:
        with atomic_writer(fs, target, schema.with_metadata(merged_file_metadata(names))) as writer, \
                ThreadPoolExecutor(_THREADS) as pool:
            for start in range(0, len(files), _READ_AHEAD):
                for table in pool.map(lambda f: _read(fs, f), files[start:start + _READ_AHEAD]):
                    # older files gain the columns added since; a column the table does not have,
                    # or values that do not convert to its types, stop the merge
                    writer.write_table(conform(table_name, table))
    except (KeyError, pa.ArrowInvalid) as exc:
        log.warning("%s: a file does not fit the %s table (%s); the folder's files are left as they are",
                    folder, table_name, exc)
        return CompactStats(files=paths)
    return CompactStats(merged=len(paths), written=1, deleted=_delete(fs, paths), files=[target])


def _by_folder(files: Iterable[pafs.FileInfo]) -> dict[str, list[pafs.FileInfo]]:
    folders: dict[str, list[pafs.FileInfo]] = defaultdict(list)
    for file in files:
        folders[posixpath.dirname(file.path)].append(file)
    return {folder: sorted(files, key=lambda f: f.path) for folder, files in folders.items()}


def compact_files(lake: Lake, paths: Sequence[str]) -> CompactStats:
    """Merge the lake files ``paths`` (written by this process), per table and day folder, and
    delete them; a folder with one file is left as it is."""
    fs, _ = lake.filesystem()
    stats = CompactStats()
    for folder, files in sorted(_by_folder(pafs.FileInfo(p, pafs.FileType.File) for p in paths).items()):
        if len(files) > 1:
            stats.add(_merge(fs, folder, files))
        else:
            stats.files.append(files[0].path)
    return stats


# How many files of the run's units (kept aside by the lake for the run's final compaction) a
# folder may hold before they are merged again.
_KEPT_MAX = 8


def compact_written(lake: Lake, final: bool = True) -> CompactStats:
    """Merge the files this process has written to ``lake`` since its last compaction.

    Called when a run or a dispatched unit ends (``final``), and when a unit of a run ends
    (``final=False``): then the result is kept aside, and the next final compaction merges it
    with the rest, so a run leaves one file per table and day; a folder's kept files are merged
    again with its new ones once it keeps ``_KEPT_MAX``, so reads during the run open a few files.
    Never raises: the small files are a correct lake, only a slower one, so a compaction that
    fails (a store that refuses a delete, a full disk) is logged and the files are left for
    ``invarbench compact``.
    """
    paths = lake.take_written()
    kept = lake.take_kept()
    if not final:
        # A query opens every file (about 15 ms each on a local disk, mostly its footer): a folder
        # that already keeps _KEPT_MAX of the run's files merges them with its new ones, so reads
        # stay fast through a long run for a total rewrite of a few seconds at 200,000 items.
        per_folder = Counter(posixpath.dirname(p) for p in kept)
        paths += [p for p in kept if per_folder[posixpath.dirname(p)] >= _KEPT_MAX]
        kept = [p for p in kept if per_folder[posixpath.dirname(p)] < _KEPT_MAX]
    else:
        paths, kept = paths + kept, []
    try:
        stats = compact_files(lake, paths)
    except Exception:  # noqa: BLE001 - see above: the run's data is stored whatever happens here
        log.warning("compaction of %d file(s) in %s failed; they stay as they are", len(paths), lake, exc_info=True)
        stats = CompactStats()
    if not final:  # set aside for the run's final merge, with the kept files a failed merge did not touch
        lake.keep(kept + stats.files)
    if stats.written:
        log.info("compacted %d file(s) into %d", stats.merged, stats.written)
    return stats


def _day(folder: str) -> dt.date | None:
    name = posixpath.basename(folder)
    try:
        return dt.date.fromisoformat(name.removeprefix("day=")) if name.startswith("day=") else None
    except ValueError:
        return None


def compact_lake(lake: Lake, before: dt.date | None = None) -> CompactStats:
    """Compact every day folder of every table before ``before`` (default: yesterday, UTC): delete
    the files a merged file names (left by a killed compaction), then merge what remains of the
    folder into one file. Shows progress per folder. Raises LakeError when the lake is unusable."""
    before = before or (now_utc().date() - dt.timedelta(days=1))
    lake.ensure()
    fs, root = lake.filesystem()
    try:
        listed = {table: fs.get_file_info(pafs.FileSelector(f"{root}/{table}", recursive=True, allow_not_found=True))
                  for table in SCHEMAS}
    except OSError as exc:
        raise unusable_lake(lake.location, exc) from None
    folders = {folder: files for table in SCHEMAS
               for folder, files in _by_folder(i for i in listed[table] if i.type == pafs.FileType.File
                                               and i.path.endswith(".parquet")).items()
               if (day := _day(folder)) is not None and dt.date(1970, 1, 2) <= day < before}
    stats = CompactStats()
    with progress.stage("compact", len(folders)) as advance:
        for folder, files in sorted(folders.items()):
            merged = [f.path for f in files if posixpath.basename(f.path).startswith(MERGED_PREFIX)]
            named = set().union(*(_replaces(pq.read_schema(p, filesystem=fs)) for p in merged))
            leftover = {f.path for f in files if posixpath.basename(f.path) in named}
            stats.deleted += _delete(fs, sorted(leftover))
            remaining = [f for f in files if f.path not in leftover]
            if len(remaining) > 1:
                stats.add(_merge(fs, folder, remaining))
            advance(1)
    return stats
