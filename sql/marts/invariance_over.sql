-- invariance_over(...): one row per model, suite, task, category, prompt style and variant set.
-- depends_on: family_units_over

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
CREATE OR REPLACE MACRO invariance_over(variant_list := NULL, pool_tasks := false, for_run := NULL) AS TABLE
SELECT
    model, suite,
    CASE WHEN pool_tasks THEN '(all)' ELSE task END AS task,
    CASE WHEN pool_tasks THEN '(all)' ELSE category END AS category,
    prompt_style, k, variants,
    count(*) AS n_units,
    count(*) FILTER (WHERE complete) AS n_complete,
    count(*) FILTER (WHERE NOT complete) AS n_excluded,
    count(*) FILTER (WHERE NOT complete AND n_error > 0) AS n_excluded_error,
    count(DISTINCT family_id) FILTER (WHERE complete) AS n_families,
    CAST(coalesce(sum(n_scored) FILTER (WHERE complete), 0) AS BIGINT) AS n_scored,
    CAST(coalesce(sum(n_correct) FILTER (WHERE complete), 0) AS BIGINT) AS n_correct,
    CAST(coalesce(sum(n_wrong) FILTER (WHERE complete), 0) AS BIGINT) AS n_wrong,
    CAST(coalesce(sum(n_unparsable) FILTER (WHERE complete), 0) AS BIGINT) AS n_unparsable,
    CAST(coalesce(sum(n_truncated) FILTER (WHERE complete), 0) AS BIGINT) AS n_truncated,
    CAST(sum(n_error) AS BIGINT) AS n_error,
    count(*) FILTER (WHERE invariant) AS n_invariant,
    count(*) FILTER (WHERE consistent) AS n_consistent,
    CASE WHEN count(*) FILTER (WHERE complete) > 0
         THEN count(*) FILTER (WHERE invariant) / count(*) FILTER (WHERE complete) END AS invariance_at_k,
    CASE WHEN count(*) FILTER (WHERE complete) > 0
         THEN count(*) FILTER (WHERE consistent) / count(*) FILTER (WHERE complete) END AS consistency_at_k
FROM family_units_over(variant_list := variant_list, for_run := for_run)
GROUP BY ALL
ORDER BY model, suite, task, category, prompt_style, k;
