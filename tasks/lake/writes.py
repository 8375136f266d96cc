"""Appends to the lake: each write one new Parquet file of the table's schema, under a key of its
own, so writers never overwrite each other; the lake notes the file for compaction.
"""

from __future__ import annotations

import uuid
from typing import Any, Sequence

import pyarrow as pa

from tasks.lake.filesystem import atomic_write
from tasks.lake.lake import Lake
from tasks.lake.schemas import SCHEMAS, conform
from tasks.records import now_utc


def write_table(lake: Lake, table: str, data: pa.Table) -> str | None:
    """Append an Arrow table to ``table`` as one new Parquet file, as :func:`write_rows` does with
    dicts (same column rule); returns its path (None when no rows). Every lake write ends here.

    For large derived writes: a rescore of a million responses spent most of its time building
    a dict per row and converting the dicts to Arrow.
    """
    if not data.num_rows:
        return None
    if lake.read_only:
        raise RuntimeError(f"a read-only command tried to write to the lake table {table}")
    data = conform(table, data)
    fs, root = lake.filesystem()
    stamp = now_utc()
    target = f"{root}/{table}/day={stamp:%Y-%m-%d}/part-{stamp:%H%M%S%f}-{uuid.uuid4().hex}.parquet"
    atomic_write(fs, target, data)
    lake.add_written(target)
    return target


def write_rows(lake: Lake, table: str, rows: Sequence[dict[str, Any]]) -> str | None:
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


def stored_item_ids(lake: Lake, item_ids: Sequence[str]) -> set[str]:
    """The ids among ``item_ids`` whose items the lake holds (one set-based query)."""
    return {r["item_id"] for r in lake.read(
        "SELECT DISTINCT item_id FROM raw_items WHERE item_id IN (SELECT unnest(?::VARCHAR[]))", [list(item_ids)])}


def write_new_items(lake: Lake, rows: Sequence[dict[str, Any]]) -> int:
    """Append the item rows the lake does not hold yet (items are content-addressed); returns how many."""
    known = stored_item_ids(lake, [r["item_id"] for r in rows])
    new = [r for r in rows if r["item_id"] not in known]
    write_rows(lake, "items", new)
    return len(new)


def write_memberships(lake: Lake, dataset: str, item_ids: Sequence[str]) -> int:
    """Record that ``dataset`` holds ``item_ids`` (the pairs not recorded yet); returns how many were new."""
    known = {r["item_id"] for r in lake.read(
        "SELECT item_id FROM dataset_items WHERE dataset_id = ?", [dataset])}
    fresh = sorted(set(item_ids) - known)
    created = now_utc()
    write_rows(lake, "dataset_items", [{"dataset_id": dataset, "item_id": i, "created_at": created} for i in fresh])
    return len(fresh)
