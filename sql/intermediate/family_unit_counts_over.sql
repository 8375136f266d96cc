-- family_unit_counts_over(...): one row per model, suite, task, category, prompt style and kind of family unit, with how many units are of that kind.
-- depends_on: family_units_over

-- The units of family_units_over (same arguments) counted together when they are alike in what
-- invariance and flip patterns count (marts/invariance_over.sql, marts/flip_patterns_over.sql):
-- their group and variant set (k, variants), complete, pattern, invariant, consistent and whether
-- they had an error, an unparsable or a truncated answer (with_error, with_unparsable,
-- with_truncated); n_units of them, with their trial counts summed (n_scored ... n_error). What is
-- not a sum of units is on each row of its group: n_families, the distinct families among the
-- complete units of the (model, suite, task, category, prompt style), and n_families_pooled, the
-- same over every task and category of the (model, suite, prompt style) with that variant set (a
-- family may in principle recur across tasks, so the pooled count is not a sum of the others).
CREATE OR REPLACE MACRO family_unit_counts_over(variant_list := NULL, for_run := NULL) AS TABLE
WITH units AS MATERIALIZED (
    -- only what is counted: the answers and the unit's own fields would be copied for nothing
    SELECT model, suite, task, category, prompt_style, k, variants, family_id, complete, pattern, invariant,
           consistent, n_scored, n_correct, n_wrong, n_unparsable, n_truncated, n_error
    FROM family_units_over(variant_list := variant_list, for_run := for_run)
),
families AS (
    SELECT model, suite, task, category, prompt_style,
           count(DISTINCT family_id) FILTER (WHERE complete) AS n_families
    FROM units
    GROUP BY ALL
),
pooled AS (
    SELECT model, suite, prompt_style, variants,
           count(DISTINCT family_id) FILTER (WHERE complete) AS n_families_pooled
    FROM units
    GROUP BY ALL
),
kinds AS (
    SELECT model, suite, task, category, prompt_style, k, variants, complete, pattern, invariant, consistent,
           n_error > 0 AS with_error, n_unparsable > 0 AS with_unparsable, n_truncated > 0 AS with_truncated,
           count(*) AS n_units,
           unnest(summed_status_counts(n_scored, n_correct, n_wrong, n_unparsable, n_truncated, n_error))
    FROM units
    GROUP BY model, suite, task, category, prompt_style, k, variants, complete, pattern, invariant, consistent,
             with_error, with_unparsable, with_truncated
)
SELECT kinds.*, families.n_families, pooled.n_families_pooled
FROM kinds
JOIN families USING (model, suite, task, category, prompt_style)
JOIN pooled USING (model, suite, prompt_style, variants);
