"""What the report reads: one frame per query over the marts, from a connection of its own that
reads the lake as of one snapshot (:func:`connect`).
"""

from __future__ import annotations

import contextlib
from typing import Any

import polars as pl

from tasks.lake.ducklake import attached, current_snapshot
from tasks.lake.materialised import is_current

# Every table of one report shows the same state of the lake, even while a sweep writes: the
# report's connection attaches the lake at its latest snapshot (DuckLake's SNAPSHOT_VERSION), which
# costs nothing, where copying the shared views into memory did (6.4 GB at 10,000,000 responses).
#
# The marts the report reads share intermediate views, and DuckDB derives a view again in every
# query that reads it. While the lake's materialised tables are current those views read stored
# tables, and only paired_tests, which both McNemar tables read and which pairs the stored outcome
# counts, is worth taking once. While they are not (a refresh pending), trial_scores sits under
# every metric, family_trials under the flip patterns, invariance and McNemar tests (through the
# counts of family units and questions) and each would be derived from the raw lake again in every
# query: at a million scored responses that repetition was most of the report's time
# (bench/PROFILE.md). So the report's connection takes the views it repeats once, in this order
# (each reads the ones before), as a temporary table of the same name: DuckDB looks names up in the
# temporary schema first, so every view above reads the copy. The definitions stay the views' own.
SNAPSHOT = ("items", "trial_scores", "family_trials", "family_units", "item_outcomes", "family_unit_counts",
            "unit_outcome_counts", "question_outcome_counts", "paired_tests")
# What is taken once while the materialised tables are current.
CURRENT_SNAPSHOT = ("paired_tests",)


def snapshot_intermediates(con) -> None:
    """Take the shared views the report's queries would derive again on ``con`` as same-named
    temporary tables (taken afresh when called again): :data:`CURRENT_SNAPSHOT` while the lake's
    materialised tables are current, else every view of :data:`SNAPSHOT`."""
    for name in SNAPSHOT:  # an earlier snapshot would otherwise feed the new one
        con.execute(f"DROP TABLE IF EXISTS temp.{name}")
    for name in CURRENT_SNAPSHOT if is_current(con) else SNAPSHOT:
        con.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM main.{name}")


def connect(lake):
    """The report's own connection, with the views it reads: the lake as of its latest snapshot
    (read-only; the caller closes it)."""
    with contextlib.closing(lake.connect("")) as latest:
        snapshot = current_snapshot(latest) if attached(latest) else None
    sql = " ".join([*SNAPSHOT, *QUERIES.values()])  # only the views the report reads
    if snapshot is None:  # a read-only lake that has no catalog yet: its views read empty tables
        return lake.connect(sql)
    return lake.connect(sql, at=snapshot)


def _frame(con, sql: str, params: list[Any] | None = None) -> pl.DataFrame:
    frame = con.sql(sql, params=params or None).pl()
    # SQL sums of integers arrive as DECIMAL: numbers here, as every other count and measure.
    # A NaN stands for a missing value, as a NULL does.
    return frame.with_columns(pl.col(pl.Decimal).cast(pl.Float64)).with_columns(
        pl.col(pl.Float32, pl.Float64).fill_nan(None))


# Every frame the report draws from, and its query over the metric views (``breaking`` takes the
# breaking threshold as its parameter).
QUERIES = {
    "by_bin": "SELECT * FROM accuracy_by_task_bin",
    "by_n": "SELECT * FROM accuracy_by_n",
    "outcomes": "SELECT * FROM outcomes_by_task ORDER BY ALL",
    "flips": "SELECT * FROM flip_patterns",
    "invariance": "SELECT * FROM invariance",
    "intervals": "SELECT * FROM computed_bootstrap WHERE scope = 'all'",
    # the view's order leaves points of equal counts in any order, and the scatter draws them in
    # its order: ordered fully, the same lake draws the same figure
    "attractor_counts": """SELECT * FROM attractor_counts
                           ORDER BY model, suite, task, category, prompt_style, gold_value, n DESC, predicted_value,
                                    predicted""",
    "attractors": """SELECT model, suite, task, category, prompt_style, gold, n_scored, n_correct,
                            n_wrong, n_unparsable, n_truncated, n_error, accuracy, top_wrong, top_wrong_share,
                            n_50, share_50, n_100, share_100
                     FROM attractors""",
    "breaking": "SELECT * FROM breaking_points(threshold := ?)",
    "mcnemar": "SELECT * FROM mcnemar_pairs WHERE n_pairs > 0 ORDER BY p_holm, p_value",
    "model_pairs": "SELECT * FROM model_pairs WHERE n_pairs > 0 ORDER BY p_holm, p_value",
    "associativity": "SELECT * FROM associativity_calls",
    "regression": "SELECT * FROM computed_regression WHERE scope = 'all'",
    "lenient": "SELECT * FROM lenient_accuracy_by_bin",
    "cost": """SELECT run_id, model, n_responses, n_ok, n_error, prompt_tokens, completion_tokens,
                      cost_usd, n_unpriced FROM cost_by_run ORDER BY last_at DESC, model""",
}


def load(con, threshold: float) -> dict[str, pl.DataFrame]:
    """Every frame of :data:`QUERIES`, read from the metric views on ``con`` (the report's own,
    :func:`connect`: one snapshot of the lake for every frame), taking first what they share once."""
    snapshot_intermediates(con)
    return {name: _frame(con, sql, [threshold] if name == "breaking" else None) for name, sql in QUERIES.items()}
