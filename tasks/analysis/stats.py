"""Statistics SQL cannot compute, over stored scores, written back to the lake as ``computed_*`` tables.

:func:`compute_stats` reads the scores of one run (or of every run) through the SQL views and
appends one *computation* (``computation_id``, ``scope`` = ``all`` or the run id) to:

- ``computed_bootstrap`` — family-clustered percentile bootstrap intervals (view
  ``computed_bootstrap``), one row per estimate, ``metric`` being
  ``accuracy`` per (model, suite, task, variant, prompt style, bin), the grain of
  ``accuracy_by_bin``; ``gap`` = accuracy(variant) − accuracy(variant_b) per (model, suite, task,
  prompt style) over all bins; ``invariance`` and ``consistency`` (Invariance@k, Consistency@k)
  per group of the ``invariance`` view, and pooled per suite (task and category ``(all)``).
- ``computed_regression`` — logistic regressions ``correct ~ C(variant) + n_tokens +
  symbol_density + n_numbers + C(task)`` per suite (view ``computed_regression``); ``fit`` says
  which: ``per_model`` (one model, the suite's tasks pooled with task fixed effects),
  ``pooled`` (every model, with model and task fixed effects), ``per_task`` (one model, one
  task, no task term; only for suites with several tasks).

Choices (documented here because the papers leave them open):

- Bootstrap: the resampled unit is the family (docs/metrics.md, Bootstrap intervals), drawn with
  replacement as many times as there are families, one draw for every per-family array (as
  ``scipy.stats.bootstrap`` with ``paired``), so each estimate is a ratio of sums of the drawn
  families' numerators and denominators. The draw is made by class (:mod:`tasks.analysis.bootstrap`):
  families with equal vectors are interchangeable, so a multinomial over the distinct vectors gives
  the same distribution as drawing families (not scipy's draws: intervals within Monte Carlo
  error). The interval is the percentile interval of the resampled estimates. A gap resamples families once and recomputes both accuracies on the same
  resample before taking the difference, so the interval measures the reported gap; nothing is
  rounded before a difference. Resamples in which an estimate is undefined (no scored trial
  drawn) are left out and counted (``n_valid_resamples``). Each estimate gets its own random
  stream derived from ``seed`` and the estimate's key, so its interval does not depend on what
  else was computed.
- Consistency is the SQL ``consistent`` flag of ``family_units_over`` (canonical answers stored
  with the parses, see ``sql/intermediate/family_units_over.sql``); the bootstrap only resamples it.
- The per-family and per-pattern counts are computed in SQL (:func:`load_patterns`, :func:`load_families`); the regressions
  are fitted to the trials counted per covariate pattern (:mod:`tasks.analysis.logit`), which
  gives the estimates of one row per trial; the bootstraps read their counts one (model, suite)
  at a time.
- Regression: ``correct`` is 1 for correct and 0 for wrong or unparsable; errors are left out.
  The reference variant is the first by the SQL ``variant_order()`` (``euclid`` when present),
  else by name; the reference model and the reference task are the first by name. A fit that
  pools tasks has task fixed effects, so a feature's coefficient measures its effect within
  tasks, not which task is harder (long prompts of a hard task would otherwise read as "length
  hurts"). A column that is a linear combination of the earlier ones (a feature constant in the
  data or within every task, a variant nested in tasks) is dropped and named in ``dropped``. A
  regression that cannot be fitted (one outcome class, too few observations, perfect
  separation, no convergence, non-finite standard errors) is stored as one ``skipped`` row with
  its reason; a per-task fit is tried for every (model, task), so "where the counts allow" is
  exactly the ``ok`` rows.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any, Iterator

import polars as pl

from tasks.analysis.bootstrap import (
    accuracy_intervals,
    family_cells,
    gap_intervals,
    invariance_intervals,
)
from tasks.analysis.regression import regressions
from tasks.lake.lake import Lake
from tasks.lake.sql import sql_files
from tasks.lake.views import query
from tasks.lake.writes import write_rows
from tasks.records import now_utc

# scipy (more than a second to import) is imported where it computes, so that a report whose
# statistics are current (stored_computation) never loads it.

ALL_SCOPE = "all"
# The code whose change changes the statistics: a stored computation is current only if it is the same.
_CODE = tuple(Path(__file__).with_name(name) for name in ("stats.py", "bootstrap.py", "regression.py", "logit.py"))


def load_patterns(con, run_id: str | None) -> pl.DataFrame:
    """The trials of the scope (every run, or ``run_id``'s) counted per covariate pattern
    (``feature_outcome_counts``), for the regressions, in a fixed order: the fits sum over the rows
    in their order, and a hash aggregate's order varies run to run (the last bits of the estimates
    with it)."""
    return con.sql("SELECT * FROM feature_outcome_counts(for_run := ?) ORDER BY ALL NULLS LAST", params=[run_id]).pl()


def load_families(con, run_id: str | None) -> Iterator[dict[str, pl.DataFrame]]:
    """What the bootstraps resample, counted in SQL over the scope's trials, one (model, suite) at
    a time (every estimate lies within one, and one at a time bounds the memory), as classes of
    families (families with the same counts, which a resample of sums cannot tell apart): a few
    hundred rows per (model, suite) where the families are hundreds of thousands at 10,000,000
    responses. ``cells`` (:func:`~tasks.analysis.bootstrap.family_cells` of
    ``family_cell_classes``: for accuracy and gaps), ``totals`` (``cell_outcome_counts``: the
    cells' outcome counts) and ``units`` (``family_unit_classes``: family units, with a hashable
    variant key)."""
    parts = con.sql("SELECT DISTINCT model, suite FROM scoped_trials(for_run := ?) ORDER BY ALL NULLS LAST",
                    params=[run_id]).fetchall()
    for model, suite in parts:
        def read(macro: str) -> pl.DataFrame:
            return con.sql(f"SELECT * FROM {macro}(?, ?, for_run := ?)", params=[model, suite, run_id]).pl()

        units = read("family_unit_classes")
        yield {"cells": family_cells(read("family_cell_classes")), "totals": read("cell_outcome_counts"),
               "units": units.with_columns(variants_key=pl.col("variants").list.join(","))}


def _intervals(con, run_id: str | None, variant_order: list[str], resamples: int, seed: int,
               level: float) -> list[dict[str, Any]]:
    """Every bootstrap row of the scope, (model, suite) after (model, suite)."""
    rows = []
    for part in load_families(con, run_id):
        rows += (accuracy_intervals(part["totals"], part["cells"], resamples, seed, level)
                 + gap_intervals(part["totals"], part["cells"], variant_order, resamples, seed, level)
                 + invariance_intervals(part["units"], resamples, seed, level))
    return rows


# The lake tables that the counts of load_patterns and load_families (trial_scores, family_units_over) read.
INPUT_TABLES = ("items", "requests", "parses", "scores")


def inputs_digest(con) -> str:
    """The sha256 of what the statistics read: the number of rows of each of INPUT_TABLES and
    their latest ``created_at`` (the lake is append-only: a row once written stays, and a
    compaction that merges files keeps every row, so the same counts mean the same rows), the SQL
    that derives the trials and this module's code. Nothing in it depends on where the lake
    is, so a copied or moved warehouse keeps its digest."""
    counts = [con.execute(f"SELECT count(*), max(created_at) FROM raw_{table}").fetchone() for table in INPUT_TABLES]
    digest = hashlib.sha256(repr(counts).encode("utf-8"))
    for path in [*sql_files(), *_CODE]:
        digest.update(path.read_bytes())
    return digest.hexdigest()


# The views inputs_digest reads, for connections that create only what they read.
_DIGEST_VIEWS = " ".join(f"raw_{table}" for table in INPUT_TABLES)


def stored_computation(lake: Lake, resamples: int, seed: int, level: float = 0.95) -> str | None:
    """The id of the latest computation of scope ``all`` when it is what :func:`compute_stats`
    would compute now: the same settings, its regressions stored, and nothing it read changed
    since (:func:`inputs_digest`); None otherwise."""
    con = lake.connect(f"computed_bootstrap computed_regression {_DIGEST_VIEWS}")
    try:
        rows = query(con, """
            SELECT DISTINCT computation_id, inputs_sha256, resamples, seed, level FROM computed_bootstrap
            WHERE scope = $all AND computation_id IN (SELECT computation_id FROM computed_regression WHERE scope = $all)""",
                     {"all": ALL_SCOPE})
        if len(rows) != 1 or (rows[0]["resamples"], rows[0]["seed"], rows[0]["level"]) != (resamples, seed, level):
            return None
        return rows[0]["computation_id"] if rows[0]["inputs_sha256"] == inputs_digest(con) else None
    finally:
        con.close()


def compute_stats(lake: Lake, run_id: str | None = None, resamples: int = 1000, seed: int = 0,
                  level: float = 0.95) -> dict[str, Any]:
    """Compute every statistic over the scores of ``run_id`` (None: all runs) and append them.

    Returns a summary: the computation id and scope, the rows written per table, and the
    regressions that were skipped with their reasons.
    """
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    con = lake.connect(f"scoped_trials family_cell_classes cell_outcome_counts feature_outcome_counts "
                       f"family_unit_classes variant_order {_DIGEST_VIEWS}")
    try:
        # Counted before the data is read: a row written meanwhile changes the digest later, so a
        # computation is never taken for current when it missed something.
        inputs = inputs_digest(con)
        variant_order = query(con, "SELECT variant_order() AS v")[0]["v"]
        patterns = load_patterns(con, run_id)
        intervals = _intervals(con, run_id, variant_order, resamples, seed, level)
    finally:
        con.close()
    computation = {"computation_id": uuid.uuid4().hex, "computed_at": now_utc(), "scope": run_id or ALL_SCOPE}
    boot_meta = {"resamples": resamples, "seed": seed, "level": level, "inputs_sha256": inputs}
    bootstrap = [{**computation, **boot_meta, **row} for row in intervals]
    regression = [{**computation, **row} for row in regressions(patterns, variant_order, level)]
    write_rows(lake, "computed_bootstrap", bootstrap)
    write_rows(lake, "computed_regression", regression)
    return {
        **computation, "bootstrap_rows": len(bootstrap), "regression_rows": len(regression),
        "skipped_regressions": [
            {"suite": r["suite"], "model": r["model"], "reason": r["reason"]} for r in regression if r["status"] == "skipped"
        ],
    }
