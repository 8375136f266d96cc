-- family_answer_pairs: one row per family unit and pair of its variants.
-- depends_on: family_trials

-- Pairs of answers of one family unit (intermediate/family_trials.sql; variant_a ranked before
-- variant_b), with whether they are the same answer (macro same_answer, sql/macros/answers.sql;
-- NULL when either side is an error).
-- Everything here is stored at parse and score time, so the verdict is known right after any
-- sweep, import or rescore.
CREATE OR REPLACE VIEW family_answer_pairs AS
SELECT
    unnest(a.family_unit),
    a.variant AS variant_a, b.variant AS variant_b, a.trial_id AS trial_id_a, b.trial_id AS trial_id_b, a.answer_type,
    a.status AS status_a, b.status AS status_b, a.is_correct AS correct_a, b.is_correct AS correct_b,
    a.predicted AS predicted_a, b.predicted AS predicted_b,
    same_answer(a.status, b.status, a.is_correct, b.is_correct, a.answer_key, b.answer_key) AS same_answer
FROM family_trials a
JOIN family_trials b
  ON a.family_unit = b.family_unit AND (a.variant_rank, a.variant) < (b.variant_rank, b.variant);
