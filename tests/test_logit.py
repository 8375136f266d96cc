"""The logistic regression fitted to counts per covariate pattern (tasks/analysis/logit.py) against
statsmodels' fit of one row per trial."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest


def test_grouped_fit_equals_statsmodels_on_one_row_per_trial():
    """Trials that share every covariate, fitted as counts per pattern, give statsmodels' fit of
    one row per trial: estimates, standard errors, p-values, interval and pseudo R²."""
    import statsmodels.api as sm

    from tasks.analysis.regression import design_matrix, fit_logit

    rng = np.random.default_rng(4)
    patterns = pl.DataFrame({
        "model": ["m1"] * 40, "task": ["t"] * 40, "variant": ["a", "b", "c", "d"] * 10,
        "n_tokens": rng.integers(10, 60, 40), "symbol_density": rng.uniform(0.0, 0.3, 40).round(3),
        "n_numbers": rng.integers(0, 6, 40), "n_scored": rng.integers(1, 30, 40)})
    p = 1 / (1 + np.exp(-(1.5 - 0.03 * patterns["n_tokens"].to_numpy())))
    patterns = patterns.with_columns(n_correct=pl.Series(rng.binomial(patterns["n_scored"].to_numpy(), p)))
    x, dropped = design_matrix(patterns, "a", None)
    terms, reason = fit_logit(patterns["n_correct"].to_numpy(), patterns["n_scored"].to_numpy(), x)
    assert reason == "" and dropped == []
    # one row per trial: each pattern repeated n_scored times, its first n_correct correct
    rows = np.repeat(x.to_numpy(), patterns["n_scored"].to_numpy(), axis=0)
    y = np.concatenate([np.arange(m) < s for s, m in zip(patterns["n_correct"], patterns["n_scored"])]).astype(float)
    direct = sm.Logit(y, rows).fit(disp=0, maxiter=200)
    ci = direct.conf_int()
    for i, term in enumerate(terms):
        assert term["coef"] == pytest.approx(direct.params[i], rel=1e-9, abs=1e-12)
        assert term["std_err"] == pytest.approx(direct.bse[i], rel=1e-9)
        assert term["p_value"] == pytest.approx(direct.pvalues[i], rel=1e-7, abs=1e-15)
        assert (term["ci_lo"], term["ci_hi"]) == pytest.approx((ci[i, 0], ci[i, 1]), rel=1e-9)
        assert term["pseudo_r2"] == pytest.approx(direct.prsquared, rel=1e-6)
