"""The dedupe/validate stage: drop repeated problems, then check each chunk with Great Expectations.

Dedupe keeps one copy of identical items and, within a suite, one family per problem: a family
with a prompt that an earlier family already has (the same problem drawn twice, or stated alike
by two templates) is dropped whole, and the sweep says which. Variants of one family may share a
prompt (an imported family stating two representations alike, a random position that fell on
the fixed one); they stay, as they are one problem's variants.

A failing expectation raises :class:`ValidationFailed` before anything is written or any model
is called; its message lists each failed expectation and for how many rows it failed. Besides
the columns' own checks, validation fails on a prompt shared by two families of a suite (with
``distinct_problems``) and on a geometry item whose figure is degenerate.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any, Mapping, Sequence

from tasks.scoring.parse import ANSWER_TYPES


class ValidationFailed(RuntimeError):
    """One or more expectations failed on a set of items; the message says which and how many rows."""


def _family(row: dict[str, Any]) -> tuple[str, str, str]:
    return (row["suite"], row["task"], row["family_id"])


def dedupe(rows: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], int, list[dict[str, Any]]]:
    """Drop repeated items and repeated problems; returns (rows, identical items dropped,
    families dropped).

    An item whose ``item_id`` was already seen is identical content. Then, in order of first
    appearance, a family is kept only when none of its prompts belongs to a family kept before
    it in the same suite; otherwise the whole family is dropped and reported as a dict (suite,
    task, family_id, duplicate_of_task, duplicate_of_family, prompt).

    Dict rows (an export's) are decided as :func:`dedupe_table` decides a sweep's table, by the
    same code: the rows kept are the dicts given, in order.
    """
    import pyarrow as pa

    columns = pa.table({c: pa.array([r[c] for r in rows], pa.string()) for c in _DEDUPE_COLUMNS})
    kept, identical, dropped = _kept(columns)
    return [rows[i] for i in kept], identical, dropped


def dedupe_table(table: Any) -> tuple[Any, int, list[dict[str, Any]]]:
    """:func:`dedupe` of item rows held as an Arrow table (tasks.items.compact): the same rows
    kept, in the same order, and the table itself when none is dropped."""
    import pyarrow as pa

    kept, identical, dropped = _kept(table)
    if len(kept) == table.num_rows:
        return table, identical, dropped
    mask = [False] * table.num_rows
    for i in kept:
        mask[i] = True
    return table.filter(pa.array(mask)), identical, dropped  # filter keeps the table's slices


# The columns that decide what :func:`dedupe` keeps.
_DEDUPE_COLUMNS = ("item_id", "suite", "task", "family_id", "prompt")


def _kept(table: Any) -> tuple[list[int], int, list[dict[str, Any]]]:
    """What :func:`dedupe` keeps of ``table``'s rows: their positions, how many identical items
    were dropped, and the families dropped. Read a slice at a time, prompts held as hashes only;
    the few families that share a hash with another family of their suite are then decided by
    their prompts' texts (a family that shares no prompt with another is kept whatever the
    others do)."""
    import pyarrow as pa

    ids: list[str] = []
    families: list[tuple[str, str, str]] = []
    hashes: list[int] = []
    for batch in table.select(list(_DEDUPE_COLUMNS)).to_batches(max_chunksize=1_000):
        for item_id, suite, task, family_id, prompt in zip(*(c.to_pylist() for c in batch.columns)):
            ids.append(item_id)
            families.append((suite, task, family_id))
            hashes.append(hash((suite, prompt)))
    unique = _unique(ids)
    of_hash: dict[int, set[tuple[str, str, str]]] = {}
    for i in unique:
        of_hash.setdefault(hashes[i], set()).add(families[i])
    shared = {f for fams in of_hash.values() if len(fams) > 1 for f in fams}  # equal hash: maybe one prompt
    candidates = [i for i in unique if families[i] in shared]
    texts = table.column("prompt").take(pa.array(candidates, pa.int64())).to_pylist() if candidates else []
    dropped = _repeated_families(candidates, families, dict(zip(candidates, texts)))
    gone = {(d["suite"], d["task"], d["family_id"]) for d in dropped}
    return [i for i in unique if families[i] not in gone], len(ids) - len(unique), dropped


def dropped_family(d: dict[str, Any]) -> str:
    """What a sweep and an export say of a family :func:`dedupe` dropped (one of its dicts)."""
    return (f"dropped family {d['family_id']} of {d['suite']}.{d['task']}: it repeats a prompt of family "
            f"{d['duplicate_of_family']} of {d['suite']}.{d['duplicate_of_task']}")


def _unique(ids: Sequence[str]) -> list[int]:
    """The positions of the first row of each ``item_id``, in order."""
    seen: set[str] = set()
    unique = []
    for i, item_id in enumerate(ids):
        if item_id not in seen:
            seen.add(item_id)
            unique.append(i)
    return unique


def _repeated_families(rows: Sequence[int], families: Sequence[tuple[str, str, str]],
                       prompts: Mapping[int, str]) -> list[dict[str, Any]]:
    """The families of ``rows`` (positions into ``families`` and ``prompts``) that :func:`dedupe`
    drops, in order of first appearance."""
    texts_of: dict[tuple[str, str, str], list[str]] = {}
    for i in rows:
        texts_of.setdefault(families[i], []).append(prompts[i])
    owner: dict[tuple[str, str], tuple[str, str, str]] = {}
    dropped: list[dict[str, Any]] = []
    for family, texts in texts_of.items():
        clash = next((t for t in texts if owner.get((family[0], t), family) != family), None)
        if clash is not None:
            first = owner[(family[0], clash)]
            dropped.append({"suite": family[0], "task": family[1], "family_id": family[2],
                            "duplicate_of_task": first[1], "duplicate_of_family": first[2], "prompt": clash})
            continue
        for t in texts:
            owner[(family[0], t)] = family
    return dropped


@functools.lru_cache(maxsize=1)
def _context():
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # GE draws progress bars per validation and logs usage hints; the pipeline reports itself.
    for name in [n for n in logging.root.manager.loggerDict if n.startswith("great_expectations")]:
        logging.getLogger(name).setLevel(logging.ERROR)
    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    return context


def prepare() -> None:
    """Import Great Expectations and make its context now, not at the first validation (a sweep
    does it while Prefect's temporary server boots in its own process)."""
    _context()


def _item_expectations() -> list[Any]:
    import great_expectations as gx

    E = gx.expectations
    return [
        E.ExpectColumnValuesToBeUnique(column="item_id"),
        E.ExpectColumnValuesToNotBeNull(column="gold"),
        E.ExpectColumnValueLengthsToBeBetween(column="gold", min_value=1),
        E.ExpectColumnValuesToNotBeNull(column="prompt"),
        E.ExpectColumnValueLengthsToBeBetween(column="prompt", min_value=1),
        E.ExpectColumnValuesToNotBeNull(column="family_id"),
        E.ExpectColumnValuesToNotBeNull(column="key_entities"),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="key_entities", column_B="bin_lo", or_equal=True),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="bin_hi", column_B="key_entities", or_equal=True),
        E.ExpectColumnValuesToBeInSet(column="answer_type", value_set=sorted(ANSWER_TYPES)),
        E.ExpectColumnValuesToBeInSet(column="well_formed", value_set=[True]),
    ]


def _describe(result: Any) -> str:
    cfg = result.expectation_config
    kwargs = {k: v for k, v in cfg.kwargs.items() if k not in ("batch_id", "result_format")}
    unexpected = (result.result or {}).get("unexpected_count")
    element = (result.result or {}).get("element_count")
    rows = f"{unexpected} of {element} rows" if unexpected is not None else "the items"
    return f"{cfg.type} {kwargs}: failed for {rows}"


@functools.lru_cache(maxsize=4096)
def _figure_problem(template: str, config: str) -> str | None:
    from tasks.suites.geometry import figure_problem

    return figure_problem(template, json.loads(config))


def well_formed(row: dict[str, Any]) -> bool:
    """False for a generated geometry item whose figure is degenerate (its ``params`` hold the
    template and configuration); True for every other item."""
    if row.get("suite") != "geometry":
        return True
    params = row.get("params")
    params = json.loads(params) if isinstance(params, str) else (params or {})
    if "template" not in params or "points" not in (params.get("config") or {}):
        return True  # imported families carry no figure to check
    return _figure_problem(params["template"], json.dumps(params["config"], sort_keys=True)) is None


def families_per_prompt(rows: Sequence[dict[str, Any]]) -> list[int]:
    """For each row, the number of families of its suite whose items have its prompt (1 when the
    problem is distinct)."""
    families: dict[tuple[str, str], set[tuple[str, str, str]]] = {}
    for row in rows:
        families.setdefault((row["suite"], row["prompt"]), set()).add(_family(row))
    return [len(families[(row["suite"], row["prompt"])]) for row in rows]


def validate_items(rows: Sequence[dict[str, Any]], batch_name: str = "items", *,
                   distinct_problems: bool = False) -> int:
    """Check item rows (a sweep's chunk, an import); returns the row count, raises ValidationFailed on any failure.

    With ``distinct_problems`` (the sweep, after :func:`dedupe`) a prompt shared by two families
    of a suite fails the check; imports leave it off, as a published file is what it is.
    """
    import great_expectations as gx
    import pandas as pd

    if not rows:
        return 0
    frame = pd.DataFrame([{k: r[k] for k in ("item_id", "gold", "prompt", "family_id", "key_entities",
                                              "bin_lo", "bin_hi", "answer_type")} for r in rows])
    frame["well_formed"] = [well_formed(r) for r in rows]
    expectations = _item_expectations()
    if distinct_problems:
        frame["families_per_prompt"] = families_per_prompt(rows)
        expectations.append(gx.expectations.ExpectColumnValuesToBeBetween(
            column="families_per_prompt", min_value=1, max_value=1))
    context = _context()
    source = context.data_sources.add_or_update_pandas(f"invarbench_{batch_name}")
    try:
        asset = source.add_dataframe_asset(name=f"batch_{len(source.assets)}")
        batch = asset.add_batch_definition_whole_dataframe("whole").get_batch(batch_parameters={"dataframe": frame})
        suite = gx.ExpectationSuite(name=f"items_{batch_name}", expectations=expectations)
        result = batch.validate(suite, result_format="SUMMARY")
    finally:
        # The context lives as long as the process and each data source keeps its batches' frames:
        # about 2.5 MB a 1,000-item chunk, so 0.5 GB over a 200,000-item sweep, until it ended.
        context.data_sources.delete(source.name)
    failed = [r for r in result.results if not r.success]
    if failed:
        raise ValidationFailed(
            f"{len(failed)} expectation(s) failed on {batch_name} ({len(rows)} items):\n"
            + "\n".join(f"  - {_describe(r)}" for r in failed)
        )
    return len(rows)
