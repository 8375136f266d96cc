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
  replacement as many times as there are families by ``scipy.stats.bootstrap`` (``paired``: one
  draw indexes every per-family array), so each estimate is a ratio of sums of the drawn
  families' numerators and denominators. The interval is the percentile interval of the
  resampled estimates. A gap resamples families once and recomputes both accuracies on the same
  resample before taking the difference, so the interval measures the reported gap; nothing is
  rounded before a difference. Resamples in which an estimate is undefined (no scored trial
  drawn) are left out and counted (``n_valid_resamples``). Each estimate gets its own random
  stream derived from ``seed`` and the estimate's key, so its interval does not depend on what
  else was computed.
- Consistency is the SQL ``consistent`` flag of ``family_units_over`` (canonical answers stored
  with the parses, see ``sql/intermediate/family_units.sql``); the bootstrap only resamples it.
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
import itertools
import json
import uuid
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import polars as pl

from tasks.lake.store import connect, now_utc, query, sql_files, write_rows

# scipy and statsmodels (more than a second to import) are imported where they compute, so that
# a report whose statistics are current (stored_computation) never loads them.

REGRESSION_FEATURES = ("n_tokens", "symbol_density", "n_numbers")
POOLED = "(all)"
ALL_SCOPE = "all"

# ---------------------------------------------------------------------------------------------
# Bootstrap


def estimate_rng(seed: int, key: Sequence[Any]) -> np.random.Generator:
    """A random stream for one estimate: a function of ``seed`` and the estimate's key only."""
    # A missing key part hashes as "nan", as it always has, so stored intervals keep their stream.
    digest = hashlib.sha256(json.dumps(["nan" if k is None else str(k) for k in key]).encode("utf-8")).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "big")])


def ratio(numerators: np.ndarray, denominators: np.ndarray, axis: int = -1) -> np.ndarray:
    """``sum(numerators) / sum(denominators)`` along ``axis``; NaN where the denominators sum to 0
    (no scored trial drawn: the estimate is undefined)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum(numerators, axis=axis) / np.sum(denominators, axis=axis)


def gap(numerators_a: np.ndarray, denominators_a: np.ndarray, numerators_b: np.ndarray,
        denominators_b: np.ndarray, axis: int = -1) -> np.ndarray:
    """``ratio(a) − ratio(b)``; NaN where either is undefined."""
    return ratio(numerators_a, denominators_a, axis) - ratio(numerators_b, denominators_b, axis)


# Resampled index cells per batch (resamples × families): bounds the memory of one bootstrap
# (a few arrays of this many float64) however many families an estimate has.
_BATCH_CELLS = 1 << 20


def family_bootstrap(statistic: Callable[..., np.ndarray], per_family: Sequence[np.ndarray], resamples: int,
                     rng: np.random.Generator, level: float) -> tuple[float | None, float | None, int]:
    """The percentile interval of ``statistic`` over ``resamples`` resamples of families, and how
    many resamples it was defined in.

    ``per_family`` are 1-D arrays with one entry per family (numerators, denominators);
    ``statistic(*arrays, axis=-1)`` is vectorized and NaN where undefined. Each resample draws as
    many families as there are, with replacement, and indexes every array with the same draw
    (``scipy.stats.bootstrap`` with ``paired=True``), so a statistic of several arrays (a gap) is
    recomputed on one draw.
    """
    from scipy.stats import DegenerateDataWarning, bootstrap, quantile

    n = per_family[0].shape[0]
    if n < 2:  # scipy wants two observations; one family resamples to itself every time
        value = float(statistic(*per_family, axis=-1))
        return (None, None, 0) if np.isnan(value) else (value, value, resamples)
    with warnings.catch_warnings():
        # With undefined resamples scipy's interval is NaN (and it warns so); the interval is then
        # taken below from the defined part of its bootstrap distribution.
        warnings.simplefilter("ignore", DegenerateDataWarning)
        result = bootstrap(per_family, statistic, n_resamples=resamples, batch=max(1, _BATCH_CELLS // n),
                           vectorized=True, paired=True, confidence_level=level, method="percentile", rng=rng)
    distribution = result.bootstrap_distribution
    valid = int(np.count_nonzero(~np.isnan(distribution)))
    if valid == 0:
        return None, None, 0
    if valid == distribution.size:
        return float(result.confidence_interval.low), float(result.confidence_interval.high), valid
    # scipy's quantile propagates NaN: the undefined resamples are left out, as documented, and
    # the same percentile interval (linear interpolation) is taken over the defined ones.
    tail = (1.0 - level) / 2
    lo, hi = quantile(distribution, [tail, 1.0 - tail], nan_policy="omit")
    return float(lo), float(hi), valid


def _status_counts(frame: pl.DataFrame) -> dict[str, int]:
    status = frame["status"]
    return {
        "n_scored": int((status != "error").sum()), "n_correct": int((status == "correct").sum()),
        "n_wrong": int((status == "wrong").sum()), "n_unparsable": int((status == "unparsable").sum()),
        "n_error": int((status == "error").sum()),
    }


def _groups(frame: pl.DataFrame, keys: list[str]) -> Iterable[tuple[tuple, pl.DataFrame]]:
    """(key, rows) per distinct ``keys``, in key order with missing values last."""
    parts = frame.partition_by(keys, as_dict=True, maintain_order=True)
    for key in frame.select(keys).unique().sort(keys, nulls_last=True).iter_rows():
        yield key, parts[key]


def _per_family(frame: pl.DataFrame, variants: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Correct and scored counts per family (rows, by family id) and variant (columns), families
    with a score. The fixed row order makes a seed give the same family draws."""
    columns = []
    for j, variant in enumerate(variants):
        in_variant = pl.col("variant") == variant
        columns += [(in_variant & (pl.col("status") == "correct")).sum().alias(f"num{j}"),
                    in_variant.sum().alias(f"den{j}")]
    counts = frame.filter(pl.col("status") != "error").group_by("family_id").agg(columns).sort("family_id")
    return (counts.select(f"num{j}" for j in range(len(variants))).to_numpy().astype(float),
            counts.select(f"den{j}" for j in range(len(variants))).to_numpy().astype(float))


def accuracy_intervals(trials: pl.DataFrame, resamples: int, seed: int, level: float) -> list[dict[str, Any]]:
    """Bootstrap rows (metric ``accuracy``) per (model, suite, task, variant, prompt style, bin)."""
    rows = []
    keys = ["model", "suite", "task", "variant", "prompt_style", "bin"]
    for key, cell in _groups(trials, keys):
        counts = _status_counts(cell)
        row = dict(zip(keys, key), metric="accuracy", bin_lo=int(cell["bin_lo"].min()), **counts)
        num, den = _per_family(cell, [key[3]])
        row["n_families"] = int((den[:, 0] > 0).sum())
        row["n_units"] = counts["n_scored"]
        if counts["n_scored"]:
            row["estimate"] = counts["n_correct"] / counts["n_scored"]
            keep = den[:, 0] > 0
            row["ci_lo"], row["ci_hi"], row["n_valid_resamples"] = family_bootstrap(
                ratio, [num[keep, 0], den[keep, 0]], resamples, estimate_rng(seed, ("accuracy", *key)), level)
        rows.append(row)
    return rows


def gap_intervals(trials: pl.DataFrame, variant_order: Sequence[str], resamples: int, seed: int,
                  level: float) -> list[dict[str, Any]]:
    """Bootstrap rows (metric ``gap``) for each pair of variants of a (model, suite, task, prompt style).

    The gap is accuracy(variant) − accuracy(variant_b), all bins together; the pair is oriented
    by variant order. Each resample draws families once and recomputes both accuracies on it.
    """
    rows = []
    keys = ["model", "suite", "task", "prompt_style"]
    for key, group in _groups(trials, keys):
        variants = sort_variants(group["variant"].unique(), variant_order)
        for a, b in itertools.combinations(variants, 2):
            pair = group.filter(pl.col("variant").is_in([a, b]))
            num, den = _per_family(pair, [a, b])
            keep = den.sum(axis=1) > 0
            num, den = num[keep], den[keep]
            row = dict(zip(keys, key), metric="gap", variant=a, variant_b=b, n_families=int(keep.sum()),
                       **_status_counts(pair))
            row["n_units"] = row["n_scored"]
            if den[:, 0].sum() and den[:, 1].sum():
                row["estimate_a"] = num[:, 0].sum() / den[:, 0].sum()
                row["estimate_b"] = num[:, 1].sum() / den[:, 1].sum()
                row["estimate"] = row["estimate_a"] - row["estimate_b"]
                row["ci_lo"], row["ci_hi"], row["n_valid_resamples"] = family_bootstrap(
                    gap, [num[:, 0], den[:, 0], num[:, 1], den[:, 1]], resamples,
                    estimate_rng(seed, ("gap", *key, a, b)), level)
            rows.append(row)
    return rows


def invariance_intervals(units: pl.DataFrame, resamples: int, seed: int, level: float) -> list[dict[str, Any]]:
    """Bootstrap rows (metrics ``invariance`` and ``consistency``) per group of family units.

    ``units`` are rows of ``family_units_over()``. Groups are those of the ``invariance`` view,
    and each suite's groups pooled over tasks sharing a variant list (task and category ``(all)``).
    """
    rows = []
    for pooled in (False, True):
        frame = units.with_columns(task=pl.lit(POOLED), category=pl.lit(POOLED)) if pooled else units
        keys = ["model", "suite", "task", "category", "prompt_style", "variants_key"]
        for key, group in _groups(frame, keys):
            complete = group.filter(pl.col("complete"))
            base = dict(zip(keys[:-1], key[:-1]), variant=key[-1], k=int(group["k"][0]),
                        n_units=complete.height, n_excluded=int((~group["complete"]).sum()),
                        n_families=int(complete["family_id"].n_unique()),
                        n_scored=int(complete["n_scored"].sum()), n_correct=int(complete["n_correct"].sum()),
                        n_wrong=int(complete["n_wrong"].sum()), n_unparsable=int(complete["n_unparsable"].sum()),
                        n_error=int(group["n_error"].sum()))
            if complete.is_empty():
                rows += [dict(base, metric=m) for m in ("invariance", "consistency")]
                continue
            per_family = complete.group_by("family_id").agg(
                units=pl.len(), invariant=pl.col("invariant").sum(), consistent=pl.col("consistent").sum()
            ).sort("family_id")  # a fixed family order, so a seed gives the same draws
            den = per_family["units"].to_numpy().astype(float)
            for metric, column in (("invariance", "invariant"), ("consistency", "consistent")):
                num = per_family[column].to_numpy().astype(float)
                # both metrics share the group's stream: the same family draws, as one resampling
                lo, hi, valid = family_bootstrap(ratio, [num, den], resamples,
                                                 estimate_rng(seed, ("invariance", *key)), level)
                rows.append(dict(base, metric=metric, estimate=num.sum() / den.sum(),
                                 ci_lo=lo, ci_hi=hi, n_valid_resamples=valid))
    return rows


# ---------------------------------------------------------------------------------------------
# Logistic regression


def sort_variants(variants: Iterable[str], variant_order: Sequence[str]) -> list[str]:
    """Variants in the SQL ``variant_rank`` order: the conventional ones first, then by name."""
    order = {v: i for i, v in enumerate(variant_order)}
    return sorted(variants, key=lambda v: (order.get(v, len(order)), v))


def _full_rank_columns(columns: dict[str, np.ndarray]) -> tuple[list[str], list[str]]:
    """Names of the columns kept in order, each only when it is not a linear combination of the
    columns kept before it, and the names dropped. Columns are scaled to unit norm first so that
    the rank test does not depend on a feature's units."""
    kept: list[str] = []
    dropped: list[str] = []
    basis = np.empty((len(next(iter(columns.values()))), 0))
    for name, values in columns.items():
        v = values
        norm = np.linalg.norm(v)
        candidate = np.column_stack([basis, v / norm]) if norm > 0 else None
        if candidate is not None and np.linalg.matrix_rank(candidate) == candidate.shape[1]:
            basis = candidate
            kept.append(name)
        else:
            dropped.append(name)
    return kept, dropped


def design_matrix(frame: pl.DataFrame, reference_variant: str, reference_model: str | None,
                  reference_task: str | None = None) -> tuple[pl.DataFrame, list[str]]:
    """The regression's design: intercept, task dummies when ``reference_task`` is given (task
    fixed effects), variant dummies (treatment coding against ``reference_variant``), the surface
    features, and model dummies when ``reference_model`` is given.

    A column that is a linear combination of the ones before it carries no information of its
    own and is dropped (returned by name): a feature constant in the data (collinear with the
    intercept) or within every task (collinear with the task effects), a variant dummy of
    variants nested in tasks. Task dummies come before the rest, so what remains of a feature
    or a variant is its effect within tasks."""
    def dummy(column: str, level: str) -> np.ndarray:
        return (frame[column] == level).cast(pl.Float64).to_numpy()

    columns: dict[str, np.ndarray] = {"intercept": np.ones(frame.height)}
    if reference_task is not None:
        for level in sorted(set(frame["task"]) - {reference_task}):
            columns[f"task[{level}]"] = dummy("task", level)
    for level in sorted(set(frame["variant"]) - {reference_variant}):
        columns[f"variant[{level}]"] = dummy("variant", level)
    for feature in REGRESSION_FEATURES:
        columns[feature] = frame[feature].cast(pl.Float64).to_numpy()
    if reference_model is not None:
        for level in sorted(set(frame["model"]) - {reference_model}):
            columns[f"model[{level}]"] = dummy("model", level)
    kept, dropped = _full_rank_columns(columns)
    return pl.DataFrame({name: columns[name] for name in kept}), dropped


def fit_logit(y: np.ndarray, x: pl.DataFrame, level: float = 0.95) -> tuple[list[dict[str, Any]], str]:
    """Fit a logistic regression of the 0/1 outcomes ``y`` on the design ``x``; returns (rows per
    term, "") or ([], reason it could not be fitted)."""
    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import (
        ConvergenceWarning,
        HessianInversionWarning,
        PerfectSeparationError,
        PerfectSeparationWarning,
    )

    if np.unique(y).size < 2:
        return [], "one outcome class only (" + ("all correct" if y[0] == 1 else "none correct") + ")"
    if len(y) <= x.shape[1]:
        return [], f"too few observations ({len(y)}) for {x.shape[1]} parameters"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = sm.Logit(y, x.to_numpy()).fit(disp=0, maxiter=200)
        except PerfectSeparationError:
            return [], "perfect separation"
        except np.linalg.LinAlgError as exc:
            return [], f"singular matrix ({exc})"
    kinds = {type(w.message) for w in caught}
    if PerfectSeparationWarning in kinds:
        return [], "perfect separation"
    if not result.mle_retvals.get("converged", False) or ConvergenceWarning in kinds:
        return [], "did not converge"
    if HessianInversionWarning in kinds or not np.all(np.isfinite(result.bse)):
        return [], "non-finite standard errors (quasi-separation)"
    ci = result.conf_int(alpha=1.0 - level)
    rows = [
        {"term": term, "coef": float(result.params[i]), "std_err": float(result.bse[i]),
         "z": float(result.tvalues[i]), "p_value": float(result.pvalues[i]),
         "ci_lo": float(ci[i, 0]), "ci_hi": float(ci[i, 1]), "pseudo_r2": float(result.prsquared)}
        for i, term in enumerate(x.columns)
    ]
    return rows, ""


def regressions(trials: pl.DataFrame, variant_order: Sequence[str], level: float = 0.95) -> list[dict[str, Any]]:
    """Regression rows per suite (``fit``): ``per_model`` (one model, every task of the suite),
    ``pooled`` (every model, with model fixed effects), both with task fixed effects when the
    suite has several tasks, and then ``per_task`` (one model, one task) for each task."""
    rows = []
    for (suite,), suite_trials in _groups(trials.filter(pl.col("suite").is_not_null()), ["suite"]):
        models = sorted(suite_trials["model"].unique())
        tasks = sorted(suite_trials["task"].unique())
        reference_task = tasks[0] if len(tasks) > 1 else None
        fits = [(m, POOLED, "per_model", suite_trials.filter(pl.col("model") == m), None) for m in models]
        fits.append((POOLED, POOLED, "pooled", suite_trials, models[0]))
        if len(tasks) > 1:
            fits += [(m, t, "per_task", suite_trials.filter((pl.col("model") == m) & (pl.col("task") == t)), None)
                     for m in models for t in tasks]
        for model, task, fit, frame, reference_model in fits:
            data = frame.filter(pl.col("status") != "error")
            task_effects = reference_task if task == POOLED else None
            base = {"suite": suite, "model": model, "task": task, "fit": fit, "n": data.height,
                    "n_correct": int((data["status"] == "correct").sum()),
                    "n_unparsable": int((data["status"] == "unparsable").sum()),
                    "n_error": int((frame["status"] == "error").sum()), "reference_model": reference_model,
                    "reference_task": task_effects}
            if fit == "pooled" and len(models) < 2:
                rows.append(dict(base, status="skipped", reason="one model only: nothing to pool"))
                continue
            if data.is_empty():
                rows.append(dict(base, status="skipped", reason="no scored trials"))
                continue
            reference = sort_variants(data["variant"].unique(), variant_order)[0]
            x, dropped = design_matrix(data, reference, reference_model, task_effects)
            formula = ("correct ~ C(variant) + " + " + ".join(REGRESSION_FEATURES)
                       + (" + C(task)" if task_effects else "") + (" + C(model)" if reference_model else ""))
            base.update(formula=formula, reference_variant=reference, dropped=",".join(dropped))
            y = (data["status"] == "correct").cast(pl.Float64).to_numpy()
            terms, reason = fit_logit(y, x, level)
            if reason:
                rows.append(dict(base, status="skipped", reason=reason))
            else:
                rows += [dict(base, status="ok", reason="", **t) for t in terms]
    return rows


# ---------------------------------------------------------------------------------------------
# Orchestration


def _scope_filter(run_id: str | None) -> tuple[str, list[Any]]:
    if run_id is None:
        return "", []
    return "WHERE trial_id IN (SELECT trial_id FROM run_trials WHERE run_id = ?)", [run_id]


def load_trials(con, run_id: str | None) -> pl.DataFrame:
    """Every scored trial (errors included) of the scope, with its family, bin and features."""
    where, params = _scope_filter(run_id)
    return con.sql(
        f"""SELECT model, suite, task, variant, prompt_style, bin, bin_lo, family_id, status,
                   {", ".join(REGRESSION_FEATURES)}
            FROM trial_scores {where}""", params=params).pl()


def load_units(con, run_id: str | None) -> pl.DataFrame:
    """Family units over all variants present (``family_units_over``), with a hashable variant key."""
    units = con.sql("SELECT * FROM family_units_over(for_run := ?)", params=[run_id]).pl()
    return units.with_columns(variants_key=pl.col("variants").list.join(","))


# The lake tables that trial_scores and family_units_over read.
INPUT_TABLES = ("items", "requests", "parses", "scores")


def inputs_digest(con) -> str:
    """The sha256 of what the statistics read: the number of rows of each of INPUT_TABLES and
    their latest ``created_at`` (the lake is append-only: a row once written stays, and a
    compaction that merges files keeps every row, so the same counts mean the same rows), the SQL
    that derives the trials and this module's code. Nothing in it depends on where the lake
    is, so a copied or moved warehouse keeps its digest."""
    counts = [con.execute(f"SELECT count(*), max(created_at) FROM raw_{table}").fetchone() for table in INPUT_TABLES]
    digest = hashlib.sha256(repr(counts).encode("utf-8"))
    for path in [*sql_files(), Path(__file__)]:
        digest.update(path.read_bytes())
    return digest.hexdigest()


# The views inputs_digest reads, for connections that create only what they read.
_DIGEST_VIEWS = " ".join(f"raw_{table}" for table in INPUT_TABLES)


def stored_computation(lake: str, resamples: int, seed: int, level: float = 0.95) -> str | None:
    """The id of the latest computation of scope ``all`` when it is what :func:`compute_stats`
    would compute now: the same settings, its regressions stored, and nothing it read changed
    since (:func:`inputs_digest`); None otherwise."""
    con = connect(lake, f"computed_bootstrap computed_regression {_DIGEST_VIEWS}")
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


def compute_stats(lake: str, run_id: str | None = None, resamples: int = 1000, seed: int = 0,
                  level: float = 0.95) -> dict[str, Any]:
    """Compute every statistic over the scores of ``run_id`` (None: all runs) and append them.

    Returns a summary: the computation id and scope, the rows written per table, and the
    regressions that were skipped with their reasons.
    """
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    con = connect(lake, f"trial_scores family_units_over variant_order {_DIGEST_VIEWS}")
    try:
        # Counted before the data is read: a row written meanwhile changes the digest later, so a
        # computation is never taken for current when it missed something.
        inputs = inputs_digest(con)
        variant_order = query(con, "SELECT variant_order() AS v")[0]["v"]
        trials = load_trials(con, run_id)
        units = load_units(con, run_id)
    finally:
        con.close()
    computation = {"computation_id": uuid.uuid4().hex, "computed_at": now_utc(), "scope": run_id or ALL_SCOPE}
    boot_meta = {"resamples": resamples, "seed": seed, "level": level, "inputs_sha256": inputs}
    bootstrap = [
        {**computation, **boot_meta, **row}
        for row in accuracy_intervals(trials, resamples, seed, level)
        + gap_intervals(trials, variant_order, resamples, seed, level)
        + invariance_intervals(units, resamples, seed, level)
    ]
    regression = [{**computation, **row} for row in regressions(trials, variant_order, level)]
    write_rows(lake, "computed_bootstrap", bootstrap)
    write_rows(lake, "computed_regression", regression)
    return {
        **computation, "bootstrap_rows": len(bootstrap), "regression_rows": len(regression),
        "skipped_regressions": [
            {"suite": r["suite"], "model": r["model"], "reason": r["reason"]} for r in regression if r["status"] == "skipped"
        ],
    }
