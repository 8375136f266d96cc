"""Answers made durable the moment they arrive: a local append-only spool of responses.

The call stage writes responses to the lake in batches (:class:`ResponseWriter`, by size or time):
one DuckLake commit per response would cost a commit each (tens of milliseconds). A process killed
outright (SIGKILL, the OOM killer) would lose the answers of its current batch, already paid, and
the next sweep would pay for them again. So each response is also appended to a :class:`Spool`
segment, a JSON-lines file on local disk, as it arrives: the ``write`` reaches the kernel at once
and outlives the process; an ``fsync`` every :data:`SYNC_SECONDS` (in a thread) makes it outlive
the machine too. A segment is deleted once its batch is committed to the lake.

A segment is held under an exclusive ``flock`` by the process writing it; the kernel releases the
lock when that process dies, however it dies. The next sweep's call stage first :func:`replay`\\ s
the segments no live process holds into the lake: the responses the lake lacks, those of a request
answered meanwhile left out, so that no request is answered twice.

A local lake's spool is ``<lake>/spool/``; an object-store lake's is a folder of this machine's
temporary directory named after the lake's URL and catalog (a sweep on another machine cannot see it: its answers
are paid again there, as before).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import fcntl
import hashlib
import json
import logging
import os
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from tasks.lake.lake import Lake
from tasks.lake.writes import write_rows
from tasks.models.call import lookup_ledger
from tasks.records import Response

log = logging.getLogger(__name__)

SYNC_SECONDS = 0.05  # how long an answer may sit in the page cache before it is on disk
# A file of responses is written by size or time (``[sweep] flush_s``, 10 s by default), and a
# group of the stream's chunks drains the buffer when its calls end (tasks.models.stream), so the
# Finisher never waits on these. Every read of the ledger opens every response file: 500 rows or
# 2 s a file made 514 files at 200,000 responses, and each look-up, claims read and parse cost
# twice what it did over one file (bench/results.md, "files"). A response is in the spool from
# its arrival, so a longer wait for its file loses nothing; only the lake sees it later.
FLUSH_ROWS = 4000  # responses per file at most (a call group's trials: tasks.models.stream.GROUP_TRIALS)
_REPLAYING = threading.Lock()  # one replay at a time in a process: another stream waits for it


def spool_dir(lake: Lake) -> Path:
    """Where the lake's spool segments live on this machine (see the module's docstring)."""
    if not lake.is_url:
        return Path(lake.root) / "spool"
    # Named after the URL and the catalog: an object-store lake is its catalog as much as its data
    # path, and two lakes at one URL (two S3 endpoints, or a lake made again there with a new
    # catalog) must not replay each other's answers (they would be responses without a request).
    name = f"{lake.root}\n{lake.catalog}"
    return Path(tempfile.gettempdir()) / "invarbench-spool" / hashlib.sha256(name.encode()).hexdigest()[:16]


class Spool:
    """One segment: responses appended as JSON lines, held under an exclusive lock while open.

    A segment that cannot be written (a full or read-only disk) is given up with one warning: its
    answers still reach the lake by the call stage's batch, as they would without a spool.
    """

    def __init__(self, lake: Lake):
        self._lock = threading.Lock()
        self._dirty = False
        self.fd: int | None = None
        folder = spool_dir(lake)
        self.path = folder / f"{uuid.uuid4().hex}.jsonl"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except OSError as exc:
            self._give_up(exc)

    def _give_up(self, exc: OSError) -> None:
        # Called with the lock held (or before anyone else sees the segment).
        log.warning("spool %s: %s; answers wait in memory for their batch until it is written", self.path, exc)
        self._close(keep=False)

    def add(self, row: dict[str, Any]) -> None:
        """Append one response row (its batch not yet in the lake)."""
        with self._lock:
            if self.fd is None:
                return
            try:
                os.write(self.fd, (json.dumps(row, default=_iso) + "\n").encode())
                self._dirty = True
            except OSError as exc:
                self._give_up(exc)

    def sync(self) -> None:
        """Put what was appended since the last sync on disk."""
        with self._lock:
            if self.fd is not None and self._dirty:
                self._dirty = False
                os.fsync(self.fd)

    def close(self, keep: bool) -> None:
        """Close the segment: deleted (its batch is in the lake), or kept for :func:`replay`."""
        with self._lock:
            self._close(keep)

    def _close(self, keep: bool) -> None:
        if self.fd is None:
            return
        if not keep:
            self.path.unlink(missing_ok=True)  # before the lock goes: a replayer never finds it half-gone
        os.close(self.fd)
        self.fd = None


class ResponseWriter:
    """Buffers responses and writes them as one file by size (``FLUSH_ROWS``) or every ``flush_s``
    seconds (the sweep's ``[sweep] flush_s``), in a thread; each response is also in a spool
    segment (tasks.models.spool) from its arrival until its file is committed."""

    def __init__(self, lake: Lake, flush_s: float):
        self.lake, self.flush_s = lake, flush_s
        self.buffer: list[dict[str, Any]] = []
        self.segment: Spool | None = None  # holds what the buffer holds
        self.writes: set[asyncio.Future[Any]] = set()

    def add(self, resp: Response) -> None:
        """Buffer one response (spooled at once); a full buffer is written at once."""
        row = resp.row()
        if self.segment is None:
            self.segment = Spool(self.lake)
        self.segment.add(row)
        self.buffer.append(row)
        if len(self.buffer) >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        """Start writing what is buffered, without waiting for it."""
        if self.buffer:
            assert self.segment is not None
            rows, segment, self.buffer, self.segment = self.buffer, self.segment, [], None
            write = asyncio.ensure_future(asyncio.to_thread(self._write, rows, segment))
            self.writes.add(write)

    def _write(self, rows: list[dict[str, Any]], segment: Spool) -> None:
        failed = True  # then the segment is kept: the next sweep stores its answers
        try:
            write_rows(self.lake, "responses", rows)
            failed = False
        finally:
            segment.close(keep=failed)

    async def tick(self) -> None:
        """Write what is buffered every ``flush_s`` seconds (a slow model's answers are not held back),
        and put the spool on disk every SYNC_SECONDS."""
        last_flush = time.monotonic()
        while True:
            await asyncio.sleep(SYNC_SECONDS)
            if self.segment is not None:
                await asyncio.to_thread(self.segment.sync)
            if time.monotonic() - last_flush >= self.flush_s:
                last_flush = time.monotonic()
                self.flush()

    async def drain(self) -> None:
        """Write what is buffered and wait for every write started so far, another drain's too (its rows may hold ours)."""
        self.flush()
        writes = list(self.writes)
        await asyncio.gather(*writes)
        self.writes.difference_update(writes)


def _iso(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    raise TypeError(f"cannot spool {type(value).__name__}")


def _rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # the last line of a process killed mid-write: its answer was never whole
        row["created_at"] = dt.datetime.fromisoformat(row["created_at"])
        rows.append(row)
    return rows


def _store(lake: Lake, rows: list[dict[str, Any]]) -> int:
    """Write the rows the lake lacks: neither the row itself (its batch was committed before the
    segment was deleted) nor, for an ``ok`` row, another ``ok`` answer to its request."""
    if not rows:
        return 0
    stored = {r["response_id"] for r in lake.read(
        "SELECT response_id FROM raw_responses WHERE response_id IN (SELECT unnest(?::VARCHAR[]))",
        [[r["response_id"] for r in rows]])}
    answered = lookup_ledger(lake, [r["request_id"] for r in rows if r["status"] == "ok"])
    fresh = [r for r in rows if r["response_id"] not in stored and not (r["status"] == "ok" and r["request_id"] in answered)]
    write_rows(lake, "responses", fresh)
    return len(fresh)


def replay(lake: Lake) -> int:
    """Store the answers of the spool segments no live process holds, then delete them; returns how
    many responses were written. Runs before the call stage looks anything up in the ledger."""
    folder = spool_dir(lake)
    if not folder.is_dir():
        return 0
    written = 0
    with _REPLAYING:
        for path in sorted(folder.glob("*.jsonl")):
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue  # deleted by its writer meanwhile
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live sweep writes it
                if os.fstat(fd).st_nlink == 0:
                    continue  # deleted while this waited: its batch is in the lake
                n = _store(lake, _rows(path))
                if n:
                    log.warning("stored %d answer(s) that a stopped sweep had received but not written (%s)", n, path.name)
                written += n
                path.unlink()
            finally:
                os.close(fd)
    return written
