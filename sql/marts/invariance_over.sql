-- invariance_over(...): one row per model, suite, task, category, prompt style and variant set.
-- depends_on: family_unit_counts_of

-- Invariance@k and Consistency@k per (model, suite, task, category, prompt style) over a variant
-- set V of size k (family_units_over: V = variant_list, else every variant present). Only
-- complete units (a scored answer on every variant of V) count: invariance_at_k = share of them
-- correct on all k variants; consistency_at_k = share whose k parsed answers are all the same
-- answer (macro same_answer: equal canonical answers, math symbolically; correct answers all
-- agree with the gold), known as soon as the scores are stored. Units are (family, seed,
-- sample): repeats are pooled; n_families counts distinct families. n_excluded counts incomplete units (n_excluded_error of
-- them because of an error). Trial counts (n_scored ...) are over complete units, n_error over
-- all. pool_tasks := true pools the tasks and categories of a suite that share one variant list
-- (task and category read '(all)'), as GeoRepEval reports one row per model; for_run := '<run id>'
-- restricts to one run's trials.
-- Read from the units counted by kind (family_unit_counts_of: stored for every variant of every
-- run), so the counts are sums of theirs and n_families is their group's.
CREATE OR REPLACE MACRO invariance_over(variant_list := NULL, pool_tasks := false, for_run := NULL) AS TABLE
SELECT *,
    CASE WHEN n_complete > 0 THEN n_invariant / n_complete END AS invariance_at_k,
    CASE WHEN n_complete > 0 THEN n_consistent / n_complete END AS consistency_at_k
FROM (
    SELECT
        model, suite,
        CASE WHEN pool_tasks THEN '(all)' ELSE task END AS task,
        CASE WHEN pool_tasks THEN '(all)' ELSE category END AS category,
        prompt_style, k, variants,
        CAST(sum(n_units) AS BIGINT) AS n_units,
        CAST(coalesce(sum(n_units) FILTER (WHERE complete), 0) AS BIGINT) AS n_complete,
        CAST(coalesce(sum(n_units) FILTER (WHERE NOT complete), 0) AS BIGINT) AS n_excluded,
        CAST(coalesce(sum(n_units) FILTER (WHERE NOT complete AND with_error), 0) AS BIGINT) AS n_excluded_error,
        CASE WHEN pool_tasks THEN any_value(n_families_pooled) ELSE any_value(n_families) END AS n_families,
        CAST(coalesce(sum(n_scored) FILTER (WHERE complete), 0) AS BIGINT) AS n_scored,
        CAST(coalesce(sum(n_correct) FILTER (WHERE complete), 0) AS BIGINT) AS n_correct,
        CAST(coalesce(sum(n_wrong) FILTER (WHERE complete), 0) AS BIGINT) AS n_wrong,
        CAST(coalesce(sum(n_unparsable) FILTER (WHERE complete), 0) AS BIGINT) AS n_unparsable,
        CAST(coalesce(sum(n_truncated) FILTER (WHERE complete), 0) AS BIGINT) AS n_truncated,
        CAST(sum(n_error) AS BIGINT) AS n_error,
        CAST(coalesce(sum(n_units) FILTER (WHERE invariant), 0) AS BIGINT) AS n_invariant,
        CAST(coalesce(sum(n_units) FILTER (WHERE consistent), 0) AS BIGINT) AS n_consistent
    FROM family_unit_counts_of(variant_list := variant_list, for_run := for_run)
    GROUP BY ALL
)
ORDER BY model, suite, task, category, prompt_style, k;
