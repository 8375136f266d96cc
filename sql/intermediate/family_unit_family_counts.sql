-- family_unit_family_counts(...): one row per model, suite, task, category, prompt style, variant set and family, with its family units counted (family_units_over, every variant present).
-- depends_on: family_units_over

-- What the family-clustered bootstrap of Invariance@k and Consistency@k resamples
-- (tasks/analysis/bootstrap.py): per family, its complete units (n_complete) and how many of them
-- are invariant and consistent, its incomplete units (n_excluded), the trial counts of its
-- complete units and the errors of all of them (as the invariance mart counts them).
CREATE OR REPLACE MACRO family_unit_family_counts(for_run := NULL) AS TABLE
SELECT model, suite, task, category, prompt_style, k, variants, family_id,
       count(*) FILTER (WHERE complete) AS n_complete,
       count(*) FILTER (WHERE NOT complete) AS n_excluded,
       count(*) FILTER (WHERE invariant) AS n_invariant,
       count(*) FILTER (WHERE consistent) AS n_consistent,
       CAST(coalesce(sum(n_scored) FILTER (WHERE complete), 0) AS BIGINT) AS n_scored,
       CAST(coalesce(sum(n_correct) FILTER (WHERE complete), 0) AS BIGINT) AS n_correct,
       CAST(coalesce(sum(n_wrong) FILTER (WHERE complete), 0) AS BIGINT) AS n_wrong,
       CAST(coalesce(sum(n_unparsable) FILTER (WHERE complete), 0) AS BIGINT) AS n_unparsable,
       CAST(coalesce(sum(n_truncated) FILTER (WHERE complete), 0) AS BIGINT) AS n_truncated,
       CAST(sum(n_error) AS BIGINT) AS n_error
FROM family_units_over(for_run := for_run)
GROUP BY model, suite, task, category, prompt_style, k, variants, family_id;
