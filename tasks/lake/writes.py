"""Appends to the lake: each write one DuckLake commit (``Lake.commit``) of rows of the table's
schema, marked with the run that wrote it when its rows name one run."""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from tasks.lake.lake import Lake
from tasks.lake.schemas import SCHEMAS, conform
from tasks.records import now_utc


def write_table(lake: Lake, table: str, data: pa.Table) -> int | None:
    """Append an Arrow table to ``table`` in one commit, as :func:`write_rows` does with dicts
    (same column rule: a rescore of a million responses spent most of its time making dicts);
    returns its snapshot id (None when no rows). Every lake write ends here."""
    if not data.num_rows:
        return None
    data = conform(table, data)
    run_ids = pc.unique(data["run_id"]).drop_null() if "run_id" in data.column_names else []
    return lake.commit(table, data, run_ids[0].as_py() if len(run_ids) == 1 else None)


def write_rows(lake: Lake, table: str, rows: Sequence[dict[str, Any]]) -> int | None:
    """Append ``rows`` to ``table`` in one commit; returns its snapshot id (None when no rows).
    Columns follow the table's schema exactly: a missing column is null, an unknown one an error."""
    if not rows:
        return None
    return write_table(lake, table, rows_table(table, rows))


def rows_table(table: str, rows: Sequence[dict[str, Any]]) -> pa.Table:
    """``rows`` as an Arrow table of ``table``'s schema, exactly as :func:`write_rows` writes them:
    a missing column is null, an unknown one a KeyError."""
    schema = SCHEMAS[table]
    if rows and (extra := set(rows[0]) - set(schema.names)):
        raise KeyError(f"{table}: unknown columns {sorted(extra)}")
    return pa.Table.from_pylist([{n: r.get(n) for n in schema.names} for r in rows], schema=schema)


def stored_item_ids(lake: Lake, item_ids: Sequence[str]) -> set[str]:
    """The ids among ``item_ids`` whose items the lake holds (one set-based query)."""
    return {r["item_id"] for r in lake.read(
        "SELECT DISTINCT item_id FROM raw_items WHERE item_id IN (SELECT unnest(?::VARCHAR[]))", [list(item_ids)])}


def write_new_items(lake: Lake, rows: Sequence[dict[str, Any]] | pa.Table) -> int:
    """Append the item rows (dicts, or a table of the ``items`` schema) the lake does not hold yet
    (items are content-addressed); returns how many."""
    table = rows if isinstance(rows, pa.Table) else rows_table("items", rows)
    known = stored_item_ids(lake, table.column("item_id").to_pylist())
    new = table.filter(pc.invert(pc.is_in(table.column("item_id"), pa.array(sorted(known), pa.string()))))
    write_table(lake, "items", new)
    return new.num_rows


def write_memberships(lake: Lake, dataset: str, item_ids: Sequence[str]) -> int:
    """Record that ``dataset`` holds ``item_ids`` (the pairs not recorded yet); returns how many were new."""
    known = {r["item_id"] for r in lake.read(
        "SELECT item_id FROM dataset_items WHERE dataset_id = ?", [dataset])}
    fresh = sorted(set(item_ids) - known)
    created = now_utc()
    write_rows(lake, "dataset_items", [{"dataset_id": dataset, "item_id": i, "created_at": created} for i in fresh])
    return len(fresh)
