"""A sweep's item rows kept compact (issue #26, figure 9): as Arrow tables of the lake's ``items``
schema from generation to storage, made into Python dicts a slice at a time, when a chunk is
validated or read by the calls, and never all at once.

The dicts of 200,000 items held about 0.67 GB in a sweep (3.4 KB a row), the same rows in Arrow
about 0.37 GB (bench/results.md, "items-compact"), and Python's heap keeps the memory of dicts it
has freed for the process's life while Arrow's pool returns it. A table here is built in slices
of :data:`SLICE` rows, so that a chunk cut from it (:func:`table_chunks`) holds its slices' buffers
only and a chunk replaced by its validated copy frees them.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Sequence, overload

import pyarrow as pa

from tasks.lake.writes import rows_table

# Rows made into dicts, or from dicts into Arrow, at once: small against a chunk's table, large
# enough that Arrow's per-call cost does not show.
SLICE = 1_000


def items_table(rows: Sequence[Any], row_of: Callable[[Any], dict[str, Any]] = lambda row: row) -> pa.Table:
    """``row_of(r)`` for each of ``rows`` as a table of the lake's ``items`` schema (the conversion
    the lake's writes make, :func:`tasks.lake.writes.rows_table`), built :data:`SLICE` rows at a
    time so that no more dicts than that are alive at once."""
    parts = [rows_table("items", [row_of(r) for r in rows[i : i + SLICE]]) for i in range(0, len(rows), SLICE)]
    return pa.concat_tables(parts) if parts else rows_table("items", [])


def table_chunks(table: pa.Table, size: int) -> list[pa.Table]:
    """``table`` in consecutive chunks of at most ``size`` rows (views of its buffers, no copy)."""
    return [table.slice(i, size) for i in range(0, table.num_rows, size)]


def consecutive_groups(sizes: Sequence[int], limit: int) -> list[list[int]]:
    """The positions of ``sizes`` in consecutive groups whose sizes add up to at most ``limit``
    (a larger one, or any with ``limit`` 0, is a group of its own)."""
    groups: list[list[int]] = []
    total = 0
    for position, size in enumerate(sizes):
        if limit and groups and total + size <= limit:
            groups[-1].append(position)
            total += size
        else:
            groups.append([position])
            total = size
    return groups


def item_ids(table: pa.Table) -> list[str]:
    """The ``item_id`` of every row of ``table``, in order."""
    return table.column("item_id").to_pylist()


def pack(table: pa.Table) -> pa.Buffer:
    """``table`` as one zstd-compressed Arrow IPC stream: a chunk's item rows in about a ninth of
    their Arrow size (prompts and messages are templated text)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
        writer.write_table(table)
    return sink.getvalue()


def unpack(packed: pa.Buffer) -> pa.Table:
    """The table :func:`pack` packed."""
    return pa.ipc.open_stream(packed).read_all()


class ItemRows(Sequence[dict[str, Any]]):
    """The rows of an Arrow table, held packed (:func:`pack`) and read as dicts made when they
    are read (a slice at a time when iterated) and not kept: what a caller that reads rows gets
    instead of a list of them."""

    __slots__ = ("packed", "n")

    def __init__(self, table: pa.Table):
        self.packed, self.n = pack(table), table.num_rows

    @property
    def table(self) -> pa.Table:
        """The rows as a table (unpacked anew)."""
        return unpack(self.packed)

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for batch in self.table.to_batches(max_chunksize=SLICE):
            yield from batch.to_pylist()

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return list(self)[index]
        if not -self.n <= index < self.n:
            raise IndexError(index)
        return self.table.slice(index % self.n, 1).to_pylist()[0]


def concat(tables: Iterable[pa.Table]) -> pa.Table:
    """Tables of the ``items`` schema one after another (their buffers shared, not copied)."""
    tables = list(tables)
    return pa.concat_tables(tables) if tables else rows_table("items", [])
