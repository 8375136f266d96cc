-- computed_bootstrap: one row per estimate (metric: accuracy, gap, invariance, consistency) of the
-- latest computation per scope, with its family-clustered percentile bootstrap interval.
-- Computed in Python by tasks/analysis/stats.py (compute_stats), as SQL cannot: each call is one
-- computation (computation_id) over one scope, 'all' (every stored score) or a run id.
-- depends_on: raw_computed_bootstrap

CREATE OR REPLACE VIEW computed_bootstrap AS
SELECT * FROM raw_computed_bootstrap
QUALIFY computation_id = first_value(computation_id) OVER (PARTITION BY scope ORDER BY computed_at DESC);
