-- family_units_over(...): one row per family unit (intermediate/family_trials.sql) over a variant set.
-- The base of invariance, consistency and flip patterns (marts/invariance_over.sql,
-- marts/flip_patterns_over.sql).
-- depends_on: family_trials, run_trials

-- Family units over a variant set V, one row per unit, from every run or only `for_run`'s trials.
-- V is `variant_list` (in that order) when given, else every variant present in the unit's
-- (model, suite, task, category, prompt_style) group, ordered by variant_rank then name. A unit is complete when it has a scored (non-error)
-- answer on every variant of V; only complete units count for invariance, consistency and flips.
-- pattern: one letter per variant of V in order, C correct, W not correct (wrong or unparsable).
-- consistent: all answers parsed and pairwise the same answer (macro same_answer).
-- Groups with a single variant have nothing to compare and are left out.
CREATE OR REPLACE MACRO family_units_over(variant_list := NULL, for_run := NULL) AS TABLE
-- ft is materialised: the pairs below join it with itself, and family_answer_pairs would derive
-- family_trials twice more.
WITH ft AS MATERIALIZED (
    SELECT * FROM family_trials
    WHERE (variant_list IS NULL OR list_contains(variant_list, variant))
      AND (for_run IS NULL OR trial_id IN (SELECT trial_id FROM run_trials WHERE run_id = for_run))
),
present AS (
    SELECT DISTINCT model, suite, task, category, prompt_style, variant, variant_rank FROM ft
),
variant_sets AS (
    SELECT model, suite, task, category, prompt_style,
           coalesce(variant_list, list(variant ORDER BY variant_rank, variant)) AS variants
    FROM present
    GROUP BY ALL
),
pair_verdicts AS (
    SELECT a.family_unit,
           count(*) FILTER (WHERE NOT same_answer(a.status, b.status, a.is_correct, b.is_correct,
                                                  a.answer_key, b.answer_key)) AS n_unequal
    FROM ft a
    JOIN ft b ON a.family_unit = b.family_unit AND (a.variant_rank, a.variant) < (b.variant_rank, b.variant)
    WHERE a.status <> 'error' AND b.status <> 'error'
    GROUP BY a.family_unit
),
-- The scored answers of a unit in variant order: one list of structs sorted by its leading fields
-- (order, variant), which each row then reads; six times cheaper than three ORDER BY aggregates
-- (measured at 1,000,000 trials: 1.6 s of CPU against 9.5 s), with the same lists.
scored AS (
    SELECT
        family_unit,
        any_value(answer_type) AS answer_type,
        unnest(status_counts(status)),
        list_sort(list({'o': coalesce(list_position(variant_list, variant), variant_rank), 'v': variant,
                        'c': CASE WHEN status = 'correct' THEN 'C' ELSE 'W' END, 'p': predicted})
                  FILTER (WHERE status <> 'error')) AS answered
    FROM ft
    GROUP BY family_unit
),
units AS (
    SELECT
        unnest(family_unit), family_unit, answer_type,
        n_scored, n_correct, n_wrong, n_unparsable, n_truncated, n_error,
        list_transform(answered, lambda a: a.v) AS scored_variants,
        array_to_string(list_transform(answered, lambda a: a.c), '') AS pattern,
        list_transform(answered, lambda a: a.p) AS answers
    FROM scored
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
        WHEN u.n_unparsable + u.n_truncated > 0 OR coalesce(pv.n_unequal, 0) > 0 THEN false
        ELSE true
    END AS consistent
FROM units u
JOIN variant_sets v USING (model, suite, task, category, prompt_style)
LEFT JOIN pair_verdicts pv USING (family_unit)
WHERE len(v.variants) >= 2;
