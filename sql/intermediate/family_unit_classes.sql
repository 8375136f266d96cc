-- family_unit_classes(...): one row per model, suite, task, category, prompt style, variant set and class of families (the same invariant, consistent and complete units), and the same per suite with tasks pooled (pooled true, task and category NULL), with its families counted and their unit counts summed, of the one (model, suite) part_model, part_suite.
-- depends_on: family_unit_family_counts

-- What the bootstrap of Invariance@k and Consistency@k resamples (tasks/analysis/bootstrap.py), by
-- class: both ratios are of sums of a family's invariant, consistent and complete units, so
-- families with the same three counts (c_invariant, c_consistent, c_complete) are interchangeable.
-- The pooled rows first sum each family's units over the tasks and categories of its suite (the
-- bootstrap names them "(all)").
CREATE OR REPLACE MACRO family_unit_classes(part_model, part_suite, for_run := NULL) AS TABLE
WITH per_family AS MATERIALIZED (
    SELECT * FROM family_unit_family_counts(for_run := for_run)
    WHERE model IS NOT DISTINCT FROM part_model AND suite IS NOT DISTINCT FROM part_suite
),
both_levels AS (
    SELECT false AS pooled, * FROM per_family
    UNION ALL BY NAME
    SELECT true AS pooled, model, suite, NULL AS task, NULL AS category, prompt_style, k, variants, family_id,
           CAST(sum(n_complete) AS BIGINT) AS n_complete, CAST(sum(n_excluded) AS BIGINT) AS n_excluded,
           CAST(sum(n_invariant) AS BIGINT) AS n_invariant, CAST(sum(n_consistent) AS BIGINT) AS n_consistent,
           unnest(summed_status_counts(n_scored, n_correct, n_wrong, n_unparsable, n_truncated, n_error))
    FROM per_family
    GROUP BY model, suite, prompt_style, k, variants, family_id
)
SELECT pooled, model, suite, task, category, prompt_style, k, variants,
       n_invariant AS c_invariant, n_consistent AS c_consistent, n_complete AS c_complete, count(*) AS n_families,
       CAST(sum(n_complete) AS BIGINT) AS n_complete, CAST(sum(n_excluded) AS BIGINT) AS n_excluded,
       CAST(sum(n_invariant) AS BIGINT) AS n_invariant, CAST(sum(n_consistent) AS BIGINT) AS n_consistent,
       unnest(summed_status_counts(n_scored, n_correct, n_wrong, n_unparsable, n_truncated, n_error))
FROM both_levels
GROUP BY pooled, model, suite, task, category, prompt_style, k, variants,
         both_levels.n_invariant, both_levels.n_consistent, both_levels.n_complete;
