"""Logistic regressions of correctness on variant, surface features and task (the choices are
documented in :mod:`tasks.analysis.stats`).
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np
import polars as pl

from tasks.analysis.bootstrap import POOLED, groups, sort_variants, status_counts

REGRESSION_FEATURES = ("n_tokens", "symbol_density", "n_numbers")


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
    for (suite,), suite_trials in groups(trials.filter(pl.col("suite").is_not_null()), ["suite"]):
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
            counts = status_counts(frame)
            base = {"suite": suite, "model": model, "task": task, "fit": fit, "n": counts["n_scored"],
                    "n_correct": counts["n_correct"], "n_unparsable": counts["n_unparsable"],
                    "n_truncated": counts["n_truncated"], "n_error": counts["n_error"],
                    "reference_model": reference_model, "reference_task": task_effects}
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
