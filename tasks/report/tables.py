"""The report's HTML tables and the formatting of their cells (counts as integers, intervals as
``estimate [lo, hi]``).
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import polars as pl

MAX_TABLE_ROWS = 200


def missing(value: Any) -> bool:
    """Whether a cell is missing: a NULL of the view, or a NaN of a float computed from one."""
    # load() turns NaN into NULL; a NaN still arrives from floats computed in Python.
    return value is None or (isinstance(value, float) and math.isnan(value))


def _cell(value: Any) -> str:
    if isinstance(value, (list, tuple, np.ndarray)):
        return ", ".join(str(v) for v in value)
    if missing(value):
        return ""
    if isinstance(value, (float, np.floating)):
        return f"{value:.3g}" if abs(value) < 1e-3 and value != 0 else f"{value:.3f}"
    return str(value)


def _is_count(column: str) -> bool:
    return column.startswith("n_") or column in ("n", "b", "c", "k", "bin_lo", "gold_value")


def html_table(frame: pl.DataFrame, caption: str = "") -> str:
    """An HTML table of ``frame`` (at most MAX_TABLE_ROWS rows; the rest is counted).

    Count columns (``n_*``, ``b``, ``c``, ``k``) print as integers even where a SQL sum made
    them floats.
    """
    if frame.is_empty():
        return f"<p class='note'>{html.escape(caption)}: no rows.</p>" if caption else ""
    shown = frame.head(MAX_TABLE_ROWS)
    shown = shown.with_columns(pl.col(c).cast(pl.Int64, strict=False) for c in shown.columns
                               if _is_count(c) and shown.schema[c].is_numeric())
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in shown.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>"
        for row in shown.iter_rows()
    )
    more = (f"<p class='note'>{frame.height - MAX_TABLE_ROWS} more rows not shown; query the view "
            "for all of them.</p>" if frame.height > MAX_TABLE_ROWS else "")
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<div class='scroll'><table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{more}"


def interval(estimate: Any, lo: Any, hi: Any) -> str:
    """``0.750 [0.600, 0.880]``, or blank when there is no estimate."""
    if missing(estimate):
        return ""
    if missing(lo):
        return f"{estimate:.3f}"
    return f"{estimate:.3f} [{lo:.3f}, {hi:.3f}]"


def interval_column(name: str, frame: pl.DataFrame, estimate: str, lo: str, hi: str) -> pl.Series:
    """Column ``name``: :func:`interval` of each row's ``estimate``, ``lo`` and ``hi``."""
    return pl.Series(name, [interval(*v) for v in zip(frame[estimate], frame[lo], frame[hi])], dtype=pl.String)


def invariance_table(invariance: pl.DataFrame, intervals: pl.DataFrame) -> pl.DataFrame:
    """The invariance view joined with the bootstrap intervals of Invariance@k and Consistency@k."""
    if invariance.is_empty():
        return pl.DataFrame()
    keys = ["model", "suite", "task", "category", "prompt_style", "k"]
    table = invariance.with_columns(variants_key=pl.col("variants").list.join(","))
    for metric in ("invariance", "consistency"):
        part = intervals.filter(pl.col("metric") == metric).select(
            *keys, pl.col("variant").alias("variants_key"), pl.col("estimate").alias(metric),
            pl.col("ci_lo").alias(f"{metric}_lo"), pl.col("ci_hi").alias(f"{metric}_hi"))
        table = table.join(part, on=keys + ["variants_key"], how="left", nulls_equal=True, maintain_order="left")
    return table
