-- computed_regression: one row per term of each logistic regression fit per suite of the latest
-- computation per scope. fit says which: 'per_model' (one model, the suite's tasks pooled with
-- task fixed effects), 'pooled' (every model, model and task fixed effects), 'per_task' (one
-- model, one task; suites with several tasks only); task is '(all)' for fits that pool tasks. A
-- regression that could not be fitted is one row with status 'skipped' and its reason.
-- Computed in Python by tasks/analysis/stats.py (compute_stats), as SQL cannot: each call is one
-- computation (computation_id) over one scope, 'all' (every stored score) or a run id.
-- depends_on: raw_computed_regression

CREATE OR REPLACE VIEW computed_regression AS
SELECT * FROM raw_computed_regression
QUALIFY computation_id = first_value(computation_id) OVER (PARTITION BY scope ORDER BY computed_at DESC);
