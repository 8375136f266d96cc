-- flip_patterns_over(...): one row per model, suite, task, category, prompt style, variant set and pattern.
-- depends_on: family_unit_counts_of

-- Flip patterns over an ordered variant set (the family units counted by kind,
-- family_unit_counts_of; geometry: euclid, coord, vector gives CCC ... WWW): per group, the number and share of complete units with each pattern
-- (C correct, W not correct), n_with_unparsable of them with an unparsable answer and n_with_truncated
-- with a truncated one (cut at the token limit before an answer). For k <= 4
-- every pattern is listed, absent ones with n = 0. Ordered by the number of W, then pattern.
CREATE OR REPLACE MACRO flip_patterns_over(variant_list := NULL, pool_tasks := false, for_run := NULL) AS TABLE
WITH units AS (
    SELECT * REPLACE (
        CASE WHEN pool_tasks THEN '(all)' ELSE task END AS task,
        CASE WHEN pool_tasks THEN '(all)' ELSE category END AS category)
    FROM family_unit_counts_of(variant_list := variant_list, for_run := for_run)
),
groups AS (
    SELECT model, suite, task, category, prompt_style, k, variants,
           CAST(coalesce(sum(n_units) FILTER (WHERE complete), 0) AS BIGINT) AS n_complete,
           CAST(coalesce(sum(n_units) FILTER (WHERE NOT complete), 0) AS BIGINT) AS n_excluded,
           CAST(sum(n_error) AS BIGINT) AS n_error
    FROM units
    GROUP BY ALL
),
observed AS (
    SELECT model, suite, task, category, prompt_style, variants, pattern,
           CAST(sum(n_units) AS BIGINT) AS n,
           CAST(coalesce(sum(n_units) FILTER (WHERE with_unparsable), 0) AS BIGINT) AS n_with_unparsable,
           CAST(coalesce(sum(n_units) FILTER (WHERE with_truncated), 0) AS BIGINT) AS n_with_truncated
    FROM units
    WHERE complete
    GROUP BY ALL
),
enumerated AS (
    SELECT model, suite, task, category, prompt_style, variants,
           array_to_string(list_transform(range(k), lambda i: CASE WHEN (p >> (k - 1 - i)) & 1 = 0 THEN 'C' ELSE 'W' END), '') AS pattern
    FROM (SELECT *, unnest(range(1 << k)) AS p FROM groups WHERE k <= 4)
),
patterns AS (
    SELECT model, suite, task, category, prompt_style, variants, pattern FROM enumerated
    UNION
    SELECT model, suite, task, category, prompt_style, variants, pattern FROM observed
)
SELECT
    g.model, g.suite, g.task, g.category, g.prompt_style, g.k, g.variants, pt.pattern,
    length(pt.pattern) - length(replace(pt.pattern, 'W', '')) AS n_not_correct,
    coalesce(o.n, 0) AS n,
    coalesce(o.n, 0) / g.n_complete AS share,
    coalesce(o.n_with_unparsable, 0) AS n_with_unparsable,
    coalesce(o.n_with_truncated, 0) AS n_with_truncated,
    g.n_complete, g.n_excluded, g.n_error
FROM groups g
JOIN patterns pt USING (model, suite, task, category, prompt_style, variants)
LEFT JOIN observed o USING (model, suite, task, category, prompt_style, variants, pattern)
WHERE g.n_complete > 0
ORDER BY g.model, g.suite, g.task, g.category, g.prompt_style, n_not_correct, pt.pattern;
