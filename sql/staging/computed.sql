-- Staging: the tables computed in Python by tasks/analysis/stats.py (compute_stats), because SQL cannot
-- compute them: bootstrap intervals and logistic regressions. Each compute_stats call is one
-- computation (computation_id) over one scope: 'all' (every stored score) or a run id; the
-- unprefixed views keep the latest computation per scope.

CREATE OR REPLACE VIEW raw_computed_bootstrap AS
SELECT * FROM lake_table('computed_bootstrap');

CREATE OR REPLACE VIEW raw_computed_regression AS
SELECT * FROM lake_table('computed_regression');

-- computed_bootstrap: one row per estimate (metric: accuracy, gap, invariance, consistency) of the
-- latest computation per scope, with its family-clustered percentile bootstrap interval.
CREATE OR REPLACE VIEW computed_bootstrap AS
SELECT * EXCLUDE (day) FROM raw_computed_bootstrap
QUALIFY computation_id = first_value(computation_id) OVER (PARTITION BY scope ORDER BY computed_at DESC);

-- computed_regression: one row per term of each logistic regression fit per suite of the latest
-- computation per scope. fit says which: 'per_model' (one model, the suite's tasks pooled with
-- task fixed effects), 'pooled' (every model, model and task fixed effects), 'per_task' (one
-- model, one task; suites with several tasks only); task is '(all)' for fits that pool tasks. A
-- regression that could not be fitted is one row with status 'skipped' and its reason.
CREATE OR REPLACE VIEW computed_regression AS
SELECT * EXCLUDE (day) FROM raw_computed_regression
QUALIFY computation_id = first_value(computation_id) OVER (PARTITION BY scope ORDER BY computed_at DESC);
