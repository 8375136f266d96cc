"""The dedupe/validate stage: drop identical items, then check each batch with Great Expectations.

A failing expectation raises :class:`ValidationFailed` before anything is written or any model
is called; its message lists each failed expectation and for how many rows it failed.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Sequence

import pandas as pd

from tasks.parse import ANSWER_TYPES


class ValidationFailed(RuntimeError):
    """One or more expectations failed on a batch; the message says which and how many rows."""


def dedupe(rows: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Drop rows whose ``item_id`` was already seen (identical content); returns (rows, dropped)."""
    seen: set[str] = set()
    out = []
    for row in rows:
        if row["item_id"] not in seen:
            seen.add(row["item_id"])
            out.append(row)
    return out, len(rows) - len(out)


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
    ]


def _describe(result: Any) -> str:
    cfg = result.expectation_config
    kwargs = {k: v for k, v in cfg.kwargs.items() if k not in ("batch_id", "result_format")}
    unexpected = (result.result or {}).get("unexpected_count")
    element = (result.result or {}).get("element_count")
    rows = f"{unexpected} of {element} rows" if unexpected is not None else "the batch"
    return f"{cfg.type} {kwargs}: failed for {rows}"


def validate_items(rows: Sequence[dict[str, Any]], batch_name: str = "items") -> int:
    """Check a batch of item rows; returns the row count, raises ValidationFailed on any failure."""
    import great_expectations as gx

    if not rows:
        return 0
    frame = pd.DataFrame([{k: r[k] for k in ("item_id", "gold", "prompt", "family_id", "key_entities",
                                              "bin_lo", "bin_hi", "answer_type")} for r in rows])
    context = _context()
    source = context.data_sources.add_or_update_pandas(f"invarbench_{batch_name}")
    asset = source.add_dataframe_asset(name=f"batch_{len(source.assets)}")
    batch = asset.add_batch_definition_whole_dataframe("whole").get_batch(batch_parameters={"dataframe": frame})
    suite = gx.ExpectationSuite(name=f"items_{batch_name}", expectations=_item_expectations())
    result = batch.validate(suite, result_format="SUMMARY")
    failed = [r for r in result.results if not r.success]
    if failed:
        raise ValidationFailed(
            f"{len(failed)} expectation(s) failed on {batch_name} ({len(rows)} items):\n"
            + "\n".join(f"  - {_describe(r)}" for r in failed)
        )
    return len(rows)
