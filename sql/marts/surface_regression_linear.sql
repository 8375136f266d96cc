-- surface_regression_linear: one row per model and suite.
-- depends_on: trial_scores

-- Linear probability fits of correctness (1 correct, 0 wrong or unparsable; errors left out) on
-- each surface feature alone, per model and suite, for ad-hoc looks: slope, intercept and R².
-- The inferential version is the logistic regression of tasks/analysis/stats.py (view computed_regression).
CREATE OR REPLACE VIEW surface_regression_linear AS
WITH scored AS (
    SELECT model, suite, status, n_tokens, symbol_density, n_numbers,
           CASE WHEN status = 'correct' THEN 1.0 ELSE 0.0 END AS y
    FROM trial_scores
)
SELECT
    model, suite,
    unnest(status_counts(status)),
    regr_slope(y, n_tokens) FILTER (WHERE status <> 'error') AS slope_n_tokens,
    regr_intercept(y, n_tokens) FILTER (WHERE status <> 'error') AS intercept_n_tokens,
    regr_r2(y, n_tokens) FILTER (WHERE status <> 'error') AS r2_n_tokens,
    regr_slope(y, symbol_density) FILTER (WHERE status <> 'error') AS slope_symbol_density,
    regr_intercept(y, symbol_density) FILTER (WHERE status <> 'error') AS intercept_symbol_density,
    regr_r2(y, symbol_density) FILTER (WHERE status <> 'error') AS r2_symbol_density,
    regr_slope(y, n_numbers) FILTER (WHERE status <> 'error') AS slope_n_numbers,
    regr_intercept(y, n_numbers) FILTER (WHERE status <> 'error') AS intercept_n_numbers,
    regr_r2(y, n_numbers) FILTER (WHERE status <> 'error') AS r2_n_numbers
FROM scored
GROUP BY model, suite
ORDER BY model, suite;
