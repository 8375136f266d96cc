"""What the report reads: one frame per query over the marts, from a connection that snapshots the
shared intermediate views once.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from tasks.lake.materialised import is_current

# The marts the report reads share intermediate views, and DuckDB derives a view again in every
# query that reads it: trial_scores sits under every metric, family_trials under the flip
# patterns, invariance and McNemar tests (through the counts of family units and questions, which a
# materialised lake reads from its tables: taken here too, so that they show the same state as
# the rest), paired_tests under both McNemar tables. At a million
# scored responses that repetition was most of the report's time (bench/PROFILE.md). So the
# report's own connection takes each of them once, in this order (each reads the ones before), as
# a temporary table of the same name: DuckDB looks names up in the temporary schema first, so
# every view above reads the snapshot. The definitions stay the views' own, and every table of
# one report sees the same state of the lake even while a sweep writes. The connection is the
# report's alone and is closed after load().
SNAPSHOT = ("items", "trial_scores", "family_trials", "family_units", "item_outcomes", "family_unit_counts",
            "unit_outcome_counts", "question_outcome_counts", "paired_tests")
# What only the stored counts of units and questions are derived from: while the lake's materialised
# tables are current no query of the report reads them (the family and paired marts read the counts),
# and copying them would cost more than the report (16,000,000 rows at 10,000,000 responses).
DERIVED_FROM = frozenset({"family_trials", "family_units", "item_outcomes"})


def snapshot_intermediates(con) -> None:
    """Materialise the shared views of :data:`SNAPSHOT` on ``con`` as same-named temporary tables
    (taken afresh when called again); those of :data:`DERIVED_FROM` only when the lake's
    materialised tables are not current, when the counts are derived from them."""
    for name in SNAPSHOT:  # an earlier snapshot would otherwise feed the new one
        con.execute(f"DROP TABLE IF EXISTS temp.{name}")
    current = is_current(con)
    for name in SNAPSHOT:
        if not (current and name in DERIVED_FROM):
            con.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM main.{name}")


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
    "attractor_counts": "SELECT * FROM attractor_counts",
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
    """Every frame of :data:`QUERIES`, read from the metric views."""
    snapshot_intermediates(con)
    return {name: _frame(con, sql, [threshold] if name == "breaking" else None) for name, sql in QUERIES.items()}
