-- flip_patterns_by_suite: one row per model, suite, prompt style, variant set and pattern (tasks pooled).
-- depends_on: flip_patterns_over

CREATE OR REPLACE VIEW flip_patterns_by_suite AS
SELECT * FROM flip_patterns_over(pool_tasks := true);
