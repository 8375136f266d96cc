-- family_unit_rows(...): one row per family unit (intermediate/family_trials.sql) with its answers, over a variant set.
-- The per-unit work of family_units (stored, every variant) and of family_units_over with a variant
-- list or a run.
-- depends_on: family_trials, run_trials

-- The trials of each unit among the variants of `variant_list` (every variant when NULL), from
-- every run or only `for_run`'s. Per unit: its fields (family_unit's, unnested), the outcome
-- counts (macro status_counts), the variants it has a trial on (variants, in variant_rank then
-- name order, with each one's status and is_correct in statuses / corrects), the variants with a
-- scored (non-error) answer in the order of `variant_list` (else variant_rank then name) with
-- pattern (C correct, W not correct) and answers (predicted) in that order, and answers_agree:
-- every two scored answers are the same answer (macro same_answer: all correct, or none correct
-- and all with one answer key), true with fewer than two.
CREATE OR REPLACE MACRO family_unit_rows(variant_list := NULL, for_run := NULL) AS TABLE
WITH ft AS (
    SELECT * FROM family_trials
    WHERE (variant_list IS NULL OR list_contains(variant_list, variant))
      AND (for_run IS NULL OR trial_id IN (SELECT trial_id FROM run_trials WHERE run_id = for_run))
),
-- One list of structs per unit sorted by its leading fields, which each column then reads; six
-- times cheaper than ORDER BY aggregates (1.6 s of CPU against 9.5 s at 1,000,000 trials).
units AS (
    SELECT
        family_unit,
        any_value(answer_type) AS answer_type,
        unnest(status_counts(status)),
        list_sort(list({'o': coalesce(list_position(variant_list, variant), variant_rank), 'v': variant,
                        'c': CASE WHEN status = 'correct' THEN 'C' ELSE 'W' END, 'p': predicted})
                  FILTER (WHERE status <> 'error')) AS answered,
        list_sort(list({'r': variant_rank, 'v': variant, 's': status, 'c': is_correct})) AS trials,
        count(answer_key) FILTER (WHERE status <> 'error') AS n_keyed,
        count(DISTINCT answer_key) FILTER (WHERE status <> 'error') AS n_keys
    FROM ft
    GROUP BY family_unit
)
SELECT
    unnest(family_unit), answer_type, n_scored, n_correct, n_wrong, n_unparsable, n_truncated, n_error,
    list_transform(trials, lambda t: t.v) AS variants,
    list_transform(trials, lambda t: t.s) AS statuses,
    list_transform(trials, lambda t: t.c) AS corrects,
    list_transform(answered, lambda a: a.v) AS scored_variants,
    array_to_string(list_transform(answered, lambda a: a.c), '') AS pattern,
    list_transform(answered, lambda a: a.p) AS answers,
    n_scored < 2 OR n_correct = n_scored OR (n_correct = 0 AND n_keyed = n_scored AND n_keys = 1) AS answers_agree
FROM units;
