-- Macros: whether two answers of one family unit are the same answer, for Consistency@k
-- (intermediate/family_answer_pairs.sql, intermediate/family_units_over.sql).

-- Two correct answers are the same (both agree with the family's one gold, even when written at
-- different precisions: 54.7356 and 54.74 against 54.74); a correct and a not correct one are
-- not; two not correct ones are when their answer keys are equal, and an unparsable answer (key
-- NULL) equals nothing. NULL when either side is an error.
CREATE OR REPLACE MACRO same_answer(status_a, status_b, correct_a, correct_b, key_a, key_b) AS
    CASE
        WHEN status_a = 'error' OR status_b = 'error' THEN NULL
        WHEN correct_a AND correct_b THEN true
        WHEN correct_a OR correct_b THEN false
        ELSE coalesce(key_a = key_b, false)
    END;
