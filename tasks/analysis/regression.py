"""Logistic regressions of correctness on variant, surface features and task (the choices are
documented in :mod:`tasks.analysis.stats`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import polars as pl

from tasks.analysis.bootstrap import POOLED, groups, sort_variants, summed_counts

REGRESSION_FEATURES = ("n_tokens", "symbol_density", "n_numbers")


def _full_rank_columns(columns: dict[str, np.ndarray], weights: np.ndarray) -> tuple[list[str], list[str]]:
    """Names of the columns kept in order, each only when it is not a linear combination of the
    columns kept before it, and the names dropped. Columns are scaled to unit norm first so that
    the rank test does not depend on a feature's units.

    A row stands for ``weights`` trials alike (a covariate pattern): scaled by their square root,
    the rows have the cross-products, so the singular values and norms, of one row per trial, and
    the rank tolerance is numpy's default for that many rows."""
    rows = float(weights.sum())
    root = np.sqrt(weights)
    kept: list[str] = []
    dropped: list[str] = []
    basis = np.empty((len(weights), 0))
    for name, values in columns.items():
        v = values * root
        norm = np.linalg.norm(v)
        candidate = np.column_stack([basis, v / norm]) if norm > 0 else None
        if candidate is not None and _rank(candidate, rows) == candidate.shape[1]:
            basis = candidate
            kept.append(name)
        else:
            dropped.append(name)
    return kept, dropped


def _rank(matrix: np.ndarray, rows: float) -> int:
    """numpy.linalg.matrix_rank of a matrix of ``rows`` rows whose cross-products are ``matrix``'s."""
    singular = np.linalg.svd(matrix, compute_uv=False)
    return int(np.count_nonzero(singular > singular.max() * max(rows, matrix.shape[1]) * np.finfo(float).eps))


def design_matrix(frame: pl.DataFrame, reference_variant: str, reference_model: str | None,
                  reference_task: str | None = None) -> tuple[pl.DataFrame, list[str]]:
    """The regression's design, one row per covariate pattern of ``frame`` (rows of
    ``feature_outcome_counts``, each standing for its ``n_scored`` trials): intercept, task dummies
    when ``reference_task`` is given (task fixed effects), variant dummies (treatment coding
    against ``reference_variant``), the surface features, and model dummies when
    ``reference_model`` is given.

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
    kept, dropped = _full_rank_columns(columns, frame["n_scored"].cast(pl.Float64).to_numpy())
    return pl.DataFrame({name: columns[name] for name in kept}), dropped


def fit_logit(correct: np.ndarray, scored: np.ndarray, x: pl.DataFrame,
              level: float = 0.95) -> tuple[list[dict[str, Any]], str]:
    """Fit a logistic regression of ``correct`` of ``scored`` trials per row of the design ``x``
    (:func:`tasks.analysis.logit.fit_grouped_logit`); returns (rows per term, "") or ([], reason
    it could not be fitted)."""
    from scipy.stats import norm

    from tasks.analysis.logit import fit_grouped_logit

    n = int(scored.sum())
    if correct.sum() in (0, n):
        return [], "one outcome class only (" + ("all correct" if correct.sum() == n else "none correct") + ")"
    if n <= x.shape[1]:
        return [], f"too few observations ({n}) for {x.shape[1]} parameters"
    try:
        fit = fit_grouped_logit(x.to_numpy(), correct, scored)
    except np.linalg.LinAlgError as exc:
        return [], f"singular matrix ({exc})"
    if fit.perfect:
        return [], "perfect separation"
    if not fit.converged:
        return [], "did not converge"
    bse = fit.bse
    if not np.all(np.isfinite(bse)):
        return [], "non-finite standard errors (quasi-separation)"
    z = fit.params / bse
    p_values = 2 * norm.sf(np.abs(z))
    half = norm.ppf(1 - (1.0 - level) / 2) * bse
    return [
        {"term": term, "coef": float(fit.params[i]), "std_err": float(bse[i]), "z": float(z[i]),
         "p_value": float(p_values[i]), "ci_lo": float(fit.params[i] - half[i]), "ci_hi": float(fit.params[i] + half[i]),
         "pseudo_r2": float(fit.prsquared)}
        for i, term in enumerate(x.columns)
    ], ""


def regressions(patterns: pl.DataFrame, variant_order: Sequence[str], level: float = 0.95) -> list[dict[str, Any]]:
    """Regression rows per suite (``fit``): ``per_model`` (one model, every task of the suite),
    ``pooled`` (every model, with model fixed effects), both with task fixed effects when the
    suite has several tasks, and then ``per_task`` (one model, one task) for each task.
    ``patterns`` are the rows of ``feature_outcome_counts`` (trials counted per covariate pattern)."""
    rows = []
    for (suite,), suite_rows in groups(patterns.filter(pl.col("suite").is_not_null()), ["suite"]):
        models = sorted(suite_rows["model"].unique())
        tasks = sorted(suite_rows["task"].unique())
        reference_task = tasks[0] if len(tasks) > 1 else None
        fits = [(m, POOLED, "per_model", suite_rows.filter(pl.col("model") == m), None) for m in models]
        fits.append((POOLED, POOLED, "pooled", suite_rows, models[0]))
        if len(tasks) > 1:
            fits += [(m, t, "per_task", suite_rows.filter((pl.col("model") == m) & (pl.col("task") == t)), None)
                     for m in models for t in tasks]
        for model, task, fit, frame, reference_model in fits:
            rows += _regression(suite, model, task, fit, frame, reference_model,
                                reference_task if task == POOLED else None, variant_order, level)
    return rows


def _regression(suite: str, model: str, task: str, fit: str, frame: pl.DataFrame, reference_model: str | None,
                task_effects: str | None, variant_order: Sequence[str], level: float) -> list[dict[str, Any]]:
    """The rows of one fit: its terms, or one ``skipped`` row with the reason."""
    counts = summed_counts(frame)
    base = {"suite": suite, "model": model, "task": task, "fit": fit, "n": counts["n_scored"],
            "n_correct": counts["n_correct"], "n_unparsable": counts["n_unparsable"],
            "n_truncated": counts["n_truncated"], "n_error": counts["n_error"],
            "reference_model": reference_model, "reference_task": task_effects}
    if fit == "pooled" and frame["model"].n_unique() < 2:
        return [dict(base, status="skipped", reason="one model only: nothing to pool")]
    data = frame.filter(pl.col("n_scored") > 0)  # errors are left out
    if data.is_empty():
        return [dict(base, status="skipped", reason="no scored trials")]
    reference = sort_variants(data["variant"].unique(), variant_order)[0]
    x, dropped = design_matrix(data, reference, reference_model, task_effects)
    formula = ("correct ~ C(variant) + " + " + ".join(REGRESSION_FEATURES)
               + (" + C(task)" if task_effects else "") + (" + C(model)" if reference_model else ""))
    base.update(formula=formula, reference_variant=reference, dropped=",".join(dropped))
    terms, reason = fit_logit(data["n_correct"].to_numpy(), data["n_scored"].to_numpy(), x, level)
    if reason:
        return [dict(base, status="skipped", reason=reason)]
    return [dict(base, status="ok", reason="", **t) for t in terms]
