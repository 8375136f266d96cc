-- family_units_over(...): one row per family unit (intermediate/family_trials.sql) over a variant set.
-- The base of invariance, consistency and flip patterns (marts/invariance_over.sql,
-- marts/flip_patterns_over.sql).
-- depends_on: family_units_of

-- Family units over a variant set V, one row per unit, from every run or only `for_run`'s trials.
-- V is `variant_list` (in that order) when given, else every variant present in the unit's
-- (model, suite, task, category, prompt_style) group, ordered by variant_rank then name. A unit is complete when it has a scored (non-error)
-- answer on every variant of V; only complete units count for invariance, consistency and flips.
-- pattern: one letter per variant of V in order, C correct, W not correct (wrong or unparsable).
-- consistent: all answers parsed and pairwise the same answer (macro same_answer).
-- Groups with a single variant have nothing to compare and are left out.
CREATE OR REPLACE MACRO family_units_over(variant_list := NULL, for_run := NULL) AS TABLE
WITH present AS (
    SELECT DISTINCT model, suite, task, category, prompt_style, unnest(variants) AS variant
    FROM (SELECT DISTINCT model, suite, task, category, prompt_style, variants
          FROM family_units_of(variant_list := variant_list, for_run := for_run))
),
variant_sets AS (
    SELECT model, suite, task, category, prompt_style,
           coalesce(variant_list, list(variant ORDER BY variant_rank(variant), variant)) AS variants
    FROM present
    GROUP BY ALL
)
SELECT
    u.model, u.suite, u.task, u.category, u.prompt_style, len(v.variants) AS k, v.variants,
    u.family_id, u.seed, u.sample_idx, u.answer_type,
    coalesce(u.scored_variants = v.variants, false) AS complete,
    u.n_scored, u.n_correct, u.n_wrong, u.n_unparsable, u.n_truncated, u.n_error,
    CASE WHEN u.scored_variants = v.variants THEN u.pattern END AS pattern,
    CASE WHEN u.scored_variants = v.variants THEN u.answers END AS answers,
    CASE WHEN u.scored_variants = v.variants THEN u.n_correct = len(v.variants) END AS invariant,
    CASE
        WHEN u.scored_variants IS DISTINCT FROM v.variants THEN NULL
        WHEN u.n_unparsable + u.n_truncated > 0 OR NOT u.answers_agree THEN false
        ELSE true
    END AS consistent
FROM family_units_of(variant_list := variant_list, for_run := for_run) u
JOIN variant_sets v USING (model, suite, task, category, prompt_style)
WHERE len(v.variants) >= 2;
