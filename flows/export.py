"""``invarbench export``: the items a sweep would run, written in another tool's format.

The items are chosen as a sweep chooses them (the configuration, narrowed by ``--suite``,
``--task``, ``--dataset``), deduplicated and validated as the sweep does, then stored in the
lake (items are content-addressed, so a stored item is kept as it is): the import of the other
tool's results finds them there by the item id the export wrote (:mod:`tasks.interop`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flows.stages import load_datasets
from tasks.config import Config
from tasks.interop.inspect import export_inspect
from tasks.items.generate import generate_task, item_row
from tasks.items.validate import dedupe, validate_items
from tasks.lake.lake import Lake
from tasks.lake.writes import write_new_items

EXPORTERS = {"inspect": export_inspect}


def selected_rows(cfg: Config) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Item rows of what ``cfg`` (already narrowed by :meth:`Config.select`) runs, deduplicated,
    and the families dropped for repeating a prompt of another (:func:`dedupe`)."""
    rows: list[dict[str, Any]] = []
    for suite, task in cfg.selected_tasks():
        dataset, items = generate_task(suite, task, cfg.task_params(suite, task), cfg.sweep.seed)
        rows.extend(item_row(i, dataset) for i in items)
    if cfg.sweep.datasets:
        rows.extend(load_datasets.fn(Lake.of(cfg), cfg.sweep.datasets))
    kept, _, dropped = dedupe(rows)
    return kept, dropped


def export_items(cfg: Config, fmt: str, out: Path) -> dict[str, Any]:
    """Validate, store and write the selected items in ``fmt``; returns counts and the families
    dropped for repeating a prompt of another (``dropped_families``, as a sweep drops them).
    Raises ValidationFailed, ConfigError or GeneratorError before anything is written."""
    rows, dropped = selected_rows(cfg)
    validate_items(rows, batch_name="export", distinct_problems=True)
    stored = write_new_items(Lake.of(cfg), rows)
    return {**EXPORTERS[fmt](rows, out), "items": len(rows), "stored": stored, "out": str(out),
            "dropped_families": dropped}
