"""The generate stage: items for every configured task, as rows ready for the lake.

A dataset is one task's items for one parameter set and seed; its id is the content hash of
(generator, version, parameters, seed), so the same configuration names the same dataset. An
imported dataset's id hashes the items it holds (:func:`imported_dataset_id`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any, Sequence

from tasks.items.features import feature_row
from tasks.records import Item, Step, canonical_json, content_hash, now_utc
from tasks.suites import get_task


def dataset_id(suite: str, task: str, version: str, params: dict[str, Any], seed: int) -> str:
    """Content hash naming one task's dataset."""
    return content_hash({"suite": suite, "task": task, "version": version, "params": params, "seed": seed})


def generate_task(suite: str, task: str, params: dict[str, Any], seed: int) -> tuple[str, list[Item]]:
    """Run one generator; returns (dataset id, items)."""
    spec = get_task(suite, task)
    resolved = spec.resolve(params)
    return dataset_id(suite, task, spec.version, resolved, seed), spec.generate(resolved, seed)


def item_row(item: Item, dataset: str, features: bool = True) -> dict[str, Any]:
    """The lake row of an item: every column of docs/data-model.md#items, messages and steps as JSON,
    surface features (without ``features``, left for :func:`tasks.items.features.add_features`)."""
    row = {
        "item_id": item.item_id,
        "dataset_id": dataset,
        "suite": item.suite,
        "task": item.task,
        "family_id": item.family_id,
        "variant": item.variant,
        "prompt_style": item.prompt_style,
        "category": item.category,
        "key_entities": item.key_entities,
        "bin": item.bin,
        "bin_lo": item.bin_lo,
        "bin_hi": item.bin_hi,
        "prompt": item.prompt,
        "messages": json.dumps([{"role": r, "content": c} for r, c in item.messages], ensure_ascii=False),
        "steps": json.dumps([asdict(s) for s in item.steps], ensure_ascii=False),
        "solver": item.solver,
        "gold": item.gold,
        "answer_type": item.answer_type,
        "generator": item.generator,
        "generator_version": item.generator_version,
        "seed": item.seed,
        "params": canonical_json(item.params),
    }
    if features:
        row.update(feature_row(item.prompt))
    row["created_at"] = now_utc()
    return row


# The columns of an item row that are Item fields stored as they are (messages, steps, params are JSON).
_PLAIN_FIELDS = tuple(f.name for f in fields(Item) if f.name not in ("messages", "steps", "params"))


def item_from_row(row: dict[str, Any]) -> Item:
    """The item a lake row written by :func:`item_row` stores (its inverse), so that the row's
    ``item_id`` can be checked against its content (``tasks.check``)."""
    return Item(**{name: row[name] for name in _PLAIN_FIELDS},
                messages=tuple((m["role"], m["content"]) for m in json.loads(row["messages"])),
                steps=tuple(Step(**s) for s in json.loads(row["steps"])), params=json.loads(row["params"]))


def imported_dataset_id(kind: str, item_ids: Sequence[str]) -> str:
    """The id of an imported dataset: a hash of the items it holds, never of the file's bytes, so a
    BOM, other line endings or an extra column name the same dataset, and the id selects exactly
    the items imported (through the ``dataset_items`` memberships)."""
    return content_hash({"imported": kind, "items": sorted(set(item_ids))})


def family_rows(path: str, prompt_styles: Sequence[str]) -> tuple[str, list[dict[str, Any]]]:
    """Item rows of an imported parallel set (geometry) and the id of the dataset they make up.

    Raises ImportFamiliesError (naming rows and columns) before any row is built.
    """
    from tasks.suites.geometry.imported import load_families

    items = load_families(path, prompt_styles)
    dataset = imported_dataset_id("geometry.imported", [item.item_id for item in items])
    return dataset, [item_row(item, dataset) for item in items]
