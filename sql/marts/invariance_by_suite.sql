-- invariance_by_suite: one row per model, suite, prompt style and variant set (tasks pooled).
-- depends_on: invariance_over

CREATE OR REPLACE VIEW invariance_by_suite AS
SELECT * FROM invariance_over(pool_tasks := true);
